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
      goes there as ``{"response": null, "error": {"code", "message"}}``; a :class:`Dropped`
      line goes to neither (a batch that lost it; counted failed). A file is made
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

import re
from urllib.parse import parse_qs, unquote, urlsplit

from fake_batch_store import (  # the first four re-exported: the tests take them from here
    EXPIRED_MESSAGE,
    BatchesMixin,
    Dropped,
    LineError,
    _gem_error,
    _is_gemini_caller,
    _oa_error,
)
from fake_batches_gemini import (
    _gem_advance,
    _gem_cancel,
    _gem_create,
    _gem_delete_batch,
    _gem_download,
    _gem_file_obj,
    _gem_list,
    _gem_op,
    _gem_upload,
)
from fake_batches_openai import (
    _oa_batch_obj,
    _oa_cancel,
    _oa_create,
    _oa_file_obj,
    _oa_get_batch,
    _oa_list,
    _oa_upload,
)

__all__ = ["EXPIRED_MESSAGE", "BatchesMixin", "Dropped", "LineError", "route"]


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
