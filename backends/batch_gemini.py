"""Gemini's batch mode (google-genai ``client.aio.batches``) for ``gemini``.

A batch is ``batches.create(model, src=[InlinedRequest(contents, config, metadata)])``: the
contents and config each call would have sent, and ``metadata={"key": custom_id}``. Its
state ends ``JOB_STATE_SUCCEEDED``, ``FAILED``, ``EXPIRED`` or ``CANCELLED`` (the SDK's
names); results are ``dest.inlined_responses`` in input order (Google's reference), each a
``response`` (a GenerateContentResponse, read as a synchronous reply is) or an ``error``
(``{"code", "message"}``, a gRPC code: RESOURCE_EXHAUSTED and UNAVAILABLE, INTERNAL are
retried in a later batch, INVALID_ARGUMENT and the like are not). Inline requests only: the
collector splits batches at :data:`MAX_INLINE_BYTES` (each request as the SDK serializes it,
images base64) and :data:`MAX_INLINE_LINES`.

The job's display name carries the collector's intent id (``unseen-<intent>``), by which
:meth:`GeminiBatches.find` lists the jobs to find one whose name a killed run did not record.
"""

from __future__ import annotations

from typing import Any

from ..engine.backend import ProviderError
from ..engine.types import Reply, Request
from .batch_status import CANCELLED, DONE, EXPIRED, FAILED, SKEW_S, Status
from .gemini import classify_gemini_error

_STATES = {"JOB_STATE_SUCCEEDED": DONE, "JOB_STATE_PARTIALLY_SUCCEEDED": DONE,
           "JOB_STATE_FAILED": FAILED, "JOB_STATE_EXPIRED": EXPIRED,
           "JOB_STATE_CANCELLED": CANCELLED}
# gRPC codes of a request's error → error kinds (google.rpc.Code)
_CODES = {8: "rate_limit", 4: "timeout", 14: "server", 13: "server", 2: "server",
          3: "client", 5: "client", 7: "client", 16: "client", 9: "client", 11: "client"}
MAX_INLINE_LINES = 2_000
# Inline requests suit "smaller batches that keep the total request size under 20MB"
# (Google, Gemini API docs, "Batch API", Creating a batch job: ai.google.dev/gemini-api/docs/
# batch-api); a MB taken as 10^6 bytes, less a margin for the request around the lines.
MAX_INLINE_BYTES = 19_500_000


class GeminiBatches:
    """The batch side of a Gemini backend."""

    name = "gemini"
    max_lines = MAX_INLINE_LINES
    max_bytes = MAX_INLINE_BYTES

    def __init__(self, backend: Any):
        self.backend = backend

    def body(self, request: Request) -> Any:
        contents, config = self.backend.contents_and_config(request)
        return {"contents": contents, "config": config}

    def encode(self, custom_id: str, body: Any) -> tuple[Any, int]:
        """The inlined request (made once; the SDK sends it) and its size as JSON."""
        from google.genai import types

        inlined = types.InlinedRequest(contents=body["contents"], config=body["config"],
                                       metadata={"key": custom_id})
        return inlined, len(inlined.model_dump_json(exclude_none=True))

    async def submit(self, lines: list[tuple[str, Any]], intent: str) -> str:
        from google.genai import types

        src = [inlined for _, inlined in lines]
        try:
            job = await self.backend._get_client().aio.batches.create(
                model=self.backend.model, src=src,
                config=types.CreateBatchJobConfig(display_name=f"unseen-{intent}"))
        except Exception as exc:
            raise classify_gemini_error(exc) from exc
        return str(job.name)

    async def find(self, intent: str, since: float) -> str | None:
        from google.genai import types

        try:
            pager = await self.backend._get_client().aio.batches.list(
                config=types.ListBatchJobsConfig(page_size=100))
            async for job in pager:  # every page: Google does not document their order
                made = job.create_time
                if made is not None and made.timestamp() < since - SKEW_S:
                    continue
                if job.display_name == f"unseen-{intent}":
                    return str(job.name)
        except Exception as exc:
            raise classify_gemini_error(exc) from exc
        return None

    async def poll(self, batch_id: str) -> Status:
        try:
            job = await self.backend._get_client().aio.batches.get(name=batch_id)
        except Exception as exc:
            raise classify_gemini_error(exc) from exc
        state = getattr(job.state, "value", str(job.state))
        error = getattr(job, "error", None)
        return Status(_STATES.get(state, "running"), state,
                      str(getattr(error, "message", "") or "") if error else "", job)

    async def results(self, status: Status, custom_ids: list[str]
                      ) -> dict[str, Reply | ProviderError]:
        dest = getattr(status.handle, "dest", None)
        answers = list(getattr(dest, "inlined_responses", None) or [])
        out: dict[str, Reply | ProviderError] = {}
        for i, item in enumerate(answers):
            meta = getattr(item, "metadata", None) or {}
            cid = meta.get("key") if isinstance(meta, dict) else None
            cid = cid or (custom_ids[i] if i < len(custom_ids) else None)
            if cid is None:
                continue
            out[cid] = self._read(item)
        return out

    def _read(self, item: Any) -> Reply | ProviderError:
        error = getattr(item, "error", None)
        if error is not None:
            code = int(getattr(error, "code", 0) or 0)
            return ProviderError(_CODES.get(code, "server"),
                                 f"batch request failed: {code} {getattr(error, 'message', '')}")
        response = getattr(item, "response", None)
        if response is None:
            return ProviderError("malformed", "a batch response with neither response nor error")
        try:
            return self.backend.read(response)
        except ProviderError as exc:
            return exc
