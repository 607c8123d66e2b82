"""``hf:MODEL[,ARG=VALUE,...]``: a transformers model in this process, on its own auto classes.

What lmms-eval's and VLMEvalKit's users run open models with, for machines that have torch
and transformers but no vLLM. ``MODEL`` is a folder or a Hub id (the hub's own cache; nothing
here downloads on its own). The model is ``AutoModelForImageTextToText``, its inputs
``AutoProcessor``'s, its prompt the model's own chat template; the loading arguments
``device_map``, ``dtype``, ``attn_implementation``, ``revision`` and ``trust_remote_code`` go
to ``from_pretrained`` as given.

- batching: requests wait in one queue; a worker takes every queued request that decodes alike
  (up to ``batch_size``, default 8) into one left-padded ``generate`` call, run in a thread so
  the event loop keeps taking requests while the model works;
- decoding: what a strategy leaves unset is the model's generation config's (``temperature``,
  ``top_p``, ``top_k``, ``do_sample``, ``max_new_tokens``); temperature 0 is greedy; a cap on new
  tokens always applies: the request's ``max_tokens``, else the generation config's
  ``max_new_tokens``, else ``max_new_tokens=`` in the spec (:data:`DEFAULT_MAX_NEW_TOKENS`), so
  a model that never emits EOS stops;
- chat-template kwargs: ``enable_thinking`` and ``reasoning_effort`` as ``vllm-local`` sends
  them; ``think=true`` (a model that reasons in ``<think>``) splits the text at ``</think>``;
- log-probabilities: ``log_softmax`` of the model's logits at each output step (see
  :func:`step_logprobs`); no structured output: strategies parse the text;
- provenance: each reply's ``served`` holds the model, its commit where the Hub gave one, the
  dtype and device it ran on and the transformers version.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import part_bytes
from ..engine.types import ImagePart, Reply, Request, TextPart, Usage
from .base import BackendConfigError, BaseBackend, provider
from .options import IMAGE_OPTIONS
from .vllm_args import parse_target
from .vllm_local import TOP_LOGPROBS, chat_template_kwargs, folder_fingerprint

#: the cap on new tokens when neither the request nor the model's generation config sets one
DEFAULT_MAX_NEW_TOKENS = 1024
DEFAULT_BATCH = 8
#: arguments given to ``from_pretrained`` as they are
LOAD_ARGS = ("device_map", "dtype", "attn_implementation", "revision", "trust_remote_code")
OWN_ARGS = ("batch_size", "max_new_tokens", "think", "enable_thinking")
#: what changes the replies: part of the cache key (device_map and attention kernels do not)
REPLY_ARGS = ("dtype", "revision", "trust_remote_code", "max_new_tokens", "think",
              "enable_thinking", "min_pixels", "max_pixels")
INSTALL = "hf needs torch and transformers: pip install 'unseen[hf]'"


def generate_kwargs(request: Request, defaults: dict[str, Any], cap: int) -> dict[str, Any]:
    """``generate`` arguments of a request: temperature 0 is greedy (``do_sample=False``), a
    temperature above 0 samples at it, none leaves the generation config's sampling alone;
    ``max_new_tokens`` is the request's ``max_tokens``, else ``defaults['max_new_tokens']``
    (the model's generation config), else ``cap``."""
    d = request.decoding
    kw: dict[str, Any] = {"max_new_tokens": d.max_tokens or defaults.get("max_new_tokens") or cap}
    if d.temperature is not None:
        if d.temperature <= 0:
            kw["do_sample"] = False
        else:
            kw.update(do_sample=True, temperature=d.temperature)
    sampling = kw.get("do_sample", defaults.get("do_sample", False))
    if sampling and request.provider_seed is not None:
        kw["seed"] = request.provider_seed  # taken out before generate: torch.manual_seed
    if d.logprobs:
        kw["output_logits"] = True
    return kw


def step_logprobs(logits: list[float], chosen: int, k: int = TOP_LOGPROBS
                  ) -> tuple[float, list[tuple[int, float]]]:
    """One output step: the chosen token's log-probability ``logit[c] - log(sum_j exp(logit[j]))``
    and the ``k`` entries vLLM would list (the chosen token first, then the most likely others
    by rank), each floored at -9999 as the OpenAI-compatible servers do."""
    top = max(logits)
    norm = top + math.log(sum(math.exp(v - top) for v in logits))
    lp = [max(v - norm, -9999.0) for v in logits]
    ranked = sorted(range(len(lp)), key=lambda i: -lp[i])
    entries = [chosen, *[i for i in ranked if i != chosen]][:k]
    return lp[chosen], [(i, lp[i]) for i in entries]


def split_think(text: str) -> tuple[str | None, str]:
    """``(reasoning, answer)``: what comes before ``</think>`` (an opening ``<think>`` dropped)
    and after it; no ``</think>``: no reasoning, the text whole."""
    head, sep, tail = text.partition("</think>")
    if not sep:
        return None, text
    return head.replace("<think>", "", 1).strip() or None, tail.lstrip()


@dataclass
class _Job:
    text: str
    images: list[Any]
    kwargs: dict[str, Any]
    future: asyncio.Future
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = json.dumps(self.kwargs, sort_keys=True)


class HFLocal(BaseBackend):
    provider = "hf"
    cacheable = True
    in_process = True  # the model is loaded here: one process by default

    def __init__(self, model: str, *, spec: str, box_format: str | None = None,
                 load_args: dict[str, Any] | None = None, batch_size: int = DEFAULT_BATCH,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, think: bool = False,
                 enable_thinking: bool | None = None, image: Any = None):
        super().__init__(model, box_format=box_format, spec=spec, image=image)
        load_transformers()
        self.load_args = dict(load_args or {})
        self.batch_size, self.cap = batch_size, max_new_tokens
        self.think = think
        # a model that does not think gets enable_thinking=False (a template that reads it
        # writes an empty think block) unless the spec says otherwise
        self.enable_thinking = think if enable_thinking is None else enable_thinking
        self.capabilities = Capabilities(logprobs=True, reasoning=think)
        self._model: Any = None
        self._processor: Any = None
        self._template_vars: frozenset[str] | None = None
        self._defaults: dict[str, Any] = {}
        self._eos: set[int] = set()
        self._served: dict[str, Any] = {}
        self._start_error: ProviderError | None = None
        self._loading: asyncio.Lock | None = None
        self._queue: list[_Job] = []
        self._worker: asyncio.Task | None = None
        self.batches: list[int] = []  # the size of each generate call, for tests and checks

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "load_args": self.load_args, "batch_size": self.batch_size,
                "max_new_tokens": self.cap}

    async def identify(self) -> dict[str, Any]:
        """The cache key's serving identity: the arguments that change replies and, for a
        folder, its files' names, sizes and times (new weights, new key)."""
        opts = {**self.load_args, "max_new_tokens": self.cap, "think": self.think,
                "enable_thinking": self.enable_thinking, **self.image.resize()}
        ident: dict[str, Any] = {**await super().identify(),
                                 "load": {k: opts[k] for k in REPLY_ARGS if opts.get(k) is not None}}
        if os.path.isdir(self.model):
            ident["files"] = folder_fingerprint(self.model)
        return ident

    # ------------------------------------------------------------------ loading

    async def ready(self) -> None:
        """Load the model and processor on first use, in a thread (outside the call's
        timeout: Reliable awaits this first); a failed load is kept as a typed config error."""
        if self._model is not None:
            return
        if self._start_error is not None:
            raise self._start_error
        self._loading = self._loading or asyncio.Lock()
        async with self._loading:
            if self._model is None and self._start_error is None:
                try:
                    await asyncio.to_thread(self._load)
                except Exception as exc:
                    self._start_error = ProviderError(
                        "config", f"transformers could not load {self.model}: "
                                  f"{type(exc).__name__}: {exc}")
        if self._start_error is not None:
            raise self._start_error

    def _load(self) -> None:
        import transformers
        from transformers import AutoModelForImageTextToText

        proc_args = {k: v for k, v in self.load_args.items()
                     if k in ("revision", "trust_remote_code")}
        pixels = {k: v for k, v in self.image.resize().items() if k != "factor"}
        processor = load_processor(self.model, **proc_args, **pixels)
        model = AutoModelForImageTextToText.from_pretrained(self.model, **self.load_args)
        model.eval()
        tokenizer = getattr(processor, "tokenizer", processor)
        tokenizer.padding_side = "left"  # decoder-only batches pad on the left
        gen = model.generation_config
        self._defaults = {k: getattr(gen, k, None) for k in
                          ("do_sample", "temperature", "top_p", "top_k", "max_new_tokens")}
        eos = gen.eos_token_id if gen.eos_token_id is not None else tokenizer.eos_token_id
        self._eos = set(eos if isinstance(eos, list) else [eos]) - {None}
        if gen.pad_token_id is None:
            gen.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None \
                else min(self._eos, default=0)
        commit = getattr(model.config, "_commit_hash", None)
        self._served = {k: v for k, v in {
            "model": self.model, "commit": commit, "architecture": type(model).__name__,
            "dtype": str(model.dtype).removeprefix("torch."), "device": str(model.device),
            "transformers": transformers.__version__}.items() if v is not None}
        self._template_vars = template_variables(getattr(processor, "chat_template", None))
        self._processor, self._model = processor, model

    # ------------------------------------------------------------------- calls

    async def complete(self, request: Request) -> Reply:
        await self.ready()
        text, images = self._prompt(request)
        kwargs = generate_kwargs(request, self._defaults, self.cap)
        loop = asyncio.get_running_loop()
        job = _Job(text, images, kwargs, loop.create_future())
        self._queue.append(job)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._work())
        return await job.future

    def _prompt(self, request: Request) -> tuple[str, list[Any]]:
        """The chat template's text of the request's messages, and its images in order."""
        from io import BytesIO

        from PIL import Image

        conversation, images = [], []
        for m in request.messages:
            content: list[dict[str, Any]] = []
            for p in m.parts:
                if isinstance(p, TextPart):
                    content.append({"type": "text", "text": p.text})
                elif isinstance(p, ImagePart):
                    data, _ = part_bytes(p, getattr(self.image, "max_side", None))
                    images.append(Image.open(BytesIO(data)).convert("RGB"))
                    content.append({"type": "image"})
            conversation.append({"role": m.role, "content": content})
        kw = chat_template_kwargs(request.decoding.reasoning_effort, self.enable_thinking)
        kw.pop("continue_final_message")
        # only what the template reads: transformers 5 takes any other keyword for the
        # processor's own (processor_kwargs=) and warns on every call
        used = self._template_vars
        kw = {k: v for k, v in kw.items() if used is None or k in used or k == "add_generation_prompt"}
        try:
            text = self._processor.apply_chat_template(conversation, tokenize=False, **kw)
        except Exception as exc:  # a template that refuses these messages: the request's fault
            raise ProviderError("client", f"chat template: {type(exc).__name__}: {exc}") from exc
        return text, images

    async def _work(self) -> None:
        """Run the queue: each round takes the first waiting request and every other one
        that decodes alike, up to batch_size, as one generate call."""
        while self._queue:
            for _ in range(8):  # requests sent together join this batch (a bounded wait)
                waiting = len(self._queue)
                await asyncio.sleep(0)
                if len(self._queue) == waiting:
                    break
            self._queue = [j for j in self._queue if not j.future.done()]  # timed out
            if not self._queue:
                break
            key = self._queue[0].key
            batch = [j for j in self._queue if j.key == key][: self.batch_size]
            self._queue = [j for j in self._queue if j not in batch]
            self.batches.append(len(batch))
            try:
                replies: Sequence[Reply | ProviderError] = await asyncio.to_thread(
                    self._generate, batch)
            except Exception as exc:
                err = exc if isinstance(exc, ProviderError) else ProviderError(
                    "server", f"generate failed: {type(exc).__name__}: {exc}")
                replies = [err] * len(batch)
            for job, reply in zip(batch, replies, strict=True):
                if job.future.done():
                    continue
                if isinstance(reply, Exception):
                    job.future.set_exception(reply)
                else:
                    job.future.set_result(reply)

    def _generate(self, batch: list[_Job]) -> list[Reply]:
        import torch

        model, processor = self._model, self._processor
        kwargs = dict(batch[0].kwargs)
        seed = kwargs.pop("seed", None)
        images = [im for j in batch for im in j.images] or None
        t0 = time.perf_counter()
        inputs = processor(text=[j.text for j in batch], images=images, padding=True,
                           return_tensors="pt").to(model.device, dtype=model.dtype)
        if seed is not None:
            torch.manual_seed(seed)
        with torch.inference_mode():
            out = model.generate(**inputs, **kwargs, return_dict_in_generate=True)
        seconds = time.perf_counter() - t0
        width = inputs["input_ids"].shape[1]
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        logits = out.logits if kwargs.get("output_logits") else None
        return [self._reply(out.sequences[i, width:].tolist(), int(lengths[i]), logits, i,
                            seconds) for i in range(len(batch))]

    def _reply(self, ids: list[int], prompt_tokens: int, logits: Any, row: int,
               seconds: float) -> Reply:
        stop = next((n for n, t in enumerate(ids) if t in self._eos), None)
        ids = ids if stop is None else ids[: stop + 1]  # the EOS counts, as vLLM counts it
        tokenizer = getattr(self._processor, "tokenizer", self._processor)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        reasoning = None
        if self.think:
            reasoning, text = split_think(text)
        logprobs = None
        if logits is not None:
            logprobs = []
            for step, token in enumerate(ids):
                lp, top = step_logprobs(logits[step][row].float().tolist(), token)
                logprobs.append({"token": tokenizer.decode([token]), "logprob": lp,
                                 "top": [{"token": tokenizer.decode([t]), "logprob": v}
                                         for t, v in top]})
        return Reply(text=text, reasoning=reasoning,
                     usage=Usage(input_tokens=prompt_tokens, output_tokens=len(ids)),
                     latency_s=seconds, finish_reason="length" if stop is None else "stop",
                     logprobs=logprobs, served=self._served or None)

    async def aclose(self) -> None:
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
        self._model = self._processor = None


def template_variables(template: Any) -> frozenset[str] | None:
    """The variables a Jinja chat template reads, or None where that cannot be told (no
    template, several, or one this Jinja cannot parse): then every chat-template kwarg goes."""
    if not isinstance(template, str):
        return None
    try:
        from jinja2 import meta
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(extensions=[loopcontrols])
        return frozenset(meta.find_undeclared_variables(env.parse(template)))
    except Exception:
        return None


def image_only(cls: Any) -> Any:
    """The transformers processor class ``cls`` without its video processor, which needs
    torchvision (transformers 5's ``BaseVideoProcessor``): image prompts only, through the
    processor's own ``__call__``. Named as ``cls``, so it saves as ``cls``."""

    class ImageOnly(cls):
        @classmethod
        def get_attributes(klass) -> list[str]:
            return [a for a in super().get_attributes() if a != "video_processor"]

        @classmethod
        def from_args_and_dict(klass, args: Any, processor_dict: dict[str, Any], **kw: Any) -> Any:
            rest = {k: v for k, v in processor_dict.items() if k != "video_processor"}
            return super().from_args_and_dict(args, rest, **kw)

    ImageOnly.__name__ = ImageOnly.__qualname__ = cls.__name__
    return ImageOnly


def has_torchvision() -> bool:
    """Whether torchvision imports here: a build that does not match this torch is installed
    (transformers' ``is_torchvision_available`` says yes) but does not import."""
    try:
        import torchvision  # noqa: F401
    except Exception:
        return False
    return True


def load_processor(model: str, **kwargs: Any) -> Any:
    """``AutoProcessor``'s processor of ``model``; where torchvision is missing and the model's
    processor wants a video processor (Qwen2-VL, Qwen2.5-VL, Qwen3-VL), the same processor
    without it (:func:`image_only`), its images through transformers' PIL image processor."""
    import transformers
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(model, **kwargs)
    except Exception as exc:
        if has_torchvision():
            raise
        try:
            settings, _ = transformers.ProcessorMixin.get_processor_dict(model, **kwargs)
            cls = getattr(transformers, settings.get("processor_class") or "", None)
        except Exception:
            cls = None
        if cls is None or "video_processor" not in cls.get_attributes():
            raise exc from None
        return image_only(cls).from_pretrained(model, **kwargs)


def load_transformers() -> None:
    """A BackendConfigError saying how to install torch and transformers, if either is absent."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise BackendConfigError(f"{INSTALL} ({exc})") from exc


def _flag(name: str, value: Any, spec: str) -> bool:
    if not isinstance(value, bool):
        raise BackendConfigError(f"{spec!r}: {name} is true or false, not {value!r}")
    return value


@provider("hf", "hf:MODEL[,device_map=auto,dtype=bfloat16,attn_implementation=sdpa,"
                "revision=REV,batch_size=8,max_new_tokens=1024,think=true][,min_pixels=N,"
                "max_pixels=N,box_format=...]  (transformers in this process; the hf extra)")
def _hf(target: str, *, spec: str, box_format: str | None = None,
        max_image_side: int | None = None, **_: Any) -> HFLocal:
    import difflib

    from .options import image_settings, positive_int

    path, args = parse_target(target, "hf")
    known = (*LOAD_ARGS, *OWN_ARGS, *IMAGE_OPTIONS)
    for key in args:
        if key not in known:
            near = difflib.get_close_matches(key, known, n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise BackendConfigError(f"hf: unknown argument {key!r}{hint} (known: "
                                     f"{', '.join(known)})")
    opts = {**{k: v for k, v in {"box_format": box_format,
                                 "max_image_side": max_image_side}.items() if v is not None},
            **{k: args.pop(k) for k in IMAGE_OPTIONS if k in args}}
    own = {k: args.pop(k) for k in OWN_ARGS if k in args}
    enable = own.get("enable_thinking")
    return HFLocal(
        path, spec=spec, box_format=opts.get("box_format"), load_args=args,
        batch_size=positive_int("batch_size", own.get("batch_size", DEFAULT_BATCH), spec)
        or DEFAULT_BATCH,
        max_new_tokens=positive_int("max_new_tokens",
                                    own.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS), spec)
        or DEFAULT_MAX_NEW_TOKENS,
        think=_flag("think", own.get("think", False), spec),
        enable_thinking=None if enable is None else _flag("enable_thinking", enable, spec),
        image=image_settings(opts, spec))
