"""A stand-in for the parts of vLLM 0.31 that ``vllm-local`` calls, for tests without a GPU.

Each class copies the signature of the vLLM class named beside it (vLLM 0.31.0, the version
the ``vllm`` extra pins; ``tests/backends/test_vllm_interfaces.py`` checks the copies against the
signatures recorded there, and against vLLM itself where it is installed). What happens behind
the signatures is a toy: a word-piece tokenizer, a Qwen-like chat template, and an engine that
emits one token per request per step for every running request, so requests join and leave the
batch as they come, as in vLLM's continuous batching. ``install(monkeypatch)`` puts these
under vLLM's module names, so the backend's own imports find them.

What the "model" answers is scripted: ``World.respond(prompt_text, sampling_params)`` returns
a :class:`Scripted` (the text, optionally the log-probabilities of its tokens).
"""

from __future__ import annotations

import asyncio
import base64
import importlib.machinery
import io
import json
import os
import re
import sys
import types
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image
from vllm_standin_types import (
    ENGINE_ARG_FIELDS,
    AsyncEngineArgs,
    ChatCompletionRequest,
    ChatParams,
    CompletionOutput,
    EngineDeadError,
    EngineGenerateError,
    GracefulHTTPError,
    Logprob,
    QueueOverflowError,
    RequestOutput,
    RequestOutputKind,
    SamplingParams,
    StructuredOutputsParams,
    TokenizeParams,
    VLLMError,
    VLLMValidationError,
)

# --- the toy model --------------------------------------------------------------------------

_PIECE = re.compile(r"<\|[^|]+\|>|</?think>|\w+|[^\w\s]|\s+")


class ToyTokenizer:
    """Word pieces, ids handed out as pieces are first seen."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.vocab: dict[str, int] = {}

    def id(self, piece: str) -> int:
        if piece not in self.vocab:
            self.vocab[piece] = len(self.pieces)
            self.pieces.append(piece)
        return self.vocab[piece]

    def encode(self, text: str) -> list[int]:
        return [self.id(p) for p in _PIECE.findall(text)]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)


def _image(url: str) -> Image.Image:
    head, _, data = url.partition(",")
    if not head.startswith("data:image/") or not head.endswith(";base64"):
        raise VLLMValidationError(f"not an image data URL: {head[:40]!r}")
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    image.load()
    return image


def constrain(text: str, so: StructuredOutputsParams) -> str:
    """What the toy model emits under a grammar: one of the ``choice`` strings (the one the
    text starts with, else the first: the grammar forces a choice and ends there), ``json``
    text that parses as it is (else ``{}``, the toy's forced object); other kinds untouched."""
    if so.choice:
        start = text.lstrip()
        return next((c for c in so.choice if start.startswith(c)), so.choice[0])
    if so.json is not None:
        try:
            json.loads(text)
        except ValueError:
            return "{}"
    return text


def render_template(conversation: list[dict[str, Any]], kw: dict[str, Any]) -> tuple[str, list]:
    """A Qwen-like chat template: a system line when ``reasoning_effort`` is set (so tests see
    it arrive), an empty think block when ``enable_thinking`` is False, as Qwen3's template."""
    text, images = "", []
    if kw.get("reasoning_effort") is not None:
        text += f"<|im_start|>system\nReasoning: {kw['reasoning_effort']}<|im_end|>\n"
    for m in conversation:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        body = ""
        for part in content:
            if part["type"] == "text":
                body += part["text"]
            elif part["type"] == "image_url":
                images.append(_image(part["image_url"]["url"]))
                body += "<|vision_start|><|image_pad|><|vision_end|>"
            else:
                raise VLLMValidationError(f"unknown content part {part['type']!r}")
        text += f"<|im_start|>{m['role']}\n{body}<|im_end|>\n"
    if kw.get("add_generation_prompt"):
        text += "<|im_start|>assistant\n"
        if kw.get("enable_thinking") is False:
            text += "<think>\n\n</think>\n\n"
    return text, images


class ModelConfig:
    def __init__(self, max_model_len: int, generation_config: dict[str, Any],
                 override_generation_config: dict[str, Any] | None = None,
                 source: str | None = None):
        self.max_model_len = max_model_len
        self._generation_config = generation_config  # the model's generation_config.json
        self.override_generation_config = dict(override_generation_config or {})
        self.generation_config = source or "auto"

    def get_diff_sampling_param(self) -> dict[str, Any]:
        """As vLLM's (vllm/config/model.py ``ModelConfig.get_diff_sampling_param``): the
        model's generation config (none for ``generation_config="vllm"``) updated by
        ``override_generation_config``, its sampling keys only, ``max_new_tokens`` renamed
        ``max_tokens``."""
        config = {} if self.generation_config == "vllm" else dict(self._generation_config)
        config.update(self.override_generation_config)
        keys = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p", "max_new_tokens")
        diff = {k: config[k] for k in keys if config.get(k) is not None}
        if "max_new_tokens" in diff:
            diff["max_tokens"] = diff.pop("max_new_tokens")
        return diff


class Renderer:  # vllm/renderers/base.py BaseRenderer: chat messages to engine inputs
    def __init__(self, engine: AsyncLLM):
        self.engine = engine

    @property
    def default_chat_tok_params(self) -> TokenizeParams:
        return TokenizeParams()

    async def render_chat_async(self, conversations, chat_params, tok_params=None, *,
                                prompt_extras=None, skip_mm_cache=False):
        tok_params = tok_params or self.default_chat_tok_params
        self.engine.renders.append((conversations, chat_params, tok_params))
        inputs = []
        for conversation in conversations:
            text, images = render_template(conversation, chat_params.chat_template_kwargs)
            if tok_params.add_special_tokens:
                text = "<|bos|>" + text
            ids = self.engine.tokenizer.encode(text)
            inp: dict[str, Any] = {"type": "multimodal" if images else "token",
                                   "prompt_token_ids": ids, "prompt": text}
            if images:
                inp["mm_kwargs"] = {"image": images}
            inputs.append(inp)
        return conversations, inputs


@dataclass
class Scripted:
    """What the toy model answers: ``text``; ``steps`` engine steps at least (one token a
    step otherwise); ``top[i]`` maps pieces to log-probabilities at output position ``i``."""

    text: str
    steps: int = 0
    top: list[dict[str, float]] | None = None
    finish_reason: str = "stop"


@dataclass
class World:
    respond: Callable[[str, Any], Scripted | Exception] = lambda prompt, params: Scripted("ok")
    generation_config: dict[str, Any] = field(default_factory=dict)
    fail_start: Exception | None = None
    #: pieces a decode with skip_special_tokens drops (the old tiny tokenizer's think tags were)
    special: frozenset[str] = frozenset({"<|im_start|>", "<|im_end|>", "<|bos|>"})
    engines: list[AsyncLLM] = field(default_factory=list)


WORLD = World()


@dataclass
class _Run:
    request_id: str
    steps: int
    done: asyncio.Event = field(default_factory=asyncio.Event)
    emitted: int = 0


class AsyncLLM:
    """vllm/v1/engine/async_llm.py ``AsyncLLM``: one engine step emits a token for every
    running request, and a request that arrives joins at the next step."""

    def __init__(self, engine_args: Any):
        world = WORLD
        if world.fail_start is not None:
            raise world.fail_start
        self.engine_args = engine_args
        self.world = world
        # the environment the engine started in (vLLM reads VLLM_* variables at start-up, and
        # its worker processes inherit them)
        self.env = {k: v for k, v in os.environ.items() if k.startswith("VLLM_")}
        self.model_config = ModelConfig(engine_args.max_model_len or 4096,
                                        world.generation_config,
                                        engine_args.override_generation_config,
                                        engine_args.generation_config)
        self.tokenizer = ToyTokenizer()
        self.renderer = Renderer(self)
        self.renders: list[tuple] = []
        self.requests: list[dict[str, Any]] = []
        self.active: dict[str, _Run] = {}
        self.finished: list[str] = []
        self.max_active = 0
        self.stopped = False
        self._stepper: asyncio.Task | None = None
        world.engines.append(self)

    @classmethod
    def from_engine_args(cls, engine_args, start_engine_loop=True, usage_context=None,
                         stat_loggers=None) -> AsyncLLM:
        return cls(engine_args)

    def get_tokenizer(self) -> ToyTokenizer:
        return self.tokenizer

    def shutdown(self, timeout: float | None = None) -> None:
        self.stopped = True

    async def generate(self, prompt, sampling_params, request_id, *, prompt_text=None,
                       lora_request=None, tokenization_kwargs=None, trace_headers=None,
                       priority=0, data_parallel_rank=None, session_id=None, kv_hints=None,
                       reasoning_ended=None, reasoning_parser_kwargs=None,
                       ) -> AsyncGenerator[RequestOutput, None]:
        if self.stopped:
            raise EngineDeadError("the engine was shut down")
        if not (isinstance(prompt, dict) and "type" in prompt):
            raise VLLMValidationError("the stand-in takes rendered engine inputs only")
        sent = {"request_id": request_id, "prompt": prompt, "params": sampling_params,
                "reasoning_ended": reasoning_ended,
                "reasoning_parser_kwargs": reasoning_parser_kwargs, "grammar_applied": False}
        self.requests.append(sent)
        script = self.world.respond(prompt.get("prompt", ""), sampling_params)
        if isinstance(script, Exception):
            if isinstance(script, VLLMError | GracefulHTTPError):
                raise script  # vLLM's own errors pass through
            raise EngineGenerateError() from script
        text = script.text
        if sampling_params.structured_outputs is not None:
            text, sent["grammar_applied"] = self._structured(
                prompt["prompt_token_ids"], text, sampling_params.structured_outputs,
                reasoning_ended, reasoning_parser_kwargs)
        ids = self.tokenizer.encode(text)
        budget = sampling_params.max_tokens
        if budget is None:  # InputProcessor: up to the end of the context
            budget = self.model_config.max_model_len - len(prompt["prompt_token_ids"])
        finish = script.finish_reason
        if len(ids) > budget:
            ids, finish = ids[:budget], "length"
        run = _Run(request_id, max(len(ids), script.steps, 1))
        self.active[request_id] = run
        self.max_active = max(self.max_active, len(self.active))
        if self._stepper is None or self._stepper.done():
            self._stepper = asyncio.get_running_loop().create_task(self._steps())
        try:
            await run.done.wait()
        finally:
            self.active.pop(request_id, None)  # an abort leaves the batch too
        yield self._output(request_id, prompt, ids, script, sampling_params, finish)

    def _structured(self, prompt_ids: list[int], text: str, so: StructuredOutputsParams,
                    ended: bool | None, parser_kwargs: dict[str, Any] | None
                    ) -> tuple[str, bool]:
        """The output under a grammar, and whether the grammar applied, as vLLM's engine
        gates it on the end of reasoning (vllm/v1/structured_output/__init__.py,
        ``StructuredOutputManager.should_fill_bitmask`` and ``should_advance``; a reasoner
        built per request with its ``reasoning_parser_kwargs``, as
        tests/v1/structured_output/test_reasoning_structured_output.py has it): with a
        reasoning parser (the engine's ``reasoning_parser``), the grammar applies from the
        first output token when the reasoning ended in the prompt (``reasoning_ended``, else
        the parser's ``is_reasoning_end`` of the prompt), else only after the output's own
        ``</think>``, and not at all when that never comes; without one, from the start."""
        name = self.engine_args.reasoning_parser
        if name:
            reasoner = ReasoningParserManager.get_reasoning_parser(name)(
                self.tokenizer, **(parser_kwargs or {}))
            if ended is None:
                ended = reasoner.is_reasoning_end(prompt_ids)
            if not ended:
                head, sep, tail = text.partition("</think>")
                if not sep:  # reasoning never ended: no grammar at all
                    return text, False
                return head + sep + constrain(tail, so), True
        return constrain(text, so), True

    async def _steps(self) -> None:
        while self.active:
            for rid, run in list(self.active.items()):
                run.emitted += 1
                if run.emitted >= run.steps:
                    del self.active[rid]
                    self.finished.append(rid)
                    run.done.set()
            await asyncio.sleep(0)

    def _output(self, request_id, prompt, ids, script, params, finish) -> RequestOutput:
        logprobs = None
        if params.logprobs is not None:
            logprobs = [self._position(i, tid, script, params.logprobs)
                        for i, tid in enumerate(ids)]
        kept = [t for t in ids if not (params.skip_special_tokens
                                       and self.tokenizer.pieces[t] in self.world.special)]
        gen = CompletionOutput(0, self.tokenizer.decode(kept), ids, None, logprobs,
                               finish_reason=finish)
        return RequestOutput(request_id, prompt.get("prompt"), prompt["prompt_token_ids"],
                             None, [gen], True)

    def _position(self, i: int, token_id: int, script: Scripted, k: int) -> dict[int, Logprob]:
        """As vllm/logprobs.py ``append_logprobs_for_next_position``: the sampled token
        first (with its rank), then the top k by rank."""
        piece = self.tokenizer.pieces[token_id]
        cands = dict((script.top or [])[i] if script.top and i < len(script.top) else {})
        cands.setdefault(piece, -0.01)
        ranked = sorted(cands, key=lambda p: -cands[p])
        out = {token_id: Logprob(cands[piece], ranked.index(piece) + 1, piece)}
        for rank, p in enumerate(ranked[:k], start=1):
            out[self.tokenizer.id(p)] = Logprob(cands[p], rank, p)
        return out


# --- vllm/reasoning/abs_reasoning_parsers.py ----------------------------------------------


class ReasoningParser:
    def __init__(self, tokenizer, *args, **kwargs):
        self.model_tokenizer = tokenizer
        self._model_config = kwargs.get("model_config")

    def is_reasoning_end(self, input_ids) -> bool:
        raise NotImplementedError

    def count_reasoning_tokens(self, token_ids) -> int:
        return 0

    def extract_reasoning(self, model_output, request) -> tuple[str | None, str | None]:
        raise NotImplementedError


class ThinkParser(ReasoningParser):
    """Stands in for ``qwen3``: reasoning is what comes before ``</think>``; nothing is
    reasoning when the chat template was told ``enable_thinking=False``."""

    def __init__(self, tokenizer, *args, **kwargs):
        super().__init__(tokenizer, *args, **kwargs)
        self.thinking = (kwargs.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        self.start, self.end = tokenizer.id("<think>"), tokenizer.id("</think>")
        self.turn = tokenizer.id("<|im_start|>")

    def is_reasoning_end(self, input_ids) -> bool:
        ids = list(input_ids)
        last_turn = max((i for i, t in enumerate(ids) if t == self.turn), default=0)
        return self.end in ids[last_turn:]

    def count_reasoning_tokens(self, token_ids) -> int:
        ids = list(token_ids)
        if not self.thinking or self.end not in ids:
            return 0
        stop = ids.index(self.end)
        begin = ids.index(self.start) + 1 if self.start in ids[:stop] else 0
        return stop - begin

    def extract_reasoning(self, model_output, request) -> tuple[str | None, str | None]:
        head, sep, tail = model_output.partition("</think>")
        if not self.thinking:
            return None, model_output
        if not sep:  # as qwen3's: thinking on and no end tag, all of it is reasoning
            return model_output.replace("<think>", "", 1).strip() or None, None
        return head.replace("<think>", "", 1).strip() or None, tail.lstrip() or None


class ReasoningParserManager:
    reasoning_parsers: dict[str, type[ReasoningParser]] = {"qwen3": ThinkParser}

    @classmethod
    def get_reasoning_parser(cls, name: str) -> type[ReasoningParser]:
        if name in cls.reasoning_parsers:
            return cls.reasoning_parsers[name]
        raise KeyError(f"Reasoning parser '{name}' not found. Available parsers: "
                       f"{', '.join(cls.list_registered())}")

    @classmethod
    def list_registered(cls) -> list[str]:
        return sorted(cls.reasoning_parsers)


# --- vLLM's module names --------------------------------------------------------------------

__all__ = ["ENGINE_ARG_FIELDS", "Logprob", "RequestOutputKind", "TokenizeParams"]

MODULES: dict[str, dict[str, Any]] = {
    "vllm": {"__version__": "0.31.0"},
    "vllm.engine": {},
    "vllm.engine.arg_utils": {"AsyncEngineArgs": AsyncEngineArgs},
    "vllm.v1": {},
    "vllm.v1.engine": {},
    "vllm.v1.engine.async_llm": {"AsyncLLM": AsyncLLM},
    "vllm.v1.engine.exceptions": {"EngineDeadError": EngineDeadError,
                                  "EngineGenerateError": EngineGenerateError},
    "vllm.sampling_params": {"SamplingParams": SamplingParams, "RequestOutputKind": RequestOutputKind,
                             "StructuredOutputsParams": StructuredOutputsParams},
    "vllm.renderers": {"ChatParams": ChatParams, "TokenizeParams": TokenizeParams},
    "vllm.reasoning": {"ReasoningParser": ReasoningParser,
                       "ReasoningParserManager": ReasoningParserManager},
    "vllm.outputs": {"RequestOutput": RequestOutput, "CompletionOutput": CompletionOutput},
    "vllm.logprobs": {"Logprob": Logprob},
    "vllm.exceptions": {"VLLMValidationError": VLLMValidationError,
                        "QueueOverflowError": QueueOverflowError},
    "vllm.entrypoints": {},
    "vllm.entrypoints.openai": {},
    "vllm.entrypoints.openai.chat_completion": {},
    "vllm.entrypoints.openai.chat_completion.protocol": {
        "ChatCompletionRequest": ChatCompletionRequest},
}


def install(monkeypatch) -> World:
    """The stand-in under vLLM's module names for one test, with a fresh world."""
    world = World()
    monkeypatch.setattr(sys.modules[__name__], "WORLD", world)
    for name, attrs in MODULES.items():
        module = types.ModuleType(name)
        module.__path__ = []  # a package, so submodules resolve
        # importlib.util.find_spec finds it, as it finds an installed vLLM
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)
    return world
