"""``vllm-local:MODEL_PATH[,ENGINE_ARG=VALUE,...]``: vLLM's asynchronous engine in this process.

Written against vLLM 0.31 (the ``vllm`` extra pins 0.31.x, the version the Director paper
served its open models with). Each request goes straight into ``AsyncLLM.generate``, so it
joins the engine's continuous batch the moment it arrives; scheduling, tensor and data
parallelism and Ray across nodes are vLLM's own, set by engine arguments in the spec
(vllm_args.py). Backends of the same model and engine arguments in one event loop share one
engine. Every step does what vLLM's OpenAI-compatible server does with the same request, so
``vllm-local`` and the ``vllm`` backend answer alike:

- messages: the OpenAI chat messages the ``vllm`` backend sends (images as data URLs), rendered
  by the engine's renderer with the model's own chat template, as ``LLM.chat`` does
  (vllm/entrypoints/offline_utils.py: generation prompt on, no added special tokens);
- chat-template kwargs: ``reasoning_effort`` and ``enable_thinking = effort != "none"``, as
  ``ChatCompletionRequest.build_chat_params`` (chat_completion/protocol.py) sets them;
- sampling: a value the request sets, else the model's generation config
  (``ModelConfig.get_diff_sampling_param``), else the OpenAI default, as
  ``ChatCompletionRequest.to_sampling_params``; no output cap unless one is asked for
  (``max_tokens=None``: the engine may run to the end of the context);
- the reasoning trace: split from the answer by the reasoning parser the spec names
  (``reasoning_parser=qwen3``, which also gates the engine's structured output), as the
  server's ``--reasoning-parser``; its reasoning tokens counted by the same parser;
- log-probabilities: the sampled token and the first 5 entries of vLLM's per-token dict, as
  ``OpenAIServingChat._create_chat_logprobs``.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import file_digest
from ..engine.types import Reply, Request, Usage
from .base import BackendConfigError, BaseBackend, provider
from .openai_chat import chat_messages
from .options import IMAGE_OPTIONS
from .vllm_args import check_engine_args, engine_arg_names, parse_target

TOP_LOGPROBS = 5
# ChatCompletionRequest._DEFAULT_SAMPLING_PARAMS (chat_completion/protocol.py): the fallback
# when neither the request nor the model's generation config sets a value
OPENAI_DEFAULTS: dict[str, float | int] = {
    "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
    "temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0,
}
#: engine arguments that change what the model replies (vllm/engine/arg_utils.py names)
REPLY_ARGS = ("revision", "code_revision", "tokenizer", "tokenizer_revision", "tokenizer_mode",
              "dtype", "quantization", "max_model_len", "chat_template", "mm_processor_kwargs",
              "hf_overrides", "generation_config", "override_generation_config", "seed",
              "kv_cache_dtype", "trust_remote_code", "served_model_name")
INSTALL = "vllm-local needs vLLM 0.31: pip install 'unseen[vllm]' (on a machine with a GPU)"
#: request ids unique across the backends that share an engine
_IDS = itertools.count(1)


@dataclass
class _Shared:
    """An engine started by one backend and used by every backend of the same model and
    engine arguments in the same event loop (the engine's output loop runs there)."""

    engine: Any
    loop: asyncio.AbstractEventLoop
    users: int


#: running engines by model and engine arguments: a second backend (a Director study after a
#: SceneFunRI run in one process, two names for one model) loads no second copy
_ENGINES: dict[str, _Shared] = {}


@dataclass(frozen=True)
class VllmApi:
    """The parts of vLLM this backend calls, by the module vLLM 0.31 defines them in."""

    AsyncLLM: Any  # vllm/v1/engine/async_llm.py
    AsyncEngineArgs: Any  # vllm/engine/arg_utils.py
    SamplingParams: Any  # vllm/sampling_params.py
    StructuredOutputsParams: Any  # vllm/sampling_params.py
    RequestOutputKind: Any  # vllm/sampling_params.py
    ChatParams: Any  # vllm/renderers/params.py (exported by vllm.renderers)
    ReasoningParserManager: Any  # vllm/reasoning/abs_reasoning_parsers.py
    ChatCompletionRequest: Any  # vllm/entrypoints/openai/chat_completion/protocol.py


def load_vllm() -> VllmApi:
    """vLLM's classes, imported now; a BackendConfigError saying how to install it if absent."""
    try:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.reasoning import ReasoningParserManager
        from vllm.renderers import ChatParams
        from vllm.sampling_params import (
            RequestOutputKind,
            SamplingParams,
            StructuredOutputsParams,
        )
        from vllm.v1.engine.async_llm import AsyncLLM
    except ImportError as exc:
        raise BackendConfigError(f"{INSTALL} ({exc})") from exc
    return VllmApi(AsyncLLM, AsyncEngineArgs, SamplingParams, StructuredOutputsParams,
                   RequestOutputKind, ChatParams, ReasoningParserManager, ChatCompletionRequest)


def chat_template_kwargs(effort: str | None, enable_thinking: bool | None = None
                         ) -> dict[str, Any]:
    """The chat-template variables of a request with this reasoning effort: thinking on for
    any effort but "none"; the backend's ``enable_thinking`` (a model that does not think)
    wins, as the server's ``chat_template_kwargs`` win over the effort."""
    kw: dict[str, Any] = {"add_generation_prompt": True, "continue_final_message": False}
    if effort is not None:
        kw["reasoning_effort"] = effort
        kw["enable_thinking"] = effort != "none"
    if enable_thinking is not None:
        kw["enable_thinking"] = enable_thinking
    return kw


def sampling_kwargs(request: Request, defaults: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams arguments: the request's value, else the model's default, else
    OpenAI's; ``max_tokens`` None (no cap) unless the request or the model sets one."""
    d = request.decoding
    kw: dict[str, Any] = {k: defaults.get(k, v) for k, v in OPENAI_DEFAULTS.items()}
    if d.temperature is not None:
        kw["temperature"] = d.temperature
    caps = [v for v in (d.max_tokens, defaults.get("max_tokens")) if v is not None]
    kw["max_tokens"] = min(caps) if caps else None
    if d.seed is not None:
        kw["seed"] = request.provider_seed  # samples of one request differ
    if d.logprobs:
        kw["logprobs"] = TOP_LOGPROBS
    if d.choices:
        kw["structured_outputs"] = {"choice": list(d.choices)}
    elif d.json_schema is not None:
        kw["structured_outputs"] = {"json": d.json_schema}
    return kw


def classify_vllm_error(exc: Exception) -> ProviderError:
    """A vLLM exception as a typed error (vllm/exceptions.py: client errors are the
    request's fault, a full queue is a rate limit, the rest the engine's)."""
    names = {c.__name__ for c in type(exc).__mro__}
    message = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None:  # AsyncLLM raises EngineGenerateError() with the failure as its cause
        message += f" (caused by {type(cause).__name__}: {cause})"
    if "GracefulHTTPError" in names:  # QueueOverflowError, MaxQueuedTokensError
        return ProviderError("rate_limit", message)
    if "VLLMClientError" in names:
        return ProviderError("client", message)
    return ProviderError("server", message)


class VLLMLocal(BaseBackend):
    provider = "vllm-local"
    cacheable = True
    in_process = True  # the engine is started from here: one process by default

    def __init__(self, model_path: str, *, spec: str, box_format: str | None = None,
                 engine_args: dict[str, Any] | None = None, api: VllmApi | None = None,
                 image: Any = None, enable_thinking: bool | None = None):
        self.enable_thinking = enable_thinking  # False: a model that does not think
        args = dict(engine_args or {})
        image = _with_processor_resize(image, args, spec)
        super().__init__(model_path, box_format=box_format, spec=spec, image=image)
        self.api = api if api is not None else load_vllm()
        known = engine_arg_names(self.api.AsyncEngineArgs)
        self.engine_args = check_engine_args(args, known)
        self.reasoning_parser: str | None = self.engine_args.get("reasoning_parser") or None
        self._parser_cls = None
        if self.reasoning_parser:
            manager = self.api.ReasoningParserManager
            try:
                self._parser_cls = manager.get_reasoning_parser(self.reasoning_parser)
            except KeyError:
                raise BackendConfigError(
                    f"vllm-local: vLLM has no reasoning parser {self.reasoning_parser!r}; "
                    f"known: {', '.join(manager.list_registered())}") from None
        self.capabilities = Capabilities(json_schema=True, choices=True, logprobs=True,
                                         reasoning=self._parser_cls is not None)
        self._engine: Any = None
        self._start_error: ProviderError | None = None
        self._defaults: dict[str, Any] = {}
        self._tokenizer: Any = None
        self._parsers: dict[str, Any] = {}
        self._key = json.dumps([self.model, self.engine_args], sort_keys=True, default=str)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "engine_args": self.engine_args}

    async def identify(self) -> dict[str, Any]:
        """What changes this engine's replies (the cache key's serving identity): the engine
        arguments that do (``REPLY_ARGS``; a chat template file by its digest) and, for a
        model in a local folder, the names, sizes and times of its files, so new weights
        in the same folder never get the old ones' replies."""
        args = {k: self.engine_args[k] for k in REPLY_ARGS if k in self.engine_args}
        template = args.get("chat_template")
        if isinstance(template, str) and os.path.isfile(template):
            args["chat_template"] = "sha256:" + file_digest(template)
        ident: dict[str, Any] = {**await super().identify(), "engine": args}
        if os.path.isdir(self.model):
            ident["files"] = folder_fingerprint(self.model)
        return ident

    async def ready(self) -> None:
        """Start the engine on first use (Reliable calls this outside the per-call timeout),
        or take the running one of the same model and engine arguments in this event loop.
        It is built in the event loop, as vLLM's server builds it, so loading a model holds
        the loop; a failed start is kept and every call gets it as a typed config error."""
        if self._engine is not None:
            return
        if self._start_error is not None:
            raise self._start_error
        loop = asyncio.get_running_loop()
        shared = _ENGINES.get(self._key)
        # a parent that touched CUDA cannot fork the engine's process (vllm-project/vllm#9469)
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        try:
            if shared is None or shared.loop is not loop:
                args = self.api.AsyncEngineArgs(model=self.model, **self.engine_args)
                shared = _Shared(self.api.AsyncLLM.from_engine_args(args), loop, users=0)
            engine = shared.engine
            self._defaults = dict(engine.model_config.get_diff_sampling_param() or {})
            self._tokenizer = engine.get_tokenizer()
        except Exception as exc:
            self._start_error = ProviderError(
                "config", f"vLLM could not start {self.model}: {type(exc).__name__}: {exc}")
            raise self._start_error from exc
        shared.users += 1
        _ENGINES[self._key] = shared
        self._engine = engine

    def sampling_params(self, request: Request) -> Any:
        kw = sampling_kwargs(request, self._defaults)
        so = kw.pop("structured_outputs", None)
        if so is not None:
            kw["structured_outputs"] = self.api.StructuredOutputsParams(**so)
        if self._parser_cls is not None:
            # as the server (ChatCompletionRequest.to_sampling_params): a reasoning parser
            # needs the think tags in the text, special or not
            kw["skip_special_tokens"] = False
        # one final output per request: no partial outputs to copy while it runs
        return self.api.SamplingParams(output_kind=self.api.RequestOutputKind.FINAL_ONLY, **kw)

    def _parser(self, kw: dict[str, Any]) -> Any:
        """One reasoning parser per set of chat-template kwargs (Qwen3's reads enable_thinking),
        built as the server builds one per request."""
        if self._parser_cls is None:
            return None
        key = json.dumps(kw, sort_keys=True)
        if key not in self._parsers:
            self._parsers[key] = self._parser_cls(self._tokenizer, chat_template_kwargs=kw,
                                                  model_config=self._engine.model_config)
        return self._parsers[key]

    async def complete(self, request: Request) -> Reply:
        await self.ready()
        engine = self._engine
        kw = chat_template_kwargs(request.decoding.reasoning_effort, self.enable_thinking)
        t0 = time.perf_counter()
        final = None
        try:
            parser = self._parser(kw)
            renderer = engine.renderer
            tok_params = renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
            _, (engine_input,) = await renderer.render_chat_async(
                [chat_messages(request, self.image)], self.api.ChatParams(chat_template_kwargs=kw), tok_params)
            extra: dict[str, Any] = {}
            if parser is not None:  # as the server: the engine's structured-output gate
                prompt_ids = engine_input.get("prompt_token_ids") or []
                extra = {"reasoning_ended": parser.is_reasoning_end(prompt_ids),
                         "reasoning_parser_kwargs": {"chat_template_kwargs": kw}}
            async for out in engine.generate(engine_input, self.sampling_params(request),
                                             f"unseen-{next(_IDS)}", **extra):
                final = out
        except ProviderError:
            raise
        except Exception as exc:
            raise classify_vllm_error(exc) from exc
        if final is None or not final.outputs:
            raise ProviderError("malformed", "vLLM finished the request without an output")
        return self._reply(final, kw, parser, time.perf_counter() - t0)

    def _reply(self, out: Any, kw: dict[str, Any], parser: Any, seconds: float) -> Reply:
        gen = out.outputs[0]
        text, reasoning, reasoning_tokens = gen.text or "", None, 0
        if parser is not None:
            request = self.api.ChatCompletionRequest.model_construct(
                messages=[], model=self.model, chat_template_kwargs=kw)
            reasoning, content = parser.extract_reasoning(text, request)
            text = content or ""
            reasoning_tokens = parser.count_reasoning_tokens(list(gen.token_ids))
        return Reply(
            text=text, reasoning=reasoning,
            usage=Usage(input_tokens=len(out.prompt_token_ids or []),
                        output_tokens=len(gen.token_ids or []), reasoning_tokens=reasoning_tokens),
            latency_s=seconds, finish_reason=gen.finish_reason,
            logprobs=self._logprobs(gen),
        )

    def _logprobs(self, gen: Any) -> list[dict[str, Any]] | None:
        """Per output token: the sampled token and its logprob, and the first TOP_LOGPROBS
        entries of vLLM's dict (sampled token first, then by rank), floored at -9999."""
        if gen.logprobs is None:
            return None
        out = []
        for token_id, step in zip(gen.token_ids, gen.logprobs, strict=False):
            chosen = step.get(token_id) if step else None
            if chosen is None:
                continue
            top = [{"token": self._token(tid, lp), "logprob": max(lp.logprob, -9999.0)}
                   for tid, lp in itertools.islice(step.items(), TOP_LOGPROBS)]
            out.append({"token": self._token(token_id, chosen),
                        "logprob": max(chosen.logprob, -9999.0), "top": top})
        return out

    def _token(self, token_id: int, lp: Any) -> str:
        if lp.decoded_token is not None:
            return lp.decoded_token
        return self._tokenizer.decode([token_id]) if self._tokenizer is not None else ""

    async def aclose(self) -> None:
        """Let go of the engine; the last backend using it shuts it down."""
        if self._engine is None:
            return
        shared = _ENGINES.get(self._key)
        if shared is not None and shared.engine is self._engine:
            shared.users -= 1
            if shared.users > 0:
                self._engine = None
                return
            del _ENGINES[self._key]
        self._engine.shutdown()
        self._engine = None


def folder_fingerprint(folder: str) -> str:
    """A digest of the names, sizes and modification times of a model folder's files (the
    top level, where weights and configs lie): cheap, and changed by new weights."""
    h = hashlib.sha256()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file():
            st = entry.stat()
            h.update(f"{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _with_processor_resize(image: Any, args: dict[str, Any], spec: str) -> Any:
    """The image settings with the engine's ``mm_processor_kwargs`` resize, and that resize
    set from the settings (Qwen2.5-VL's min/max pixels are the processor's, engine-wide)."""
    from .options import ImageSettings

    image = image or ImageSettings()
    mm = args.get("mm_processor_kwargs")
    if mm is not None and not isinstance(mm, dict):
        raise BackendConfigError(f"mm_processor_kwargs in {spec!r} is a JSON object")
    mm = dict(mm or {})
    settings = image.model_dump()
    for name in ("min_pixels", "max_pixels"):
        if settings.get(name) is not None:
            mm[name] = settings[name]
        elif isinstance(mm.get(name), int):
            settings[name] = mm[name]
    if mm:
        args["mm_processor_kwargs"] = mm
    return ImageSettings(**settings)


@provider("vllm-local", "vllm-local:MODEL_PATH[,ENGINE_ARG=VALUE,...][,min_pixels=N,"
                        "max_pixels=N,box_format=...]  (vLLM in this process; the vllm extra "
                        "and a GPU)")
def _vllm_local(target: str, *, spec: str, box_format: str | None = None,
                max_image_side: int | None = None, **_: Any) -> VLLMLocal:
    from .options import image_settings

    path, args = parse_target(target)
    ours = {k: args.pop(k) for k in IMAGE_OPTIONS if k in args}
    thinking = args.pop("enable_thinking", None)
    if thinking is not None and not isinstance(thinking, bool):
        raise BackendConfigError(f"{spec!r}: enable_thinking is true or false")
    opts = {**{k: v for k, v in {"box_format": box_format,
                                 "max_image_side": max_image_side}.items() if v is not None},
            **ours}
    return VLLMLocal(path, spec=spec, box_format=opts.get("box_format"), engine_args=args,
                     image=image_settings(opts, spec), enable_thinking=thinking)
