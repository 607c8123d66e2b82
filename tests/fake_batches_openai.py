"""The fake OpenAI Files + Batches endpoints (see fake_batches for what they implement)."""

from __future__ import annotations

import json
from urllib.parse import unquote

from fake_batch_store import (
    _OPENAI_TERMINAL,
    DAY,
    EXPIRED_MESSAGE,
    OPENAI_ENDPOINTS,
    Dropped,
    LineError,
    StoredBatch,
    StoredFile,
    _int,
    _multipart,
    _now,
    _oa_error,
    _shuffled,
)


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
        if status == 0 and isinstance(payload, Dropped):
            results.append({"index": i, "error": True, "dropped": True,
                            "line": {"custom_id": cid}})
            continue
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
        lines = [r["line"] for r in b.results if r["error"] is is_error and not r.get("dropped")]
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


