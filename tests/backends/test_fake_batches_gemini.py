"""The real google-genai SDK against the fake Gemini batch jobs (tests/fake_batches_gemini.py;
loopback only). No test sleeps: a batch moves one step per poll."""

from __future__ import annotations

import io
import json

import fake_providers
import pytest
from fake_batch_checks import (
    CHAT,
    MAX_POLLS,
    assert_strict,
    chat_line,
    gc,
    http,
    jsonl,
    parse_jsonl,
    soa,
)
from fake_batches import LineError
from fake_providers import Error, Reply
from google import genai
from google.genai import batches as genai_batches
from google.genai import types

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


