"""The fake batch servers' shared state: stored files and batches, the mixin a fake provider
handler takes them from, and helpers both providers' endpoints use (see fake_batches)."""

from __future__ import annotations

import datetime as _dt
import itertools
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

OPENAI_ENDPOINTS = {"/v1/chat/completions": "openai", "/v1/responses": "openai-responses"}
_OPENAI_TERMINAL = {"completed", "failed", "expired", "cancelled"}
_GEMINI_TERMINAL = {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED",
                    "BATCH_STATE_EXPIRED"}
_GEMINI_BATCH_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
_GEMINI_OUTPUT_TYPE = (
    "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
)
# google.rpc.Code of an HTTP status, as a batch's per-request Status carries it
_GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 409: 10, 429: 8, 499: 1, 500: 13,
               501: 12, 503: 14, 504: 4}
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
DAY = 86400


@dataclass
class LineError:
    """A behaviour for batched requests only: the request fails without a response (OpenAI:
    an error-file line ``{"response": null, "error": {"code", "message"}}``; Gemini: the
    response's ``error``, a non-int ``code`` sent as 13, INTERNAL). A synchronous request
    given it gets a 500 ("bad behaviour")."""

    code: str | int = "server_error"
    message: str = "fake batch line error"


@dataclass
class Dropped:
    """A behaviour for batched requests only: the batch loses the request (OpenAI: a line in
    neither the output nor the error file, counted as failed; Gemini, whose responses come
    in input order, one per request: as a :class:`LineError`). A synchronous request given it
    gets a 500 ("bad behaviour")."""


@dataclass
class StoredFile:
    id: str
    kind: str  # "openai" or "gemini"
    filename: str
    purpose: str  # OpenAI's purpose; Gemini: "" (uploaded) or "batch_output"
    data: bytes
    created_at: float
    expires_at: float | None = None
    mime_type: str = "application/jsonl"


@dataclass
class StoredBatch:
    id: str
    kind: str  # "openai" or "gemini"
    model: str  # OpenAI: the lines' model; Gemini: "models/..."
    lines: list[dict]  # OpenAI: the input lines; Gemini: {"request", "metadata"?, "key"?}
    headers: dict[str, str]
    path: str
    created_at: float
    in_progress_polls: int
    finalizing_polls: int
    outcome: str = "completed"  # "completed", "expired" or "failed"
    expire_done: int = 0
    errors: list[dict] = field(default_factory=list)  # validation errors: fails at 1st GET
    endpoint: str = ""
    input_file_id: str = ""
    metadata: dict | None = None
    display_name: str | None = None
    status: str = "validating"
    polls: int = 0
    times: dict[str, float] = field(default_factory=dict)
    results: list[dict] | None = None  # once the lines ran: {"index", "error", "line"}
    output_file_id: str | None = None
    error_file_id: str | None = None
    cancel_requested: bool = False


class BatchesMixin:
    """The batch state of ``FakeProvider`` (see the module docstring)."""

    _lock: threading.Lock

    def _init_batches(self) -> None:
        self.batch_calls: list[tuple[str, str]] = []
        self._batch_lock = threading.RLock()
        self._batch_ids = itertools.count(1)
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, StoredBatch] = {}
        self._uploads: dict[str, dict] = {}
        self._reset_batches()

    def _reset_batches(self) -> None:
        with self._batch_lock:
            self.batch_calls.clear()
            self._files.clear()
            self._batches.clear()
            self._uploads.clear()
            self.batch_polls = 2
            self.batch_finalizing_polls = 1
            self.batch_seed = 0
            self.batch_keep_order = False
            self._next_outcome: tuple[str, Any] | None = None

    def expire_next_batch(self, done: int | None = None) -> None:
        """The next batch created ends expired; on OpenAI only its first ``done`` lines
        (default: half, rounded down) run, the others are ``batch_expired`` error lines."""
        with self._batch_lock:
            self._next_outcome = ("expired", done)

    def fail_next_batch(self, errors: list[dict] | None = None) -> None:
        """The next batch created fails validation at its first poll, with ``errors`` (OpenAI
        ``BatchError`` dicts: code, message, line, param) as ``errors.data``; Gemini: the
        Operation's ``error`` carries the first one's message."""
        errs = errors or [{"code": "invalid_request", "message": "fake validation failure",
                           "line": None, "param": None}]
        with self._batch_lock:
            self._next_outcome = ("failed", [dict(e) for e in errs])

    @property
    def batch_files(self) -> dict[str, bytes]:
        """Every stored file's bytes by id (both providers'), for tests to look at."""
        with self._batch_lock:
            return {f.id: f.data for f in self._files.values()}

    # ------------------------------------------------------------ internals
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._batch_ids):04d}"

    def _take_outcome(self) -> tuple[str, Any]:
        outcome, self._next_outcome = self._next_outcome or ("completed", None), None
        return outcome


# ======================================================================== helpers


def _now() -> float:
    return time.time()


def _rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename or None, bytes)."""
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if not m:
        raise ValueError("multipart body without a boundary")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for chunk in raw.split(b"--" + m.group(1).encode())[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, body = chunk.partition(b"\r\n\r\n")
        if body.endswith(b"\r\n"):
            body = body[:-2]
        text = head.decode("latin-1")
        name = re.search(r'\bname="([^"]*)"', text)
        filename = re.search(r'\bfilename="([^"]*)"', text)
        if name:
            fields[name.group(1)] = (filename.group(1) if filename else None, body)
    return fields


def _oa_error(handler, status: int, message: str, param: str | None = None,
              code: str | None = None) -> None:
    etype = "invalid_request_error" if status < 500 else "server_error"
    handler._send_json(status, {"error": {"message": message, "type": etype, "param": param,
                                          "code": code}})


def _gem_error(handler, status: int, message: str, gstatus: str) -> None:
    handler._send_json(status, {"error": {"code": status, "message": message,
                                          "status": gstatus}})


def _is_gemini_caller(handler) -> bool:
    return "x-goog-api-key" in {k.lower() for k in handler.headers}


def _shuffled(items: list, seed: str) -> list:
    out = list(items)
    random.Random(seed).shuffle(out)
    if len(out) > 1 and out == items:
        out.reverse()
    return out


# ======================================================================== OpenAI


