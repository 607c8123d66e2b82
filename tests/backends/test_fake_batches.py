"""The real openai and google-genai SDKs against the batch APIs of tests/fake_providers.py
(tests/fake_batches.py; loopback only). No test sleeps: a batch moves one step per poll."""

from __future__ import annotations

import json
import subprocess
import sys
import types as pytypes

import fake_batches
import fake_providers
import openai
import pydantic
import pytest
from fake_batch_checks import (
    CHAT,
    MAX_POLLS,
    RESPONSES,
    aoa,
    assert_strict,
    chat_line,
    content,
    http,
    jsonl,
    normalized,
    parse_jsonl,
    responses_line,
    run_openai_batch,
    soa,
)
from fake_batches import LineError
from fake_providers import Error, FakeProvider, Raw, Recorded, Reply
from google.genai import types
from openai.types import Batch, FileDeleted, FileObject
from openai.types.chat import ChatCompletion
from openai.types.responses import Response


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
