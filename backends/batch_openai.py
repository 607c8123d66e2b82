"""OpenAI's Batch API (Files + ``/v1/batches``) for ``openai`` and ``openai-responses``.

A batch is a JSONL file of ``{"custom_id", "method": "POST", "url", "body"}`` lines (the
body each call would have sent: ``payload``, without the parameters the model rejected),
uploaded with ``purpose="batch"``, then ``batches.create(input_file_id, endpoint,
completion_window="24h")``. Its ``status`` ends ``completed``, ``failed``, ``expired`` or
``cancelled``; results come in ``output_file_id`` (``{"custom_id", "response":
{"status_code", "body"}}``, not in input order: matched by ``custom_id``) and failures in
``error_file_id`` (the same shape with an error status and body, or ``{"error": {"code",
"message"}}``, ``batch_expired`` for a line an expired batch never ran). A line's status
gives its error kind as a synchronous call's would (429 ``rate_limit``, 5xx ``server``:
retried in a later batch; 400 ``client``: not); an ``error`` line's code likewise.

The batch's ``metadata`` carries the collector's intent id (``unseen_intent``), by which
:meth:`OpenAIBatches.find` lists the batches (newest first) to find one whose id a killed
run did not record.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine.backend import ProviderError
from ..engine.types import Reply, Request
from .batch_status import CANCELLED, DONE, EXPIRED, FAILED, SKEW_S, Status
from .http_errors import status_kind
from .openai_chat import classify_openai_error
from .rejected import without

_STATES = {"completed": DONE, "failed": FAILED, "expired": EXPIRED, "cancelled": CANCELLED}
# The batch input file "can contain up to 50,000 requests, and can be up to 200 MB in size"
# (OpenAI's API reference, "Create batch", input_file_id:
# platform.openai.com/docs/api-reference/batch/create; the same words in Microsoft Foundry's
# copy, learn.microsoft.com/azure/foundry/reference/rest/batches-create-batch). A MB is
# taken as 10^6 bytes, the smaller reading.
MAX_LINES = 50_000
MAX_BYTES = 200_000_000
# an ``error`` line's code -> error kind: these are the provider's trouble, retried
_LINE_CODES = {"batch_expired": "server", "server_error": "server", "internal_error": "server",
               "timeout": "timeout", "rate_limit_exceeded": "rate_limit",
               "too_many_requests": "rate_limit"}


class OpenAIBatches:
    """The batch side of an OpenAI backend (Chat Completions or Responses)."""

    name = "openai"
    max_lines = MAX_LINES
    max_bytes = MAX_BYTES

    def __init__(self, backend: Any):
        self.backend = backend  # an OpenAIChat or OpenAIResponses (one server)
        self.responses = backend.provider == "openai-responses"
        self.url = "/v1/responses" if self.responses else "/v1/chat/completions"

    def body(self, request: Request) -> dict[str, Any]:
        return without(self.backend.payload(request), self.backend.dropped)

    def encode(self, custom_id: str, body: dict[str, Any]) -> tuple[bytes, int]:
        """The input file's line (JSONL, as the Batch API reads it) and its size."""
        line = (json.dumps({"custom_id": custom_id, "method": "POST", "url": self.url,
                            "body": body}) + "\n").encode()
        return line, len(line)

    async def submit(self, lines: list[tuple[str, bytes]], intent: str) -> str:
        client = self.backend._get_client()
        data = b"".join(line for _, line in lines)
        try:
            upload = await client.files.create(file=("unseen-batch.jsonl", data),
                                               purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint=self.url, completion_window="24h",
                metadata={"unseen": self.backend.spec[:500], "unseen_intent": intent})
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        return batch.id

    async def find(self, intent: str, since: float) -> str | None:
        try:
            async for batch in self.backend._get_client().batches.list(limit=100):
                if (batch.metadata or {}).get("unseen_intent") == intent:
                    return str(batch.id)
                if batch.created_at < since - SKEW_S:  # newest first: the rest are older
                    return None
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        return None

    async def poll(self, batch_id: str) -> Status:
        try:
            batch = await self.backend._get_client().batches.retrieve(batch_id)
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        why = "; ".join(f"{e.code}: {e.message}" for e in errors if e is not None)
        return Status(_STATES.get(batch.status, "running"), batch.status, why, batch)

    async def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        try:
            content = await self.backend._get_client().files.content(file_id)
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        out = []
        for raw in content.text.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
                out.append(line)
        return out

    async def results(self, status: Status, custom_ids: list[str]
                      ) -> dict[str, Reply | ProviderError]:
        batch = status.handle
        out: dict[str, Reply | ProviderError] = {}
        for line in [*await self._lines(getattr(batch, "output_file_id", None)),
                     *await self._lines(getattr(batch, "error_file_id", None))]:
            out[line["custom_id"]] = self._read_line(line)
        return out

    def _read_line(self, line: dict[str, Any]) -> Reply | ProviderError:
        error, response = line.get("error"), line.get("response")
        if isinstance(error, dict) and error:
            code = str(error.get("code") or "")
            return ProviderError(_LINE_CODES.get(code, "client"),
                                 f"batch line failed: {code}: {error.get('message', '')}")
        if not isinstance(response, dict):
            return ProviderError("malformed", "a batch line with neither response nor error")
        status, body = response.get("status_code"), response.get("body")
        if status != 200:
            text = json.dumps(body)
            return ProviderError(status_kind(int(status or 500), text),
                                 f"HTTP {status} in a batch line: {text[:200]}", status)
        try:
            if self.responses:
                from .openai_responses import reply_of

                return reply_of(body)
            return self.backend.read(body)
        except ProviderError as exc:
            return exc
        except Exception as exc:  # a body of another shape
            return ProviderError("malformed", f"unreadable batch line: {exc}")
