"""``vllm-local:MODEL_PATH``: vLLM's engine in this process (the ``vllm`` extra).

vLLM is imported lazily, only when this backend is used. Requests arriving within a short
window are batched into one ``LLM.chat`` call, run in a worker thread, so the event loop
stays free and the GPU sees batches rather than single prompts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import data_url
from ..engine.types import ImagePart, Reply, Request, TextPart, Usage
from .base import BackendConfigError, BaseBackend, provider


def openai_messages(request: Request) -> list[dict[str, Any]]:
    """The request in the OpenAI chat format that ``LLM.chat`` takes."""
    out = []
    for m in request.messages:
        content = []
        for p in m.parts:
            if isinstance(p, TextPart):
                content.append({"type": "text", "text": p.text})
            elif isinstance(p, ImagePart):
                content.append({"type": "image_url", "image_url": {"url": data_url(p)}})
        out.append({"role": m.role, "content": content})
    return out


def sampling_kwargs(request: Request) -> dict[str, Any]:
    d = request.decoding
    kw: dict[str, Any] = {}
    if d.temperature is not None:
        kw["temperature"] = d.temperature
    if d.seed is not None:
        kw["seed"] = d.seed + request.sample
    kw["max_tokens"] = d.max_tokens or 2048
    if d.logprobs:
        kw["logprobs"] = 5
    if d.choices:
        kw["structured_outputs"] = {"choice": list(d.choices)}
    elif d.json_schema is not None:
        kw["structured_outputs"] = {"json": d.json_schema}
    return kw


def _vllm_sampling(kw: dict[str, Any]) -> Any:
    import vllm

    kw = dict(kw)
    so = kw.pop("structured_outputs", None)
    if so is not None:
        from vllm.sampling_params import StructuredOutputsParams

        kw["structured_outputs"] = StructuredOutputsParams(**so)
    return vllm.SamplingParams(**kw)


class VLLMLocal(BaseBackend):
    provider = "vllm-local"
    cacheable = True
    capabilities = Capabilities(json_schema=True, choices=True, logprobs=True)

    def __init__(self, model_path: str, *, spec: str, box_format: str | None = None,
                 engine_factory: Callable[[], Any] | None = None,
                 make_sampling: Callable[[dict[str, Any]], Any] | None = None,
                 max_batch: int = 64, window_s: float = 0.01, **engine_kwargs: Any):
        super().__init__(model_path, box_format=box_format, spec=spec)
        self._factory = engine_factory or self._default_factory(model_path, engine_kwargs)
        self._make_sampling = make_sampling or _vllm_sampling
        self.max_batch = max_batch
        self.window_s = window_s
        self._llm: Any = None
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None

    @staticmethod
    def _default_factory(path: str, kwargs: dict[str, Any]) -> Callable[[], Any]:
        def make() -> Any:
            try:
                import vllm
            except ImportError as exc:
                raise BackendConfigError(
                    "vllm-local needs vLLM: pip install 'unseen[vllm]' (on a machine with a GPU)"
                ) from exc
            return vllm.LLM(model=path, **kwargs)

        return make

    async def complete(self, request: Request) -> Reply:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._batches())
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put((openai_messages(request), sampling_kwargs(request), fut))
        return await fut

    async def _batches(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            deadline = time.perf_counter() + self.window_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), remaining))
                except TimeoutError:
                    break
            try:
                outputs, seconds = await asyncio.to_thread(self._run, batch)
            except Exception as exc:
                err = exc if isinstance(exc, ProviderError) else ProviderError(
                    "config" if isinstance(exc, BackendConfigError) else "internal",
                    f"{type(exc).__name__}: {exc}")
                for *_, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            for (_, _, fut), out in zip(batch, outputs, strict=True):
                if not fut.done():
                    fut.set_result(self._reply(out, seconds))

    def _run(self, batch: list) -> tuple[list, float]:
        if self._llm is None:
            self._llm = self._factory()
        t0 = time.perf_counter()
        outputs = self._llm.chat([b[0] for b in batch],
                                 sampling_params=[self._make_sampling(b[1]) for b in batch])
        return list(outputs), time.perf_counter() - t0

    @staticmethod
    def _reply(out: Any, seconds: float) -> Reply:
        gen = out.outputs[0]
        return Reply(
            text=gen.text or "",
            usage=Usage(input_tokens=len(getattr(out, "prompt_token_ids", None) or []),
                        output_tokens=len(getattr(gen, "token_ids", None) or [])),
            latency_s=seconds, finish_reason=getattr(gen, "finish_reason", None),
        )

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
            self._queue = None


@provider("vllm-local", "vllm-local:MODEL_PATH  (vLLM in this process; needs the vllm extra and a GPU)")
def _vllm_local(target: str, *, spec: str, box_format: str | None = None, **_: Any) -> VLLMLocal:
    if not target:
        raise BackendConfigError("vllm-local needs a model path: vllm-local:/path/to/model")
    return VLLMLocal(target, spec=spec, box_format=box_format)
