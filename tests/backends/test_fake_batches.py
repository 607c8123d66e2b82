"""The real openai and google-genai SDKs against the batch APIs of tests/fake_providers.py
(tests/fake_batches.py; loopback only). No test sleeps: a batch moves one step per poll."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import types as pytypes
import typing
import urllib.error
import urllib.request

import fake_batches
import fake_providers
import openai
import pydantic
import pytest
from fake_batches import LineError
from fake_providers import Error, FakeProvider, Raw, Recorded, Reply
from google import genai
from google.genai import batches as genai_batches
from google.genai import types
from openai.types import Batch, FileDeleted, FileObject
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

MAX_POLLS = 10  # every polling loop is bounded

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"


# ------------------------------------------------------------------ helpers


def chat_line(i: int, model: str = "gpt-x") -> dict:
    return {"custom_id": f"req-{i}", "method": "POST", "url": CHAT,
            "body": {"model": model, "messages": [{"role": "user", "content": f"q{i}"}],
                     "temperature": 0}}


def responses_line(i: int, model: str = "gpt-x") -> dict:
    return {"custom_id": f"resp-{i}", "method": "POST", "url": RESPONSES,
            "body": {"model": model, "input": f"q{i}", "max_output_tokens": 50}}


def jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def parse_jsonl(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def aoa(fp: FakeProvider) -> openai.AsyncOpenAI:
    # _strict_response_validation: the client validates every reply as its type (by default
    # it builds them unvalidated), so each drive below also checks the fake's objects
    return openai.AsyncOpenAI(base_url=fp.openai_base_url, api_key="test", max_retries=0,
                              _strict_response_validation=True)


def soa(fp: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.openai_base_url, api_key="test", max_retries=0,
                         _strict_response_validation=True)


def gc(fp: FakeProvider, **kw) -> genai.Client:
    # keep the client referenced while calling it (see test_fake_providers.gc)
    return genai.Client(api_key="test", http_options=types.HttpOptions(
        base_url=fp.gemini_base_url, timeout=5000, **kw))


def http(fp: FakeProvider, method: str, path: str, body: dict | None = None,
         gemini: bool = False) -> tuple[int, dict]:
    """A raw call, for the JSON exactly as the server sent it."""
    headers = {"x-goog-api-key": "test"} if gemini else {"Authorization": "Bearer test"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(fp.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _models_in(annotation) -> list[type[pydantic.BaseModel]]:
    """The pydantic model classes an annotation names (through Optional, list, dict, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def assert_strict(cls: type[pydantic.BaseModel], data: dict, where: str = "") -> None:
    """``data`` validates as ``cls`` with no key the model lacks and every required field,
    checked at every level (openai's models keep unknown keys as extras, and both SDKs build
    replies without refusing them: see fake_batches' docstring)."""
    where = where or cls.__name__
    by_key: dict[str, typing.Any] = {}
    for name, info in cls.model_fields.items():
        by_key[name] = info
        if info.alias:
            by_key[info.alias] = info
    extra = set(data) - set(by_key)
    assert not extra, f"{where}: keys {sorted(extra)} are not fields of {cls.__name__}"
    missing = [name for name, info in cls.model_fields.items() if info.is_required()
               and name not in data and (info.alias or name) not in data]
    assert not missing, f"{where}: required fields {missing} missing"
    cls.model_validate(data)
    for key, value in data.items():
        models = _models_in(by_key[key].annotation)
        if not models:
            continue
        items = value if isinstance(value, list) else [value]
        for n, item in enumerate(items):
            if isinstance(item, dict):
                assert_strict(models[0], item, f"{where}.{key}[{n}]")


async def run_openai_batch(fp: FakeProvider, client: openai.AsyncOpenAI, lines: list[dict],
                           endpoint: str = CHAT, **create) -> tuple[Batch, list[str]]:
    """files.create -> batches.create -> batches.retrieve until it ends: (batch, statuses)."""
    f = await client.files.create(file=("in.jsonl", jsonl(lines)), purpose="batch")
    batch = await client.batches.create(input_file_id=f.id, endpoint=endpoint,
                                        completion_window="24h", **create)
    statuses = [batch.status]
    for _ in range(MAX_POLLS):
        batch = await client.batches.retrieve(batch.id)
        statuses.append(batch.status)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch, statuses
    raise AssertionError(f"batch still {batch.status} after {MAX_POLLS} polls")


async def content(client: openai.AsyncOpenAI, file_id: str | None) -> list[dict]:
    assert file_id is not None
    return parse_jsonl((await client.files.content(file_id)).content)


def normalized(body: dict) -> dict:
    """A reply body without what differs between two calls: ids and clocks."""
    out = json.loads(json.dumps(body))
    for key in ("id", "created", "created_at", "completed_at"):
        out.pop(key, None)
    for item in out.get("output", []):
        item.pop("id", None)
    return out


# ------------------------------------------------------------ OpenAI: types


def test_openai_objects_validate_strictly_as_the_sdk_types(fp):
    fp.batch_polls, fp.batch_finalizing_polls = 1, 1
    fp.script(Reply("a"), Error(429))
    with soa(fp) as client:
        raw = client.files.with_raw_response.create(file=("in.jsonl", jsonl(
            [chat_line(0), chat_line(1)])), purpose="batch")
        file_json = raw.http_response.json()
        assert_strict(FileObject, file_json)
        assert set(file_json) == set(FileObject.model_fields)  # as OpenAI sends: every field
        assert http(fp, "GET", f"/v1/files/{file_json['id']}")[1] == file_json

        _, created = http(fp, "POST", "/v1/batches", {
            "input_file_id": file_json["id"], "endpoint": CHAT, "completion_window": "24h",
            "metadata": {"run": "t1"}})
        seen = [created]
        for _ in range(MAX_POLLS):
            status, obj = http(fp, "GET", f"/v1/batches/{created['id']}")
            assert status == 200
            seen.append(obj)
            if obj["status"] == "completed":
                break
        assert [o["status"] for o in seen] == ["validating", "in_progress", "finalizing",
                                               "completed"]
        for obj in seen:
            assert_strict(Batch, obj)
            assert set(obj) == set(Batch.model_fields)
        done = seen[-1]
        assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
        assert done["metadata"] == {"run": "t1"}
        assert done["model"] == "gpt-x"
        assert done["created_at"] <= done["in_progress_at"] <= done["finalizing_at"] \
            <= done["completed_at"] < done["expires_at"]
        assert done["usage"]["input_tokens"] == 11 and done["usage"]["total_tokens"] == 18
        for fid in (done["output_file_id"], done["error_file_id"]):
            out = http(fp, "GET", f"/v1/files/{fid}")[1]
            assert_strict(FileObject, out)
            assert out["purpose"] == "batch_output"

        _, listed = http(fp, "GET", "/v1/batches")
        assert [b["id"] for b in listed["data"]] == [created["id"]]
        assert_strict(Batch, listed["data"][0])
        _, files = http(fp, "GET", "/v1/files?purpose=batch")
        assert [f["id"] for f in files["data"]] == [file_json["id"]]

        deleted = client.files.with_raw_response.delete(file_json["id"]).http_response.json()
        assert_strict(FileDeleted, deleted)
        assert deleted == {"id": file_json["id"], "object": "file", "deleted": True}
        with pytest.raises(openai.NotFoundError):
            client.files.retrieve(file_json["id"])


def test_openai_upload_fields(fp):
    """files.create's multipart fields: the filename of a (name, bytes) tuple, and
    ``expires_after`` sent as ``expires_after[anchor]`` / ``expires_after[seconds]``."""
    with soa(fp) as client:
        f = client.files.create(file=("mine.jsonl", b"{}\n"), purpose="batch",
                                expires_after={"anchor": "created_at", "seconds": 3600})
        default = client.files.create(file=("other.jsonl", b"{}\n"), purpose="batch")
        assert client.files.content(f.id).content == b"{}\n"
    assert (f.filename, f.bytes, f.purpose) == ("mine.jsonl", 3, "batch")
    assert f.expires_at == f.created_at + 3600
    assert default.expires_at == default.created_at + 30 * 86400  # batch files: 30 days


def test_strict_check_catches_extra_and_missing_fields():
    good = {"id": "f", "object": "file", "deleted": True}
    assert_strict(FileDeleted, good)
    with pytest.raises(AssertionError, match="not fields"):
        assert_strict(FileDeleted, {**good, "surprise": 1})
    with pytest.raises(AssertionError, match="missing"):
        assert_strict(FileDeleted, {"id": "f", "object": "file"})
    with pytest.raises(AssertionError, match=r"request_counts\[0\]"):
        assert_strict(Batch, {"id": "b", "object": "batch", "endpoint": CHAT,
                              "input_file_id": "f", "completion_window": "24h",
                              "created_at": 0, "status": "completed",
                              "request_counts": {"total": 1, "completed": 1, "failed": 0,
                                                 "x": 1}})
    # google-genai's models refuse unknown keys (JobError has no ``status``) in model_validate,
    # but the SDK builds them with _from_response, which first drops such keys silently
    job = {"name": "batches/b", "dest": {"inlined_responses": [
        {"error": {"code": 8, "message": "m", "status": "RESOURCE_EXHAUSTED"}}]}}
    with pytest.raises(pydantic.ValidationError, match="status"):
        assert_strict(types.BatchJob, json.loads(json.dumps(job)))
    built = types.BatchJob._from_response(response=job, kwargs={})
    assert built.dest.inlined_responses[0].error.code == 8
    assert job["dest"]["inlined_responses"][0]["error"] == {"code": 8, "message": "m"}
    assert_strict(types.GenerateContentResponseUsageMetadata, {"promptTokenCount": 1})


# ------------------------------------------------------------ OpenAI: SDK drives


async def test_openai_sdk_drive_chat_completions(fp):
    fp.script(Reply("first", reasoning="hm", reasoning_tokens=3), Reply("second"))
    async with aoa(fp) as client:
        batch, statuses = await run_openai_batch(fp, client, [chat_line(0), chat_line(1)])
        assert statuses == ["validating", "in_progress", "in_progress", "finalizing",
                            "completed"]
        assert batch.request_counts.model_dump() == {"completed": 2, "failed": 0, "total": 2}
        assert batch.error_file_id is None
        assert batch.usage.output_tokens_details.reasoning_tokens == 3
        out = await content(client, batch.output_file_id)
    by_id = {line["custom_id"]: line for line in out}
    assert set(by_id) == {"req-0", "req-1"}
    for line in out:
        assert set(line) == {"id", "custom_id", "response", "error"}
        assert line["error"] is None
        assert line["response"]["status_code"] == 200
        assert line["response"]["request_id"].startswith("req_")
    first = ChatCompletion.model_validate(by_id["req-0"]["response"]["body"])
    assert first.choices[0].message.content == "first"
    assert first.choices[0].message.model_extra["reasoning_content"] == "hm"
    assert first.model == "gpt-x"
    second = ChatCompletion.model_validate(by_id["req-1"]["response"]["body"])
    assert second.choices[0].message.content == "second"


async def test_openai_sdk_drive_responses(fp):
    fp.batch_polls, fp.batch_finalizing_polls = 0, 0
    fp.script(Reply("one", reasoning="para 1\n\npara 2"), Reply("two", finish_reason="length"))
    async with aoa(fp) as client:
        batch, statuses = await run_openai_batch(
            fp, client, [responses_line(0), responses_line(1)], endpoint=RESPONSES)
        assert statuses == ["validating", "completed"]
        assert batch.endpoint == RESPONSES
        out = await content(client, batch.output_file_id)
    by_id = {line["custom_id"]: Response.model_validate(line["response"]["body"])
             for line in out}
    assert by_id["resp-0"].output_text == "one"
    assert [s.text for s in by_id["resp-0"].output[0].summary] == ["para 1", "para 2"]
    assert by_id["resp-1"].status == "incomplete"
    assert by_id["resp-1"].incomplete_details.reason == "max_output_tokens"
    assert [r.protocol for r in fp.requests] == ["openai-responses"] * 2


@pytest.mark.parametrize(("url", "make_line"), [(CHAT, chat_line), (RESPONSES, responses_line)])
def test_a_batched_reply_is_the_synchronous_body(fp, url, make_line):
    reply = Reply("same", reasoning="why", reasoning_tokens=2, served_model="gpt-x-2025",
                  system_fingerprint="fp_1")
    fp.batch_polls, fp.batch_finalizing_polls = 0, 0
    fp.default = reply
    line = make_line(0)
    status, sync_body = http(fp, "POST", url, line["body"])
    assert status == 200
    with soa(fp) as client:
        f = client.files.create(file=("in.jsonl", jsonl([line])), purpose="batch")
        batch = client.batches.create(input_file_id=f.id, endpoint=url, completion_window="24h")
        batch = client.batches.retrieve(batch.id)
        (out,) = parse_jsonl(client.files.content(batch.output_file_id).content)
    assert normalized(out["response"]["body"]) == normalized(sync_body)
    sync_rec, batch_rec = fp.requests
    assert sync_rec.body == batch_rec.body and sync_rec.protocol == batch_rec.protocol


async def test_openai_output_order_is_not_input_order(fp):
    fp.batch_polls, fp.batch_finalizing_polls = 0, 0
    lines = [chat_line(i) for i in range(8)]
    in_order = [line["custom_id"] for line in lines]
    async with aoa(fp) as client:
        batch, _ = await run_openai_batch(fp, client, lines)
        got = [line["custom_id"] for line in await content(client, batch.output_file_id)]
        again = [line["custom_id"] for line in await content(client, batch.output_file_id)]
        assert got != in_order and sorted(got) == sorted(in_order)
        assert again == got
        # the lines still RAN in input order: the script is consumed line by line
        assert [r.custom_id for r in fp.requests] == in_order

        # two lines: a shuffle that happens to keep the order is reversed
        batch, _ = await run_openai_batch(fp, client, lines[:2])
        got = [line["custom_id"] for line in await content(client, batch.output_file_id)]
        assert got == ["req-1", "req-0"]

        fp.batch_keep_order = True
        batch, _ = await run_openai_batch(fp, client, lines)
        got = [line["custom_id"] for line in await content(client, batch.output_file_id)]
        assert got == in_order


def test_output_order_is_deterministic_by_seed():
    """The same seed and batch id give the same order on another server; another seed,
    another order."""

    def order(seed: int) -> list[str]:
        with FakeProvider() as fp, soa(fp) as client:
            fp.batch_polls, fp.batch_finalizing_polls, fp.batch_seed = 0, 0, seed
            f = client.files.create(file=("in.jsonl", jsonl([chat_line(i) for i in range(10)])),
                                    purpose="batch")
            batch = client.batches.create(input_file_id=f.id, endpoint=CHAT,
                                          completion_window="24h")
            batch = client.batches.retrieve(batch.id)
            return [x["custom_id"] for x in
                    parse_jsonl(client.files.content(batch.output_file_id).content)]

    assert order(0) == order(0)
    assert order(0) != order(1)


async def test_openai_expired_batch_keeps_part_of_its_results(fp):
    fp.batch_polls = 1
    fp.expire_next_batch(done=2)
    async with aoa(fp) as client:
        batch, statuses = await run_openai_batch(fp, client, [chat_line(i) for i in range(5)])
        assert statuses == ["validating", "in_progress", "expired"]
        assert batch.expired_at is not None and batch.completed_at is None
        assert batch.request_counts.model_dump() == {"total": 5, "completed": 2, "failed": 3}
        out = await content(client, batch.output_file_id)
        err = await content(client, batch.error_file_id)
    assert sorted(line["custom_id"] for line in out) == ["req-0", "req-1"]
    assert sorted(line["custom_id"] for line in err) == ["req-2", "req-3", "req-4"]
    for line in err:
        assert line["response"] is None
        assert line["error"]["code"] == "batch_expired"
        assert line["error"]["message"] == fake_batches.EXPIRED_MESSAGE
    # the requests that never ran were not recorded, and took no behaviour
    assert [r.custom_id for r in fp.requests] == ["req-0", "req-1"]

    # the next batch is not expired; without ``done`` half the lines run
    async with aoa(fp) as client:
        batch, _ = await run_openai_batch(fp, client, [chat_line(0)])
        assert batch.status == "completed"
        fp.expire_next_batch()
        batch, _ = await run_openai_batch(fp, client, [chat_line(i) for i in range(4)])
        assert (batch.status, batch.request_counts.completed) == ("expired", 2)


async def test_openai_failed_batch(fp):
    fp.fail_next_batch([{"code": "token_limit_exceeded", "message": "too many tokens",
                         "line": None, "param": None}])
    async with aoa(fp) as client:
        batch, statuses = await run_openai_batch(fp, client, [chat_line(0)])
        assert statuses == ["validating", "failed"]
        assert batch.failed_at is not None and batch.in_progress_at is None
        assert batch.errors.data[0].code == "token_limit_exceeded"
        assert batch.errors.data[0].message == "too many tokens"
        assert (batch.output_file_id, batch.error_file_id) == (None, None)
        assert batch.request_counts.model_dump() == {"total": 0, "completed": 0, "failed": 0}
    assert fp.requests == []


async def test_openai_input_that_does_not_validate_fails_the_batch(fp):
    bad = jsonl([chat_line(0)]) + b"{not json\n" + jsonl([
        {**chat_line(2), "url": RESPONSES}, chat_line(0), chat_line(4, model="other")])
    async with aoa(fp) as client:
        f = await client.files.create(file=("in.jsonl", bad), purpose="batch")
        batch = await client.batches.create(input_file_id=f.id, endpoint=CHAT,
                                            completion_window="24h")
        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "failed"
        assert [(e.code, e.line) for e in batch.errors.data] == [
            ("invalid_json_line", 2), ("invalid_url", 3), ("duplicate_custom_id", 4),
            ("mismatched_model", 5)]
        with pytest.raises(openai.NotFoundError):
            await client.batches.create(input_file_id="file-none", endpoint=CHAT,
                                        completion_window="24h")
        with pytest.raises(openai.BadRequestError):
            await client.batches.create(input_file_id=f.id, endpoint="/v1/embeddings",
                                        completion_window="24h")
    assert fp.requests == []


async def test_openai_partial_error_file(fp):
    fp.batch_polls, fp.batch_finalizing_polls = 0, 0
    custom = {"error": {"message": "bad image", "type": "invalid_request_error",
                        "param": "messages", "code": "invalid_image"}}
    fp.script(Reply("fine"), Error(429), Error(400, body=custom), LineError("server_error",
              "the model crashed"), Raw(b'{"weird": true}'))
    async with aoa(fp) as client:
        batch, _ = await run_openai_batch(fp, client, [chat_line(i) for i in range(5)])
        assert batch.status == "completed"
        assert batch.request_counts.model_dump() == {"total": 5, "completed": 2, "failed": 3}
        out = {x["custom_id"]: x for x in await content(client, batch.output_file_id)}
        err = {x["custom_id"]: x for x in await content(client, batch.error_file_id)}
    assert set(out) == {"req-0", "req-4"} and set(err) == {"req-1", "req-2", "req-3"}
    assert out["req-4"]["response"]["body"] == {"weird": True}
    assert err["req-1"]["error"] is None
    assert err["req-1"]["response"]["status_code"] == 429
    assert err["req-1"]["response"]["body"]["error"]["type"] == "rate_limit_exceeded"
    assert err["req-2"]["response"] == {"status_code": 400, "body": custom,
                                        "request_id": err["req-2"]["response"]["request_id"]}
    assert err["req-3"]["response"] is None
    assert err["req-3"]["error"] == {"code": "server_error", "message": "the model crashed"}


async def test_openai_behaviours_and_recording_through_batches(fp):
    fp.batch_polls, fp.batch_finalizing_polls = 0, 0
    seen: list[Recorded] = []

    def behave(rec: Recorded) -> Reply:
        seen.append(rec)
        return Reply(f"answer to {rec.custom_id}: {rec.body['messages'][0]['content']}")

    def broken(rec: Recorded) -> Reply:
        raise RuntimeError("bug in the test's callable")

    fp.script(behave, broken)
    fp.default = behave
    async with aoa(fp) as client:
        batch, _ = await run_openai_batch(fp, client, [chat_line(i) for i in range(3)],
                                          metadata={"k": "v"})
        out = {x["custom_id"]: x for x in await content(client, batch.output_file_id)}
        err = {x["custom_id"]: x for x in await content(client, batch.error_file_id)}
    texts = {cid: x["response"]["body"]["choices"][0]["message"]["content"]
             for cid, x in out.items()}
    assert texts == {"req-0": "answer to req-0: q0", "req-2": "answer to req-2: q2"}
    assert err["req-1"]["response"]["status_code"] == 500
    assert "bug in the test's callable" in err["req-1"]["response"]["body"]["error"]["message"]

    assert [r.custom_id for r in fp.requests] == ["req-0", "req-1", "req-2"]
    for rec in fp.requests:
        assert (rec.protocol, rec.path, rec.model, rec.batch_id) == (
            "openai", CHAT, "gpt-x", batch.id)
        assert rec.headers["authorization"] == "Bearer test"
        assert rec.body["temperature"] == 0
    assert seen == [fp.requests[0], fp.requests[2]]
    assert fp.batch_calls == [
        ("POST", "/v1/files"), ("POST", "/v1/batches"), ("GET", f"/v1/batches/{batch.id}"),
        ("GET", f"/v1/files/{batch.output_file_id}/content"),
        ("GET", f"/v1/files/{batch.error_file_id}/content")]


def test_synchronous_requests_are_unchanged_and_not_batch_calls(fp):
    fp.script(Reply("sync"), LineError())
    with soa(fp) as client:
        resp = client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                    "content": "x"}])
        assert resp.choices[0].message.content == "sync"
        with pytest.raises(openai.InternalServerError):  # a LineError is for batches only
            client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                 "content": "x"}])
    assert [r.batch_id for r in fp.requests] == [None, None]
    assert fp.batch_calls == []
    assert http(fp, "GET", "/v1/nothing/here")[0] == 404
    assert http(fp, "DELETE", "/v1/nothing")[0] == 404


async def test_openai_cancel(fp):
    fp.batch_polls = 3
    async with aoa(fp) as client:
        f = await client.files.create(file=("in.jsonl", jsonl([chat_line(0)])), purpose="batch")
        batch = await client.batches.create(input_file_id=f.id, endpoint=CHAT,
                                            completion_window="24h")
        assert (await client.batches.retrieve(batch.id)).status == "in_progress"
        cancelling = await client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        cancelled = await client.batches.retrieve(batch.id)
        assert cancelled.status == "cancelled" and cancelled.cancelled_at is not None
        assert (cancelled.output_file_id, cancelled.error_file_id) == (None, None)
        with pytest.raises(openai.ConflictError):
            await client.batches.cancel(batch.id)
        with pytest.raises(openai.NotFoundError):
            await client.batches.retrieve("batch_none")
    assert fp.requests == []


async def test_openai_list_pages_through_every_batch(fp):
    async with aoa(fp) as client:
        f = await client.files.create(file=("in.jsonl", jsonl([chat_line(0)])), purpose="batch")
        ids = [(await client.batches.create(input_file_id=f.id, endpoint=CHAT,
                                            completion_window="24h")).id for _ in range(3)]
        listed = [b.id async for b in client.batches.list(limit=2)]
    assert listed == ids[::-1]  # newest first
    assert [c for c in fp.batch_calls if c[1].startswith("/v1/batches?")] == [
        ("GET", "/v1/batches?limit=2"), ("GET", f"/v1/batches?limit=2&after={ids[1]}")]


def test_reset_forgets_batches_and_restores_settings(fp):
    fp.batch_polls, fp.batch_seed, fp.batch_keep_order = 7, 3, True
    fp.expire_next_batch()
    with soa(fp) as client:
        f = client.files.create(file=("in.jsonl", jsonl([chat_line(0)])), purpose="batch")
    fp.reset()
    assert (fp.batch_polls, fp.batch_finalizing_polls, fp.batch_seed, fp.batch_keep_order) \
        == (2, 1, 0, False)
    assert fp.batch_calls == [] and fp.batch_files == {}
    assert http(fp, "GET", f"/v1/files/{f.id}")[0] == 404
    assert fp._next_outcome is None


# ------------------------------------------------------------ Gemini

GEMINI_REQUESTS = [
    {"contents": [{"role": "user", "parts": [{"text": "Where is the cat?"}]}],
     "config": {"temperature": 0, "system_instruction": "Answer briefly."},
     "metadata": {"key": "cat"}},
    {"contents": "Where is the dog?", "metadata": {"key": "dog"}},
    {"contents": "Where is the bird?"},
]

OPERATION_KEYS = {"name", "metadata", "done", "error", "response"}
# google.ai.generativelanguage GenerateContentBatch, as the Operation's metadata
BATCH_KEYS = {"@type", "model", "name", "displayName", "inputConfig", "output", "createTime",
              "endTime", "updateTime", "batchStats", "state", "priority"}
STATS_KEYS = {"requestCount", "successfulRequestCount", "failedRequestCount",
              "pendingRequestCount"}
STATES = {"BATCH_STATE_UNSPECIFIED", "BATCH_STATE_PENDING", "BATCH_STATE_RUNNING",
          "BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED",
          "BATCH_STATE_EXPIRED"}


def assert_gemini_operation(op: dict) -> types.BatchJob:
    """The wire Operation has only the API's keys, and what the SDK makes of it validates
    strictly as ``types.BatchJob``."""
    assert set(op) <= OPERATION_KEYS
    md = op["metadata"]
    assert set(md) <= BATCH_KEYS and md["state"] in STATES
    assert set(md["batchStats"]) <= STATS_KEYS
    assert all(isinstance(v, str) for v in md["batchStats"].values())  # int64 as strings
    if "output" in md:
        assert set(md["output"]) <= {"inlinedResponses", "responsesFile"}
        assert op["response"]["@type"].endswith("GenerateContentBatchOutput")
        for item in md["output"].get("inlinedResponses", {}).get("inlinedResponses", []):
            assert set(item) <= {"response", "error", "metadata"}
            assert set(item.get("error", {})) <= {"code", "message", "details"}
    converted = genai_batches._BatchJob_from_mldev(json.loads(json.dumps(op)))
    assert_strict(types.BatchJob, converted)
    return types.BatchJob.model_validate(converted)


async def test_gemini_sdk_drive_inline_requests(fp):
    fp.script(Reply("on the sofa", reasoning="looked around", reasoning_tokens=2), Error(429),
              Reply("in the tree"))
    client = gc(fp)
    job = await client.aio.batches.create(model="gemini-x", src=GEMINI_REQUESTS,
                                          config={"display_name": "pets"})
    assert job.name.startswith("batches/")
    assert (job.state, job.display_name, job.model) == (
        types.JobState.JOB_STATE_PENDING, "pets", "models/gemini-x")
    states = [job.state]
    for _ in range(MAX_POLLS):
        job = await client.aio.batches.get(name=job.name)
        states.append(job.state)
        if job.state == types.JobState.JOB_STATE_SUCCEEDED:
            break
    assert [s.value for s in states] == ["JOB_STATE_PENDING", "JOB_STATE_RUNNING",
                                         "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    assert job.create_time <= job.end_time == job.update_time
    assert job.start_time is None  # GenerateContentBatch has no startTime
    first, second, third = job.dest.inlined_responses  # in input order
    assert first.response.text == "on the sofa"
    assert first.response.candidates[0].content.parts[0].thought is True
    assert first.response.usage_metadata.thoughts_token_count == 2
    assert first.metadata == {"key": "cat"}
    assert second.response is None
    assert (second.error.code, second.error.message) == (8, "fake error 429")
    assert second.metadata == {"key": "dog"}
    assert third.response.text == "in the tree" and third.metadata is None

    assert [(r.protocol, r.batch_id, r.custom_id, r.model) for r in fp.requests] == [
        ("gemini", job.name, "cat", "gemini-x"), ("gemini", job.name, "dog", "gemini-x"),
        ("gemini", job.name, None, "gemini-x")]
    rec = fp.requests[0]
    assert rec.body["contents"] == [{"role": "user", "parts": [{"text": "Where is the cat?"}]}]
    assert rec.body["generationConfig"] == {"temperature": 0.0}
    assert rec.body["systemInstruction"]["parts"] == [{"text": "Answer briefly."}]
    assert rec.headers["x-goog-api-key"] == "test"
    assert rec.path == "/v1/models/gemini-x:batchGenerateContent"

    listed = [j.name async for j in await client.aio.batches.list()]
    assert listed == [job.name]
    bid = job.name.removeprefix("batches/")
    assert fp.batch_calls == [("POST", "/v1/models/gemini-x:batchGenerateContent")] + [
        ("GET", f"/v1/batches/{bid}")] * 3 + [("GET", "/v1/batches")]


def test_gemini_wire_objects_validate_strictly(fp):
    fp.batch_polls = 1
    fp.script(Reply("ok"), Error(503), LineError(4, "deadline"))
    body = {"batch": {"displayName": "d", "inputConfig": {"requests": {"requests": [
        {"request": {"contents": [{"parts": [{"text": "q"}]}]}, "metadata": {"key": str(i)}}
        for i in range(3)]}}}}
    status, op = http(fp, "POST", "/v1beta/models/gemini-x:batchGenerateContent", body,
                      gemini=True)
    assert status == 200
    ops = [op]
    for _ in range(MAX_POLLS):
        ops.append(http(fp, "GET", f"/v1beta/{op['name']}", gemini=True)[1])
        if ops[-1].get("done"):
            break
    assert [o["metadata"]["state"] for o in ops] == [
        "BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"]
    jobs = [assert_gemini_operation(o) for o in ops]
    assert "done" not in ops[0] and ops[-1]["done"] is True
    assert ops[0]["metadata"]["batchStats"] == {"requestCount": "3", "pendingRequestCount": "3"}
    assert ops[-1]["metadata"]["batchStats"] == {"requestCount": "3",
                                                 "successfulRequestCount": "1",
                                                 "failedRequestCount": "2"}
    errors = [r.error for r in jobs[-1].dest.inlined_responses]
    assert errors[0] is None
    assert (errors[1].code, errors[2].code, errors[2].message) == (14, 4, "deadline")
    assert ops[-1]["response"]["inlinedResponses"] == ops[-1]["metadata"]["output"][
        "inlinedResponses"]
    response = ops[-1]["metadata"]["output"]["inlinedResponses"]["inlinedResponses"][0]
    assert response["response"] == {**fake_providers._gemini_reply(
        Reply("ok"), "gemini-x", 0), "responseId": response["response"]["responseId"]}

    _, listed = http(fp, "GET", "/v1beta/batches?pageSize=1", gemini=True)
    assert [o["name"] for o in listed["operations"]] == [op["name"]]
    assert "nextPageToken" not in listed
    assert_strict(types.ListBatchJobsResponse,
                  genai_batches._ListBatchJobsResponse_from_mldev(listed))


def test_gemini_expired_failed_cancelled_deleted(fp):
    fp.batch_polls = 0
    client = gc(fp)

    fp.expire_next_batch(done=2)
    job = client.batches.create(model="gemini-x", src=GEMINI_REQUESTS)
    job = client.batches.get(name=job.name)
    assert job.state == types.JobState.JOB_STATE_EXPIRED
    assert job.dest is None and job.end_time is not None  # an expired job has no results
    assert fp.requests == []

    fp.fail_next_batch([{"code": "invalid", "message": "the input is invalid"}])
    job = client.batches.create(model="gemini-x", src=GEMINI_REQUESTS)
    job = client.batches.get(name=job.name)
    assert job.state == types.JobState.JOB_STATE_FAILED
    assert job.error is None  # the SDK drops the Operation's error (module docstring)
    _, op = http(fp, "GET", f"/v1/{job.name}", gemini=True)
    assert op["error"] == {"code": 3, "message": "the input is invalid"}
    assert_gemini_operation(op)

    fp.batch_polls = 2
    job = client.batches.create(model="gemini-x", src=GEMINI_REQUESTS)
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    client.batches.cancel(name=job.name)
    job = client.batches.get(name=job.name)
    assert job.state == types.JobState.JOB_STATE_CANCELLED and job.dest is None
    assert fp.requests == []

    names = [j.name for j in client.batches.list(config={"page_size": 2})]
    assert len(names) == 3 and names[0] == job.name  # newest first, over two pages
    client.batches.delete(name=job.name)
    with pytest.raises(genai.errors.ClientError) as ei:
        client.batches.get(name=job.name)
    assert ei.value.code == 404
    with pytest.raises(ValueError, match="Invalid batch job name"):
        client.batches.get(name="not-a-batch-name")


def test_gemini_file_input_and_output(fp):
    fp.batch_polls = 1
    fp.script(Reply("first"), Error(500), Reply("third"))
    lines = [{"key": f"k{i}", "request": {"contents": [{"parts": [{"text": f"q{i}"}]}]}}
             for i in range(3)]
    client = gc(fp, api_version="v1beta")
    uploaded = client.files.upload(file=io.BytesIO(jsonl(lines)),
                                   config={"mime_type": "application/jsonl",
                                           "display_name": "batch input"})
    assert uploaded.name.startswith("files/") and uploaded.display_name == "batch input"
    assert uploaded.size_bytes == len(jsonl(lines))
    assert client.files.get(name=uploaded.name).name == uploaded.name
    assert_strict(types.File, http(fp, "GET", f"/v1beta/{uploaded.name}", gemini=True)[1])

    job = client.batches.create(model="gemini-x", src=uploaded.name)
    for _ in range(MAX_POLLS):
        job = client.batches.get(name=job.name)
        if job.state == types.JobState.JOB_STATE_SUCCEEDED:
            break
    assert job.dest.inlined_responses is None
    assert job.dest.file_name.startswith("files/batch-")
    out = parse_jsonl(client.files.download(file=job.dest.file_name))
    assert [line["key"] for line in out] == ["k0", "k1", "k2"]  # input order
    assert out[0]["response"]["candidates"][0]["content"]["parts"][0]["text"] == "first"
    assert out[1] == {"key": "k1", "error": {"code": 13, "message": "fake error 500"}}
    generated = client.files.get(name=job.dest.file_name)
    assert generated.source == types.FileSource.GENERATED and generated.download_uri
    assert [r.custom_id for r in fp.requests] == ["k0", "k1", "k2"]
    client.files.delete(name=uploaded.name)
    with pytest.raises(genai.errors.ClientError):
        client.files.get(name=uploaded.name)
    calls = [c[1].split("?")[0] for c in fp.batch_calls]
    assert calls[:2] == ["/upload/v1beta/files", "/upload/v1beta/files"]
    assert "/v1beta/models/gemini-x:batchGenerateContent" in calls

    # a file whose lines are not {key, request} objects fails the job, running nothing
    bad = client.files.upload(file=io.BytesIO(b'{"key": "a"}\nnot json\n'),
                              config={"mime_type": "application/jsonl"})
    job = client.batches.create(model="gemini-x", src=bad.name)
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_FAILED
    assert len(fp.requests) == 3
    with pytest.raises(genai.errors.ClientError):
        client.batches.create(model="gemini-x", src="files/none")


def test_one_namespace_two_providers(fp):
    """/v1/files and /v1/batches serve both SDKs: each object answers in its own shape."""
    fp.batch_polls = fp.batch_finalizing_polls = 0
    client = gc(fp)
    job = client.batches.create(model="gemini-x", src=GEMINI_REQUESTS[:1])
    with soa(fp) as oclient:
        f = oclient.files.create(file=("in.jsonl", jsonl([chat_line(0)])), purpose="batch")
        batch = oclient.batches.create(input_file_id=f.id, endpoint=CHAT,
                                       completion_window="24h")
        assert [b.id for b in oclient.batches.list()] == [batch.id]
        assert oclient.batches.retrieve(batch.id).status == "completed"
    assert [j.name for j in client.batches.list()] == [job.name]
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED
    assert {r.protocol for r in fp.requests} == {"gemini", "openai"}


def test_batches_served_by_the_script(tmp_path):
    """``python tests/fake_providers.py`` (the module as __main__) serves batches too."""
    proc = subprocess.Popen([sys.executable, fake_providers.__file__, "--port", "0", "--text",
                             "scripted"], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        with openai.OpenAI(base_url=url + "/v1", api_key="t", max_retries=0, timeout=5) as c:
            f = c.files.create(file=("in.jsonl", jsonl([chat_line(0)])), purpose="batch")
            batch = c.batches.create(input_file_id=f.id, endpoint=CHAT, completion_window="24h")
            for _ in range(MAX_POLLS):
                batch = c.batches.retrieve(batch.id)
                if batch.status == "completed":
                    break
            (line,) = parse_jsonl(c.files.content(batch.output_file_id).content)
        assert line["response"]["body"]["choices"][0]["message"]["content"] == "scripted"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_fake_batches_imports_nothing_from_fake_providers():
    """fake_batches is imported BY fake_providers (also when that runs as a script, as
    __main__), so it must not import it back."""
    names = {v.__name__ for v in vars(fake_batches).values() if isinstance(v, pytypes.ModuleType)}
    assert "fake_providers" not in names
    assert FakeProvider._recorded_type is Recorded


def test_strict_response_validation_refuses_a_reply_of_the_wrong_shape(fp):
    """What ``_strict_response_validation=True`` (used by every drive here) buys: a reply that
    does not validate raises instead of being built as is."""
    fp.script(Raw(b'{"choices": "not a list"}'), Raw(b'{"choices": "not a list"}'))
    messages = [{"role": "user", "content": "x"}]
    with soa(fp) as client, pytest.raises(openai.APIResponseValidationError):
        client.chat.completions.create(model="m", messages=messages)
    with openai.OpenAI(base_url=fp.openai_base_url, api_key="t", max_retries=0) as lax:
        assert lax.chat.completions.create(model="m", messages=messages).choices == "not a list"
