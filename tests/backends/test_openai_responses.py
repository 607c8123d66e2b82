"""The openai-responses backend (OpenAI's Responses API) against the fake provider on
127.0.0.1, through the real ``openai`` SDK: request body (input layout, decoding, reasoning
effort and summaries, structured output), reading the reply (text, reasoning summaries, usage,
finish_reason), the failure kinds and their retries, an end-to-end run, and no key on disk."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from fake_providers import Error, FakeProvider, Raw, Recorded, Reply
from helpers import (
    assert_failed,
    assert_secret_not_on_disk,
    image_request,
    module_loop,
    read_journal,
    unused_port,
)

import unseen
from unseen.backends import BackendConfigError, Reliable, make_backend, providers
from unseen.engine.types import Decoding, ImagePart, Message, Request, TextPart

FAST = {"backoff_base_s": 0.01}
MODEL = "gpt-5-mini"


@pytest.fixture(autouse=True)
def _no_ambient_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ask(fp, shared_backends):
    """``await ask(request, model=, max_attempts=)``: one reliable call on a bare backend
    shared within the module (keyed by model)."""

    async def call(request: Request, model: str = MODEL, max_attempts: int = 6,
                   timeout_s: float = 30.0):
        key = (model, timeout_s)
        if key not in shared_backends:
            shared_backends[key] = make_backend(f"openai-responses:{model}", api_key="sk-test",
                                                base_url=fp.openai_base_url, timeout_s=timeout_s)
        backend = Reliable(shared_backends[key], timeout_s=timeout_s,
                           max_attempts=max_attempts, **FAST)
        return await backend.complete(request)

    return call


def image_bytes(body: dict) -> list[bytes]:
    """The bytes of every input_image part of a Responses request body."""
    out = []
    for item in body["input"]:
        content = item["content"]
        for part in [] if isinstance(content, str) else content:
            if part["type"] == "input_image":
                head, _, b64 = part["image_url"].partition(",")
                assert head == "data:image/png;base64"
                out.append(base64.b64decode(b64))
    return out


def response_body(output: list, status: str = "completed", **extra) -> bytes:
    return json.dumps({"id": "resp_x", "object": "response", "created_at": 0, "model": "m",
                       "status": status, "output": output, **extra}).encode()


def message_item(text: str) -> dict:
    return {"id": "msg_x", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


# ------------------------------------------------------------------------ registration


def test_registered_and_listed(run_main):
    assert "openai-responses" in providers()
    code, out, _ = run_main(["backends"])
    assert code == 0 and "openai-responses" in out


def test_config_errors(monkeypatch):
    with pytest.raises(BackendConfigError, match="OPENAI_API_KEY"):
        make_backend("openai-responses:gpt-5-mini")
    with pytest.raises(BackendConfigError, match="needs a model"):
        make_backend("openai-responses:", api_key="sk-x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    backend = make_backend("openai-responses:gpt-5-mini")
    desc = backend.describe()
    assert desc["provider"] == "openai-responses" and desc["model"] == "gpt-5-mini"
    assert desc["spec"] == "openai-responses:gpt-5-mini"
    assert desc["base_url"] == "http://127.0.0.1:1/v1"
    assert "sk-SECRET-env" not in json.dumps(desc) and "sk-SECRET-env" not in repr(backend)
    assert backend.capabilities.reasoning and backend.capabilities.json_schema


# ------------------------------------------------------------------------ request shape


@module_loop
async def test_reasoning_summary_and_text_come_back(fp, instances, ask):
    fp.default = Reply('{"box": [1, 2, 3, 4]}',
                       reasoning="The knob is behind the chair.\n\nSo the box is small.",
                       prompt_tokens=321, completion_tokens=45, reasoning_tokens=40,
                       cached_tokens=300)
    reply = await ask(image_request(instances[0], Decoding(reasoning_effort="medium")))
    assert reply.ok
    assert reply.text == '{"box": [1, 2, 3, 4]}'
    # two summary_text parts, joined by a blank line
    assert reply.reasoning == "The knob is behind the chair.\n\nSo the box is small."
    assert reply.usage.input_tokens == 321
    assert reply.usage.output_tokens == 45
    assert reply.usage.reasoning_tokens == 40
    assert reply.usage.cached_input_tokens == 300  # usage.input_tokens_details.cached_tokens
    assert reply.finish_reason == "stop"
    assert reply.latency_s > 0 and not reply.cached
    rec = fp.requests[0]
    assert rec.protocol == "openai-responses" and rec.path == "/v1/responses"
    assert rec.headers["authorization"] == "Bearer sk-test"
    assert rec.body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert rec.body["store"] is False


@module_loop
async def test_summaries_of_several_reasoning_items_are_joined(fp, instances, ask):
    reasoning = [{"id": f"rs_{i}", "type": "reasoning",
                  "summary": [{"type": "summary_text", "text": t} for t in texts]}
                 for i, texts in enumerate([["first"], [], ["second", "third"]])]
    fp.default = Raw(response_body([reasoning[0], reasoning[1], message_item("B"), reasoning[2]]))
    reply = await ask(image_request(instances[0]))
    assert reply.ok and reply.text == "B"
    assert reply.reasoning == "first\n\nsecond\n\nthird"
    assert reply.usage.input_tokens == 0  # no usage in that body: zeros, not a failure


@module_loop
async def test_no_reasoning_item_means_no_reasoning(fp, instances, ask):
    fp.default = Reply("A")
    reply = await ask(image_request(instances[0]))
    assert reply.ok and reply.text == "A" and reply.reasoning is None
    assert "reasoning" not in fp.requests[0].body  # no effort asked: nothing sent


@pytest.mark.parametrize("model", ["gpt-5-mini", "o4-mini"])
@module_loop
async def test_reasoning_models_drop_temperature_and_seed(model, fp, instances, ask):
    decoding = Decoding(temperature=0.0, seed=3, max_tokens=640, reasoning_effort="low")
    assert (await ask(image_request(instances[0], decoding), model=model)).ok
    body = fp.requests[0].body
    assert body["model"] == model
    assert "temperature" not in body and "seed" not in body
    assert body["max_output_tokens"] == 640
    for absent in ("max_tokens", "max_completion_tokens", "reasoning_effort", "messages"):
        assert absent not in body
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}


@module_loop
async def test_gpt4o_keeps_temperature_and_gets_no_reasoning(fp, instances, ask):
    decoding = Decoding(temperature=0.0, seed=7, reasoning_effort="medium")
    assert (await ask(image_request(instances[0], decoding), model="gpt-4o")).ok
    body = fp.requests[0].body
    assert body["temperature"] == 0
    assert "seed" not in body  # the Responses API has no seed
    assert "reasoning" not in body  # gpt-4o rejects a reasoning parameter


@module_loop
async def test_effort_none_asks_for_no_summary(fp, instances, ask):
    assert (await ask(image_request(instances[0], Decoding(reasoning_effort="none")))).ok
    assert fp.requests[0].body["reasoning"] == {"effort": "none"}


@module_loop
async def test_two_turn_dialogue_input_layout(fp, instances, ask):
    inst = instances[0]
    request = Request(messages=[
        Message(role="system", parts=[TextPart(text="You locate things.")]),
        Message(role="user", parts=[ImagePart(path=inst.image), TextPart(text="Where is it?")]),
        Message(role="assistant", parts=[TextPart(text='{"box": [1, 2, 3, 4]}')]),
        Message(role="user", parts=[TextPart(text="Are you sure?")]),
    ])
    assert (await ask(request)).ok
    body = fp.requests[0].body
    assert image_bytes(body) == [Path(inst.image).read_bytes()]
    system, first, answer, second = body["input"]
    assert system == {"role": "system", "content": "You locate things."}
    assert first["role"] == "user"
    assert [p["type"] for p in first["content"]] == ["input_image", "input_text"]
    assert first["content"][0]["detail"] == "high"  # the stated default (DEFAULT_DETAIL)
    assert first["content"][1] == {"type": "input_text", "text": "Where is it?"}
    # prior assistant turns go as plain text, never as input_text parts
    assert answer == {"role": "assistant", "content": '{"box": [1, 2, 3, 4]}'}
    assert second == {"role": "user", "content": [{"type": "input_text", "text": "Are you sure?"}]}


@module_loop
async def test_json_schema_format(fp, instances, ask):
    schema = {"type": "object",
              "properties": {"box": {"type": "array", "items": {"type": "number"}}},
              "required": ["box"], "additionalProperties": False}
    assert (await ask(image_request(instances[0], Decoding(json_schema=schema)))).ok
    body = fp.requests[0].body
    assert body["text"] == {"format": {"type": "json_schema", "name": "answer",
                                       "schema": schema, "strict": True}}
    assert "response_format" not in body


@module_loop
async def test_choices_format(fp, instances, ask):
    fp.default = Reply('{"choice": "B"}')
    reply = await ask(image_request(instances[0], Decoding(choices=["A", "B"])))
    assert reply.ok and reply.text == '{"choice": "B"}'
    fmt = fp.requests[0].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True and fmt["name"] == "choice"
    assert fmt["schema"]["properties"]["choice"]["enum"] == ["A", "B"]
    assert fmt["schema"]["required"] == ["choice"]
    assert fmt["schema"]["additionalProperties"] is False


# ------------------------------------------------------------------- finish and usage


@pytest.mark.parametrize("finish", ["length", "content_filter"])
@module_loop
async def test_incomplete_finish_reason_and_usage(finish, fp, instances, ask):
    fp.default = Reply('{"box": [1, 2', reasoning="cut short", finish_reason=finish,
                       prompt_tokens=100, completion_tokens=64, reasoning_tokens=60)
    reply = await ask(image_request(instances[0], Decoding(max_tokens=64)))
    assert reply.ok and reply.text == '{"box": [1, 2'
    assert reply.finish_reason == finish
    assert reply.reasoning == "cut short"
    assert (reply.usage.input_tokens, reply.usage.output_tokens,
            reply.usage.reasoning_tokens) == (100, 64, 60)


@module_loop
async def test_reasoning_only_when_cut_short_is_a_length_stop_not_retried(fp, instances, ask):
    """Cut at max_output_tokens while reasoning: no answer text, and asked again it stops at
    the same limit, so it is the reply (finish_reason length, the strategy's reason
    ``length``), never an ``empty`` failure retried (issue 23: cut replies are their own
    reason)."""
    body = response_body([{"id": "rs", "type": "reasoning",
                           "summary": [{"type": "summary_text", "text": "thinking"}]}],
                         status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    fp.default = Raw(body)
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert reply.ok and reply.text == "" and reply.cut
    assert reply.finish_reason == "length" and reply.reasoning == "thinking"
    assert len(fp.requests) == 1


# ------------------------------------------------------------------ failures and retries


@module_loop
async def test_429_is_retried(fp, instances, ask):
    fp.script(Error(429), Error(429, headers={"Retry-After": "0.2"}), Reply("ok"))
    t0 = time.perf_counter()
    reply = await ask(image_request(instances[0]), max_attempts=4)
    assert reply.ok and reply.text == "ok"
    assert len(fp.requests) == 3
    assert time.perf_counter() - t0 >= 0.2  # Retry-After honoured


@module_loop
async def test_429_quota_exhausted_is_not_retried(fp, instances, ask):
    fp.default = Error(429, body={"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
    reply = await ask(image_request(instances[0]), max_attempts=5)
    assert_failed(reply, "quota", status=429, attempts=1)
    assert len(fp.requests) == 1


@pytest.mark.parametrize("status", [400, 401])
@module_loop
async def test_4xx_is_client_error_not_retried(status, fp, instances, ask):
    fp.default = Error(status)
    reply = await ask(image_request(instances[0]), max_attempts=4)
    assert_failed(reply, "client", status=status, attempts=1)
    assert len(fp.requests) == 1


@module_loop
async def test_500_retried_then_success(fp, instances, ask):
    fp.script(Error(500), Error(503))
    fp.default = Reply("fine")
    reply = await ask(image_request(instances[0]), max_attempts=3)
    assert reply.ok and reply.text == "fine"
    assert len(fp.requests) == 3


@module_loop
async def test_slow_reply_times_out(fp, instances, ask):
    fp.default = Reply("late", delay=2.0)
    reply = await ask(image_request(instances[0]), max_attempts=1, timeout_s=0.3)
    assert_failed(reply, "timeout", attempts=1)  # else "late" would have come, 2 s later


@module_loop
async def test_connection_refused_is_connection_error(instances):
    url = f"http://127.0.0.1:{unused_port()}/v1"
    backend = unseen.connect("openai-responses:gpt-5-mini", api_key="sk-test", base_url=url,
                             max_attempts=2, **FAST)
    try:
        reply = await backend.complete(image_request(instances[0]))
    finally:
        await backend.aclose()
    assert_failed(reply, "connection", attempts=2)


@pytest.mark.parametrize(
    "raw",
    [
        Raw(b"not json"),
        Raw(b"<html>bad gateway</html>", content_type="text/plain"),
        Raw(b"[1, 2]"),
        Raw(b'{"object": "response", "status": "completed"}'),
        Raw(b'{"object": "response", "status": "completed", "output": null}'),
        Raw(b'{"object": "response", "status": "completed", "output": [1]}'),
        Raw(response_body([{"type": "message", "content": "text"}])),
        Raw(response_body([{"type": "message", "content": [{"type": "output_text"}]}])),
        Raw(response_body([message_item("x")], status="in_progress")),
    ],
    ids=["not-json", "text-plain", "list", "no-output", "output-null", "output-items",
         "content-str", "part-no-text", "in-progress"],
)
@module_loop
async def test_malformed_body_is_retried_then_typed(raw, fp, instances, ask):
    fp.default = raw
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "malformed", attempts=2)
    assert len(fp.requests) == 2


@pytest.mark.parametrize(
    "raw",
    [Raw(response_body([])),
     Raw(response_body([message_item("  \n")])),
     Raw(response_body([{"id": "m", "type": "message", "role": "assistant",
                         "content": [{"type": "refusal", "refusal": "I can't help."}]}]))],
    ids=["no-items", "blank", "refusal"],
)
@module_loop
async def test_no_text_is_typed_empty(raw, fp, instances, ask):
    fp.default = raw
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "empty", attempts=2)
    assert len(fp.requests) == 2


@pytest.mark.parametrize("code, kind, attempts", [("server_error", "server", 2),
                                                  ("invalid_prompt", "client", 1)])
@module_loop
async def test_failed_response(code, kind, attempts, fp, instances, ask):
    fp.default = Raw(response_body([], status="failed",
                                   error={"code": code, "message": "it broke"}))
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert_failed(reply, kind, attempts=attempts)
    assert code in reply.error.message and "it broke" in reply.error.message


# ------------------------------------------------------------ end to end, no key on disk

SECRET = "sk-SECRET-responses-123"


def test_run_keeps_reasoning_and_never_writes_the_key(fp, sample_data, instances, tmp_path,
                                                      monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    failing = Path(instances[2].image).read_bytes()

    def behave(rec: Recorded):
        if image_bytes(rec.body) == [failing]:
            return Error(400)  # an error message lands in the journal too
        return Reply('{"box": [100, 100, 500, 500]}', reasoning="Behind the door.",
                     reasoning_tokens=5)

    fp.default = behave
    cache_dir = tmp_path / "cache"
    spec = "openai-responses:gpt-5-mini"
    for name in ("run1", "run2"):
        res = unseen.run(sample_data, ["direct"], [spec], out=tmp_path / name,
                         base_url=fp.openai_base_url, limit=3, cache=True, cache_dir=cache_dir,
                         progress=False, max_attempts=1, **FAST)
        assert res.done == 3 and res.answered == 2
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in fp.requests)
    assert all(r.path == "/v1/responses" for r in fp.requests)
    assert len(fp.requests) == 3 + 1  # the second run came from the cache, bar the failure
    first = read_journal(tmp_path / "run1")
    answered = [r for r in first if r["status"] == "answered"]
    assert len(answered) == 2
    for row in answered:
        assert row["backend"] == spec and row["model"] == "gpt-5-mini"
        assert row["steps"][0]["reply"]["reasoning"] == "Behind the door."
        assert row["steps"][0]["reply"]["usage"]["reasoning_tokens"] == 5
    second = read_journal(tmp_path / "run2")
    assert sum(r["steps"][0]["reply"]["cached"] for r in second) == 2
    assert_secret_not_on_disk(SECRET, tmp_path / "run1", tmp_path / "run2", cache_dir)


def test_fake_provider_standalone_responses_shape():
    """The fake's reply parses with the SDK's own Response model, strictly."""
    import openai
    from openai.types.responses import Response

    with FakeProvider(Reply("hi", reasoning="a\n\nb", finish_reason="length")) as fp:
        client = openai.OpenAI(base_url=fp.openai_base_url, api_key="x", max_retries=0)
        try:
            raw = client.responses.with_raw_response.create(model="m", input="q")
            resp = Response.model_validate(raw.http_response.json())
        finally:
            client.close()
    assert resp.output_text == "hi"
    assert resp.status == "incomplete" and resp.incomplete_details.reason == "max_output_tokens"
    assert [s.text for s in resp.output[0].summary] == ["a", "b"]


# ------------------------------------------------- vLLM's reasoning effort (openai_chat)


@module_loop
async def test_vllm_sends_reasoning_effort_top_level(fp, instances, shared_backends):
    key = ("vllm", fp.url)
    if key not in shared_backends:
        shared_backends[key] = make_backend(f"vllm:Qwen/Qwen3-VL-8B@{fp.url}",
                                            enable_thinking=False)
    backend = Reliable(shared_backends[key], max_attempts=1, **FAST)
    assert (await backend.complete(image_request(instances[0],
                                                 Decoding(reasoning_effort="medium")))).ok
    body = fp.requests[0].body
    assert fp.requests[0].path == "/v1/chat/completions"
    assert body["reasoning_effort"] == "medium"
    # an explicit thinking switch still goes in chat_template_kwargs, where vLLM lets it win
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
