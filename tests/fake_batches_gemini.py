"""The fake Gemini batch-job endpoints (see fake_batches for what they implement)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import unquote

from fake_batch_store import (
    _GEMINI_BATCH_TYPE,
    _GEMINI_OUTPUT_TYPE,
    _GEMINI_TERMINAL,
    _GRPC_CODES,
    DAY,
    LineError,
    StoredBatch,
    StoredFile,
    _gem_error,
    _now,
    _rfc3339,
)
from fake_batches_openai import _recorded


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


