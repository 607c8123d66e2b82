"""The batch APIs of the fake provider server (``tests/fake_providers.py``).

``FakeProvider`` routes here what its synchronous endpoints do not serve. The real SDKs talk
to it unchanged: ``openai.AsyncOpenAI(base_url=fp.openai_base_url, api_key="x",
max_retries=0)`` and ``genai.Client(api_key="x",
http_options=types.HttpOptions(base_url=fp.gemini_base_url))``.

OpenAI (Files + Batches; every path also without its ``/v1``)
    * ``POST /v1/files`` (multipart: ``file``, ``purpose``, optional
      ``expires_after[anchor]`` / ``expires_after[seconds]``) -> ``FileObject``;
      ``GET /v1/files`` (list), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content`` (the
      bytes), ``DELETE /v1/files/{id}`` -> ``FileDeleted``.
    * ``POST /v1/batches`` (``input_file_id``, ``endpoint`` ``/v1/chat/completions`` or
      ``/v1/responses``, ``completion_window`` ``24h``, ``metadata``) -> ``Batch``;
      ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``, ``GET /v1/batches`` (newest
      first, ``limit`` / ``after``).
    * Lifecycle, counted in ``GET /v1/batches/{id}`` calls (a list or a cancel counts none):
      the create answers ``validating``; the first ``fp.batch_polls`` GETs (default 2) say
      ``in_progress``, the next ``fp.batch_finalizing_polls`` (default 1) ``finalizing``, then
      ``completed`` with ``output_file_id`` / ``error_file_id``; ``request_counts`` and
      ``usage`` count the lines from when they ran. Both settings are read when the batch
      is created (0 and 0: the first GET says ``completed``).
    * The lines run when the batch leaves ``in_progress``, in input order: each takes the next
      behaviour (``fp.script`` / ``fp.default`` / a callable given a ``Recorded`` with protocol
      ``openai`` or ``openai-responses``, ``path`` the line's ``url``, ``batch_id`` and
      ``custom_id`` set, the create request's headers), and is recorded in ``fp.requests``.
      A ``Reply``'s body is the synchronous endpoint's (``_openai_reply`` /
      ``_responses_reply``); its ``delay`` is ignored.
    * Output file lines ``{"id", "custom_id", "response": {"status_code", "request_id",
      "body"}, "error": null}``; an ``Error`` (or a ``Raw`` with status >= 400) goes to the
      error file in the same shape with its status and error body; a :class:`LineError`
      goes there as ``{"response": null, "error": {"code", "message"}}``. A file is made
      only when it has lines. Each file's lines are shuffled (``random.Random(f"{seed}:{batch
      id}")``, ``fp.batch_seed``), never left in input order when there are two or more, as
      real batches do not keep order; ``fp.batch_keep_order = True`` keeps it.
    * ``fp.expire_next_batch(done=None)``: the next batch created (either provider) ends
      ``expired``; on OpenAI only its first ``done`` lines (default half) run, the others are
      error-file lines with ``error.code == "batch_expired"`` and count as failed.
      ``fp.fail_next_batch(errors=None)``: it ends ``failed`` at its first GET with
      ``errors.data`` (default one ``invalid_request`` error), no line run, counts 0/0/0. An
      input that does not validate fails the same way, with the fake's codes:
      ``invalid_json_line``, ``missing_required_parameter``, ``invalid_url`` (a line's url is
      not the batch's endpoint), ``duplicate_custom_id``, ``mismatched_model``.
    * Cancel: ``cancelling``, then ``cancelled`` at the next GET (lines that had run keep their
      files; before they run, none do); cancelling a batch that ended is a 409.

Gemini Developer API (``{v}`` is any of v1, v1beta, v1alpha, v1beta1)
    * ``POST /{v}/models/{model}:batchGenerateContent`` with ``{"batch": {"displayName",
      "inputConfig": {"requests": {"requests": [{"request": GenerateContentRequest,
      "metadata"}]}} or {"fileName": "files/..."}}}`` -> an Operation ``{"name":
      "batches/...", "metadata": GenerateContentBatch}``; ``GET /{v}/batches/{id}`` (the poll),
      ``POST /{v}/batches/{id}:cancel`` -> ``{}``, ``DELETE /{v}/batches/{id}`` -> ``{}``,
      ``GET /{v}/batches`` (``pageSize``, ``pageToken``) -> ``{"operations", "nextPageToken"}``.
    * States on the wire are ``BATCH_STATE_*`` (the SDK renames them ``JOB_STATE_*``): the
      create answers PENDING, the first ``fp.batch_polls`` GETs RUNNING, then SUCCEEDED with
      ``done: true`` and ``metadata.output`` (and ``response``) holding
      ``inlinedResponses.inlinedResponses`` in input order, each ``{"response"}`` or
      ``{"error": {"code", "message"}}`` (``code`` the gRPC code of an ``Error``'s HTTP status:
      429 -> 8, 500 -> 13, ...), with the request's ``metadata`` echoed; a file input gives
      ``responsesFile`` instead, a generated JSONL file of ``{"key", "response"}`` /
      ``{"key", "error"}`` lines, also in input order (Google's reference promises input
      order for both).
      Requests are recorded with protocol ``gemini`` and ``batch_id`` the job's name.
    * Expired: BATCH_STATE_EXPIRED with no output and no request run (Google: an expired job
      has no results). Failed: BATCH_STATE_FAILED with the Operation's ``error``. Cancel:
      BATCH_STATE_CANCELLED at once, no output.
    * Files: ``POST /upload/{v}/files`` (resumable: ``start`` answers ``X-Goog-Upload-URL``;
      ``upload, finalize`` answers ``{"file": File}`` with ``X-Goog-Upload-Status: final``),
      ``GET /{v}/files/{id}``, ``GET /{v}/files/{id}:download?alt=media`` (the bytes; any
      file, uploaded ones too), ``DELETE /{v}/files/{id}``, ``GET /{v}/files``.
    * ``/{v}/files...`` and ``/{v}/batches...`` are shared with OpenAI's ``/v1`` paths: an
      object answers in the shape of the provider that made it, and a list by the caller's
      key header (``x-goog-api-key``: Gemini).

Every batch-API call (both providers, files too) is appended to ``fp.batch_calls`` as
``(method, path with query)``. ``fp.reset()`` forgets the files, the batches, the calls and
a pending expire/fail, and restores the settings.

Facts about the SDKs, checked by ``tests/backends/test_fake_batches.py`` (openai 3.57,
google-genai 3.6.1, httpx2 installed):

openai
    * Paths are relative to ``base_url`` (``/files``, ``/batches``, ...), so with
      ``base_url=.../v1`` they are the ``/v1/...`` ones above; ``files.create`` sends
      ``multipart/form-data`` with the fields ``purpose`` and ``file`` (its filename as given
      in a ``(name, bytes)`` tuple; ``expires_after`` as ``expires_after[anchor]`` /
      ``expires_after[seconds]``); ``files.content`` returns an
      ``HttpxBinaryResponseContent`` (the bytes: ``.content`` / ``.read()``).
    * ``Batch``, ``FileObject`` and ``FileDeleted`` keep unknown fields (``model_extra``),
      and the client builds replies WITHOUT validation unless it is made with
      ``_strict_response_validation=True`` (then a reply that does not validate raises
      ``openai.APIResponseValidationError``); neither notices a misspelt optional field, so
      the tests also check field sets.
    * ``batches.list`` is a cursor page: it asks again with ``after=<last id>`` while
      ``has_more`` is true.

google-genai
    * Same ``api_version`` as ``generate_content`` (``v1`` by default in 3.x, so
      ``/v1/models/{model}:batchGenerateContent`` and ``/v1/batches/{id}``, though Google
      documents batches under v1beta; ``HttpOptions(api_version="v1beta")`` moves all).
      ``batches.get`` / ``cancel`` / ``delete`` accept only ``batches/{id}`` names (else
      ``ValueError``) and send the bare id; ``files.upload`` sends ``POST
      /upload/{v}/files`` (headers ``X-Goog-Upload-Protocol: resumable``,
      ``X-Goog-Upload-Command: start``, ``X-Goog-Upload-Header-Content-Length`` / ``-Type``),
      then posts the bytes to the returned URL (with its scheme and host replaced by
      ``base_url``'s, per the source); ``files.download(file="files/x")`` sends ``GET
      /{v}/files/x:download?alt=media``.
    * A ``src`` list of dicts becomes ``inlined_requests``; each request's ``config`` is sent
      as ``generationConfig`` (its ``system_instruction`` as the request's
      ``systemInstruction``), ``metadata`` (``dict[str, str]``) beside ``request``.
    * The BatchJob is built from the Operation's ``name`` and ``metadata`` only: ``done``,
      ``response`` and ``error`` are dropped, so a failed job's ``BatchJob.error`` is None
      (the Developer API's ``JobError`` is not carried over); ``metadata.batchStats`` is not
      read either (``completion_stats`` stays None), and the Developer API has no
      ``startTime`` (``start_time`` stays None).
    * The google-genai types forbid unknown keys in ``model_validate``, but the SDK builds
      every reply with ``_from_response``, which first deletes the keys a type lacks (in the
      dict itself), so a misspelt field in a reply vanishes without an error: the tests
      check field sets themselves. ``JobError.details`` is ``list[str]``, so a Status with
      detail objects would not validate (the fake sends none).
    * ``files.upload`` sends its start body snake_case: ``{"file": {"name", "display_name",
      "mime_type", "size_bytes"}}`` (the fake reads both cases).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import itertools
import json
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

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


def _oa_file_obj(f: StoredFile) -> dict:
    return {"id": f.id, "object": "file", "bytes": len(f.data), "created_at": int(f.created_at),
            "expires_at": _int(f.expires_at), "filename": f.filename, "purpose": f.purpose,
            "status": "processed", "status_details": None}


def _oa_batch_obj(b: StoredBatch) -> dict:
    t = b.times
    counts = {"total": len(b.lines), "completed": 0, "failed": 0}
    usage = {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 0}
    if b.status == "failed":
        counts["total"] = 0
    elif b.results is not None:
        counts["completed"] = sum(not r["error"] for r in b.results)
        counts["failed"] = sum(r["error"] for r in b.results)
        for r in b.results:
            _add_usage(usage, r)
    return {
        "id": b.id,
        "object": "batch",
        "endpoint": b.endpoint,
        "model": b.model or None,
        "errors": {"object": "list", "data": b.errors} if b.status == "failed" else None,
        "input_file_id": b.input_file_id,
        "completion_window": "24h",
        "status": b.status,
        "output_file_id": b.output_file_id,
        "error_file_id": b.error_file_id,
        "created_at": int(b.created_at),
        "in_progress_at": _int(t.get("in_progress")),
        "expires_at": int(b.created_at) + DAY,
        "finalizing_at": _int(t.get("finalizing")),
        "completed_at": _int(t.get("completed")),
        "failed_at": _int(t.get("failed")),
        "expired_at": _int(t.get("expired")),
        "cancelling_at": _int(t.get("cancelling")),
        "cancelled_at": _int(t.get("cancelled")),
        "request_counts": counts,
        "usage": usage,
        "metadata": b.metadata,
    }


def _add_usage(usage: dict, result: dict) -> None:
    response = result["line"].get("response") or {}
    u = (response.get("body") or {}).get("usage") if isinstance(response.get("body"), dict) \
        else None
    if result["error"] or not isinstance(u, dict):
        return
    inp = u.get("prompt_tokens", u.get("input_tokens", 0)) or 0
    out = u.get("completion_tokens", u.get("output_tokens", 0)) or 0
    details = u.get("completion_tokens_details") or u.get("output_tokens_details") or {}
    usage["input_tokens"] += inp
    usage["output_tokens"] += out
    usage["output_tokens_details"]["reasoning_tokens"] += details.get("reasoning_tokens", 0) or 0
    usage["total_tokens"] += inp + out


def _oa_upload(handler, provider, match, query, raw) -> None:
    try:
        fields = _multipart(handler.headers.get("Content-Type", ""), raw)
    except ValueError as exc:
        _oa_error(handler, 400, str(exc))
        return
    if "file" not in fields or "purpose" not in fields:
        missing = "file" if "file" not in fields else "purpose"
        _oa_error(handler, 400, f"Missing required parameter: '{missing}'.", missing,
                  "missing_required_parameter")
        return
    filename, data = fields["file"]
    purpose = fields["purpose"][1].decode()
    now = _now()
    expires = None
    if "expires_after[seconds]" in fields:
        expires = now + int(fields["expires_after[seconds]"][1])
    elif purpose == "batch":
        expires = now + 30 * DAY
    with provider._batch_lock:
        f = StoredFile(provider._new_id("file-fake"), "openai", filename or "upload", purpose,
                       data, now, expires)
        provider._files[f.id] = f
    handler._send_json(200, _oa_file_obj(f))


def _oa_create(handler, provider, match, query, raw) -> None:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        _oa_error(handler, 400, "We could not parse the JSON body of your request.")
        return
    for name in ("input_file_id", "endpoint", "completion_window"):
        if not body.get(name):
            _oa_error(handler, 400, f"Missing required parameter: '{name}'.", name,
                      "missing_required_parameter")
            return
    if body["completion_window"] != "24h":
        _oa_error(handler, 400, "completion_window must be '24h'.", "completion_window",
                  "invalid_value")
        return
    if body["endpoint"] not in OPENAI_ENDPOINTS:
        _oa_error(handler, 400, f"the fake serves only {sorted(OPENAI_ENDPOINTS)} batches, not "
                  f"{body['endpoint']!r}", "endpoint", "invalid_value")
        return
    with provider._batch_lock:
        f = provider._files.get(body["input_file_id"])
        if f is None or f.kind != "openai":
            _oa_error(handler, 404, f"No such File object: {body['input_file_id']}", "id")
            return
        if f.purpose != "batch":
            _oa_error(handler, 400, f"File {f.id} has purpose {f.purpose!r}, not 'batch'.",
                      "input_file_id", "invalid_value")
            return
        lines, errors, model = _oa_parse_lines(f.data, body["endpoint"])
        outcome, arg = provider._take_outcome()
        b = StoredBatch(
            id=provider._new_id("batch_fake"), kind="openai", model=model, lines=lines,
            headers={k.lower(): v for k, v in handler.headers.items()}, path=handler.path,
            created_at=_now(), in_progress_polls=provider.batch_polls,
            finalizing_polls=provider.batch_finalizing_polls, endpoint=body["endpoint"],
            input_file_id=f.id, metadata=body.get("metadata"), errors=errors)
        if outcome == "failed":
            b.outcome, b.errors = "failed", arg
        elif outcome == "expired":
            b.outcome = "expired"
            b.expire_done = len(lines) // 2 if arg is None else max(0, min(int(arg), len(lines)))
        if b.errors:
            b.outcome = "failed"
        provider._batches[b.id] = b
        handler._send_json(200, _oa_batch_obj(b))


def _oa_parse_lines(data: bytes, endpoint: str) -> tuple[list[dict], list[dict], str]:
    """The input lines, the validation errors (OpenAI BatchError dicts), the lines' model."""
    lines: list[dict] = []
    errors: list[dict] = []
    seen: set[str] = set()
    models: set[str] = set()

    def err(code: str, message: str, line: int, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "param": param, "line": line})

    for n, text in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            if not isinstance(line, dict):
                raise ValueError
        except ValueError:
            err("invalid_json_line", "This line is not parseable as valid JSON.", n)
            continue
        missing = [k for k in ("custom_id", "method", "url", "body") if k not in line]
        if missing:
            err("missing_required_parameter", f"Missing required parameter: {missing[0]!r}.",
                n, missing[0])
            continue
        if line["url"] != endpoint:
            err("invalid_url", f"The url {line['url']!r} does not match the batch's endpoint "
                f"{endpoint!r}.", n, "url")
            continue
        if line["custom_id"] in seen:
            err("duplicate_custom_id", "The custom_id for this request is a duplicate of "
                "another request. The custom_id parameter must be unique for each request in "
                "a batch.", n, "custom_id")
            continue
        seen.add(line["custom_id"])
        if isinstance(line["body"], dict) and "model" in line["body"]:
            if models and line["body"]["model"] not in models:
                err("mismatched_model", f"The provided model {line['body']['model']!r} does "
                    "not match the model of other requests in the batch.", n, "body.model")
                continue
            models.add(line["body"]["model"])
        lines.append(line)
    if not lines and not errors:
        errors.append({"code": "empty_file", "message": "The batch input file is empty.",
                       "param": None, "line": None})
    return lines, errors, next(iter(models), "")


def _oa_run(provider, b: StoredBatch, limit: int | None = None) -> None:
    """Run the lines (the first ``limit``; the rest are ``batch_expired``)."""
    results = []
    for i, line in enumerate(b.lines):
        cid = line["custom_id"]
        rid = f"batch_req_{b.id.removeprefix('batch_')}_{i:04d}"
        if limit is not None and i >= limit:
            results.append({"index": i, "error": True, "line": {
                "id": rid, "custom_id": cid, "response": None,
                "error": {"code": "batch_expired", "message": EXPIRED_MESSAGE}}})
            continue
        body = line["body"] if isinstance(line["body"], dict) else {}
        rec = _recorded(provider, OPENAI_ENDPOINTS[b.endpoint], line["url"], b.headers, body,
                        str(body.get("model", "")), b.id, cid)
        status, payload = provider._batch_line(rec)
        if status == 0:
            le = payload if isinstance(payload, LineError) else LineError(
                "server_error", f"bad behaviour {payload!r}")
            results.append({"index": i, "error": True, "line": {
                "id": rid, "custom_id": cid, "response": None,
                "error": {"code": le.code, "message": le.message}}})
            continue
        results.append({"index": i, "error": status >= 400, "line": {
            "id": rid, "custom_id": cid,
            "response": {"status_code": status, "request_id": f"req_{rid[10:]}", "body": payload},
            "error": None}})
    b.results = results


def _recorded(provider, protocol, path, headers, body, model, batch_id, custom_id):
    # ``_recorded_type``: the Recorded class of the provider's own module (fake_providers, or
    # __main__ when it runs as a script); this module imports nothing from it
    return provider._recorded_type(protocol=protocol, path=path, headers=dict(headers),
                                   body=body, model=model, batch_id=batch_id,
                                   custom_id=custom_id)


def _oa_write_files(provider, b: StoredBatch) -> None:
    if b.results is None:
        return
    seed = f"{provider.batch_seed}:{b.id}"
    for is_error in (False, True):
        lines = [r["line"] for r in b.results if r["error"] is is_error]
        if not lines:
            continue
        if not provider.batch_keep_order:
            lines = _shuffled(lines, seed + (":error" if is_error else ":output"))
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        kind = "error" if is_error else "output"
        f = StoredFile(provider._new_id("file-fake"), "openai", f"{b.id}_{kind}.jsonl",
                       "batch_output", data, _now(), _now() + 30 * DAY)
        provider._files[f.id] = f
        if is_error:
            b.error_file_id = f.id
        else:
            b.output_file_id = f.id


def _oa_advance(provider, b: StoredBatch) -> None:
    """One poll (GET) of an OpenAI batch."""
    if b.status in _OPENAI_TERMINAL:
        return
    now = _now()
    b.polls += 1
    t = b.times
    if b.status == "cancelling":
        _oa_write_files(provider, b)
        b.status, t["cancelled"] = "cancelled", now
        return
    if b.outcome == "failed":
        b.status, t["failed"] = "failed", now
        return
    t.setdefault("in_progress", now)
    if b.polls <= b.in_progress_polls:
        b.status = "in_progress"
        return
    if b.outcome == "expired":
        _oa_run(provider, b, limit=b.expire_done)
        _oa_write_files(provider, b)
        b.status, t["expired"] = "expired", now
        return
    if b.results is None:
        _oa_run(provider, b)
        t["finalizing"] = now
    if b.polls <= b.in_progress_polls + b.finalizing_polls:
        b.status = "finalizing"
        return
    _oa_write_files(provider, b)
    b.status, t["completed"] = "completed", now


def _oa_get_batch(handler, provider, b: StoredBatch) -> None:
    _oa_advance(provider, b)
    handler._send_json(200, _oa_batch_obj(b))


def _oa_cancel(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        b = provider._batches.get(unquote(match.group(1)))
        if b is None or b.kind != "openai":
            _oa_error(handler, 404, f"No batch found with id '{match.group(1)}'.", "batch_id")
            return
        if b.status in _OPENAI_TERMINAL:
            _oa_error(handler, 409, f"Cannot cancel a batch with status '{b.status}'.")
            return
        b.status, b.times["cancelling"] = "cancelling", _now()
        handler._send_json(200, _oa_batch_obj(b))


def _oa_list(handler, provider, query, items: list[dict]) -> None:
    after = (query.get("after") or [None])[0]
    limit = int((query.get("limit") or ["20"])[0])
    if after is not None:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1:] if after in ids else []
    page = items[:limit]
    handler._send_json(200, {"object": "list", "data": page,
                             "first_id": page[0]["id"] if page else None,
                             "last_id": page[-1]["id"] if page else None,
                             "has_more": len(items) > limit})


# ======================================================================== Gemini


def _gem_file_obj(provider, f: StoredFile) -> dict:
    generated = f.purpose == "batch_output"
    out = {"name": f"files/{f.id}", "mimeType": f.mime_type, "sizeBytes": str(len(f.data)),
           "createTime": _rfc3339(f.created_at), "updateTime": _rfc3339(f.created_at),
           "expirationTime": _rfc3339(f.expires_at),
           "sha256Hash": base64.b64encode(hashlib.sha256(f.data).hexdigest().encode()).decode(),
           "uri": f"{provider.url}/v1beta/files/{f.id}", "state": "ACTIVE",
           "source": "GENERATED" if generated else "UPLOADED"}
    if f.filename:
        out["displayName"] = f.filename
    if generated:
        out["downloadUri"] = f"{provider.url}/v1beta/files/{f.id}:download?alt=media"
    return out


def _gem_op(b: StoredBatch) -> dict:
    t = b.times
    n = len(b.lines)
    done = b.status in _GEMINI_TERMINAL
    ok = failed = 0
    if b.results is not None:
        failed = sum(r["error"] for r in b.results)
        ok = len(b.results) - failed
    stats = {"requestCount": str(n)}
    if ok:
        stats["successfulRequestCount"] = str(ok)
    if failed:
        stats["failedRequestCount"] = str(failed)
    if n - ok - failed and not done:
        stats["pendingRequestCount"] = str(n - ok - failed)
    md: dict[str, Any] = {"@type": _GEMINI_BATCH_TYPE, "model": b.model}
    if b.display_name is not None:
        md["displayName"] = b.display_name
    md.update({"createTime": _rfc3339(b.created_at),
               "updateTime": _rfc3339(max([b.created_at, *t.values()])),
               "batchStats": stats, "state": b.status, "name": b.id})
    if done:
        md["endTime"] = _rfc3339(t.get("end"))
    op: dict[str, Any] = {"name": b.id, "metadata": md}
    if done:
        op["done"] = True
    output = None
    if b.status == "BATCH_STATE_SUCCEEDED" and b.results is not None:
        if b.output_file_id is not None:
            output = {"responsesFile": f"files/{b.output_file_id}"}
        else:
            output = {"inlinedResponses": {"inlinedResponses": [r["line"] for r in b.results]}}
        md["output"] = output
        op["response"] = {"@type": _GEMINI_OUTPUT_TYPE, **output}
    if b.status == "BATCH_STATE_FAILED":
        first = (b.errors or [{}])[0]
        op["error"] = {"code": 3, "message": first.get("message") or "batch failed"}
    return op


def _gem_create(handler, provider, match, query, raw) -> None:
    try:
        body = json.loads(raw or b"{}")
        batch = body["batch"]
        config = batch["inputConfig"]
    except (ValueError, KeyError, TypeError):
        _gem_error(handler, 400, "batch.inputConfig is required", "INVALID_ARGUMENT")
        return
    model = f"{match.group(1)}/{unquote(match.group(2))}"
    errors: list[dict] = []
    input_file = ""
    with provider._batch_lock:
        if "fileName" in config:
            f = provider._files.get(str(config["fileName"]).removeprefix("files/"))
            if f is None or f.kind != "gemini":
                _gem_error(handler, 404, f"File {config['fileName']} not found.", "NOT_FOUND")
                return
            input_file = f.id
            items = []
            for n, text in enumerate(f.data.decode("utf-8", "replace").splitlines(), 1):
                if not text.strip():
                    continue
                try:
                    item = json.loads(text)
                    if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
                        raise ValueError
                    items.append(item)
                except ValueError:
                    errors.append({"message": f"line {n} is not a {{key, request}} JSON object",
                                   "line": n})
        else:
            items = ((config.get("requests") or {}).get("requests")) or []
            if not items:
                _gem_error(handler, 400, "batch.inputConfig has no requests", "INVALID_ARGUMENT")
                return
        outcome, arg = provider._take_outcome()
        b = StoredBatch(
            id="batches/" + provider._new_id("fakebatch"), kind="gemini", model=model,
            lines=list(items), headers={k.lower(): v for k, v in handler.headers.items()},
            path=handler.path, created_at=_now(), in_progress_polls=provider.batch_polls,
            finalizing_polls=0, display_name=batch.get("displayName"), errors=errors,
            status="BATCH_STATE_PENDING", input_file_id=input_file)
        if outcome == "failed":
            b.outcome, b.errors = "failed", arg
        elif outcome == "expired":
            b.outcome = "expired"
        if b.errors:
            b.outcome = "failed"
        provider._batches[b.id.removeprefix("batches/")] = b
        handler._send_json(200, _gem_op(b))


def _gem_run(provider, b: StoredBatch) -> None:
    results = []
    for i, item in enumerate(b.lines):
        request = item.get("request") if isinstance(item.get("request"), dict) else {}
        metadata = item.get("metadata")
        key = item.get("key") if "key" in item else (metadata or {}).get("key")
        model = str(request.get("model") or b.model)
        model = model.removeprefix("models/").removeprefix("tunedModels/")
        rec = _recorded(provider, "gemini", b.path, b.headers, request, model, b.id,
                        None if key is None else str(key))
        status, payload = provider._batch_line(rec)
        if status == 0:
            le = payload if isinstance(payload, LineError) else LineError(
                13, f"bad behaviour {payload!r}")
            error = {"code": le.code if isinstance(le.code, int) else 13, "message": le.message}
        elif status >= 400:
            err = (payload.get("error") if isinstance(payload, dict) else None) or {}
            message = err.get("message") if isinstance(err, dict) else None
            error = {"code": _GRPC_CODES.get(status, 13 if status >= 500 else 9),
                     "message": message or f"fake error {status}"}
        elif not isinstance(payload, dict):  # a Raw body that is not a JSON object
            error = {"code": 13, "message": f"malformed response: {str(payload)[:80]}"}
        else:
            error = None
        line: dict[str, Any] = {}
        if b.input_file_id:  # file input: {"key", "response" | "error"}
            line["key"] = key
        if error is None:
            line["response"] = payload
        else:
            line["error"] = error
        if metadata is not None and not b.input_file_id:
            line["metadata"] = metadata
        results.append({"index": i, "error": error is not None, "line": line})
    b.results = results
    if b.input_file_id:
        data = "".join(json.dumps(r["line"]) + "\n" for r in results).encode()
        f = StoredFile(f"batch-{b.id.removeprefix('batches/')}", "gemini", "", "batch_output",
                       data, _now(), _now() + 2 * DAY)
        provider._files[f.id] = f
        b.output_file_id = f.id


def _gem_advance(provider, b: StoredBatch) -> None:
    if b.status in _GEMINI_TERMINAL:
        return
    now = _now()
    b.polls += 1
    if b.outcome == "failed":
        b.status, b.times["end"] = "BATCH_STATE_FAILED", now
        return
    b.times.setdefault("start", now)
    if b.polls <= b.in_progress_polls:
        b.status = "BATCH_STATE_RUNNING"
        return
    if b.outcome == "expired":
        b.status, b.times["end"] = "BATCH_STATE_EXPIRED", now
        return
    _gem_run(provider, b)
    b.status, b.times["end"] = "BATCH_STATE_SUCCEEDED", now


def _gem_batch(handler, provider, match) -> StoredBatch | None:
    b = provider._batches.get(unquote(match.group(1)))
    if b is None or b.kind != "gemini":
        _gem_error(handler, 404, f"batches/{match.group(1)} not found", "NOT_FOUND")
        return None
    return b


def _gem_cancel(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        b = _gem_batch(handler, provider, match)
        if b is None:
            return
        if b.status not in _GEMINI_TERMINAL:
            b.status, b.times["end"] = "BATCH_STATE_CANCELLED", _now()
        handler._send_json(200, {})


def _gem_delete_batch(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        if _gem_batch(handler, provider, match) is not None:
            del provider._batches[unquote(match.group(1))]
            handler._send_json(200, {})


def _gem_list(handler, provider, query) -> None:
    size = int((query.get("pageSize") or ["50"])[0])
    start = int((query.get("pageToken") or ["0"])[0] or 0)
    ops = [_gem_op(b) for b in reversed(provider._batches.values()) if b.kind == "gemini"]
    out: dict[str, Any] = {"operations": ops[start:start + size]}
    if start + size < len(ops):
        out["nextPageToken"] = str(start + size)
    handler._send_json(200, out)


def _gem_upload(handler, provider, match, query, raw) -> None:
    command = handler.headers.get("X-Goog-Upload-Command", "").lower()
    with provider._batch_lock:
        if "start" in command:
            try:
                meta = (json.loads(raw or b"{}").get("file")) or {}
            except (ValueError, AttributeError):
                meta = {}
            uid = provider._new_id("upload")
            provider._uploads[uid] = {
                "data": b"", "meta": meta,
                "mime": handler.headers.get("X-Goog-Upload-Header-Content-Type")
                or meta.get("mimeType") or meta.get("mime_type") or "application/octet-stream"}
            url = f"{provider.url}/upload/{match.group(1)}/files?upload_id={uid}" \
                  "&upload_protocol=resumable"
            handler._send(200, b"", headers={"X-Goog-Upload-URL": url,
                                             "X-Goog-Upload-Status": "active"})
            return
        uid = (query.get("upload_id") or [""])[0]
        up = provider._uploads.get(uid)
        if up is None:
            _gem_error(handler, 404, f"no upload {uid!r}", "NOT_FOUND")
            return
        up["data"] += raw
        if "finalize" not in command:
            handler._send(200, b"", headers={"X-Goog-Upload-Status": "active"})
            return
        del provider._uploads[uid]
        name = str(up["meta"].get("name") or "").removeprefix("files/") \
            or provider._new_id("fakefile")
        now = _now()
        display = up["meta"].get("displayName") or up["meta"].get("display_name") or ""
        f = StoredFile(name, "gemini", str(display), "",
                       up["data"], now, now + 2 * DAY, up["mime"])
        provider._files[f.id] = f
        body = json.dumps({"file": _gem_file_obj(provider, f)}).encode()
        handler._send(200, body, headers={"X-Goog-Upload-Status": "final"})


def _gem_download(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        f = provider._files.get(unquote(match.group(1)))
    if f is None or f.kind != "gemini":
        _gem_error(handler, 404, f"files/{match.group(1)} not found", "NOT_FOUND")
        return
    handler._send(200, f.data, content_type="application/octet-stream")


# ======================================================================== shared paths


def _get_file(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        f = provider._files.get(unquote(match.group(1)))
    if f is None:
        if _is_gemini_caller(handler):
            _gem_error(handler, 404, f"files/{match.group(1)} not found", "NOT_FOUND")
        else:
            _oa_error(handler, 404, f"No such File object: {match.group(1)}", "id")
    elif f.kind == "gemini":
        handler._send_json(200, _gem_file_obj(provider, f))
    else:
        handler._send_json(200, _oa_file_obj(f))


def _file_content(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        f = provider._files.get(unquote(match.group(1)))
    if f is None or f.kind != "openai":
        _oa_error(handler, 404, f"No such File object: {match.group(1)}", "id")
        return
    handler._send(200, f.data, content_type="application/octet-stream")


def _delete_file(handler, provider, match, query, raw) -> None:
    fid = unquote(match.group(1))
    with provider._batch_lock:
        f = provider._files.pop(fid, None)
    if f is None:
        if _is_gemini_caller(handler):
            _gem_error(handler, 404, f"files/{fid} not found", "NOT_FOUND")
        else:
            _oa_error(handler, 404, f"No such File object: {fid}", "id")
    elif f.kind == "gemini":
        handler._send_json(200, {})
    else:
        handler._send_json(200, {"id": f.id, "object": "file", "deleted": True})


def _list_files(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        files = list(reversed(provider._files.values()))
    if _is_gemini_caller(handler):
        handler._send_json(200, {"files": [_gem_file_obj(provider, f) for f in files
                                           if f.kind == "gemini"]})
        return
    purpose = (query.get("purpose") or [None])[0]
    _oa_list(handler, provider, query, [_oa_file_obj(f) for f in files if f.kind == "openai"
                                        and purpose in (None, f.purpose)])


def _get_batch(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        b = provider._batches.get(unquote(match.group(1)))
        if b is None:
            if _is_gemini_caller(handler):
                _gem_error(handler, 404, f"batches/{match.group(1)} not found", "NOT_FOUND")
            else:
                _oa_error(handler, 404, f"No batch found with id '{match.group(1)}'.",
                          "batch_id")
        elif b.kind == "gemini":
            _gem_advance(provider, b)
            handler._send_json(200, _gem_op(b))
        else:
            _oa_get_batch(handler, provider, b)


def _list_batches(handler, provider, match, query, raw) -> None:
    with provider._batch_lock:
        if _is_gemini_caller(handler):
            _gem_list(handler, provider, query)
        else:
            items = [_oa_batch_obj(b) for b in reversed(provider._batches.values())
                     if b.kind == "openai"]
            _oa_list(handler, provider, query, items)


_V = r"(?:v1|v1beta|v1alpha|v1beta1)"
_ROUTES = [
    ("POST", re.compile(r"^(?:/v1)?/files$"), _oa_upload),
    ("GET", re.compile(rf"^(?:/{_V})?/files$"), _list_files),
    ("GET", re.compile(rf"^(?:/{_V})?/files/([^/:]+)$"), _get_file),
    ("GET", re.compile(r"^(?:/v1)?/files/([^/:]+)/content$"), _file_content),
    ("DELETE", re.compile(rf"^(?:/{_V})?/files/([^/:]+)$"), _delete_file),
    ("GET", re.compile(rf"^/{_V}/files/([^/:]+):download$"), _gem_download),
    ("POST", re.compile(rf"^/upload/({_V})/files$"), _gem_upload),
    ("POST", re.compile(r"^(?:/v1)?/batches$"), _oa_create),
    ("GET", re.compile(rf"^(?:/{_V})?/batches$"), _list_batches),
    ("GET", re.compile(rf"^(?:/{_V})?/batches/([^/:]+)$"), _get_batch),
    ("POST", re.compile(r"^(?:/v1)?/batches/([^/:]+)/cancel$"), _oa_cancel),
    ("POST", re.compile(rf"^/{_V}/batches/([^/:]+):cancel$"), _gem_cancel),
    ("DELETE", re.compile(rf"^/{_V}/batches/([^/:]+)$"), _gem_delete_batch),
    ("POST", re.compile(rf"^/{_V}/(models|tunedModels)/([^/:]+):batchGenerateContent$"),
     _gem_create),
]


def route(handler, method: str, raw: bytes = b"") -> bool:
    """Serve ``handler``'s request if it is a batch-API call (recorded in
    ``provider.batch_calls``); False if no route matches."""
    parts = urlsplit(handler.path)
    path = parts.path.rstrip("/") or "/"
    for verb, pattern, serve in _ROUTES:
        if verb == method and (match := pattern.match(path)):
            provider = handler.server.provider
            with provider._batch_lock:
                provider.batch_calls.append((method, handler.path))
            serve(handler, provider, match, parse_qs(parts.query), raw)
            return True
    return False
