"""The openai backend (OpenAI Chat Completions) and the vllm backend (vLLM's OpenAI-compatible
server) against the fake provider on 127.0.0.1: request shape, decoding mappings, reasoning
and usage, the failure kinds and their retries, an end-to-end run, and no key on disk."""

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
    complete_once,
    hand_dist,
    hand_iou,
    image_request,
    module_loop,
    read_journal,
    unused_port,
)

import unseen
from unseen.backends import Reliable, make_backend
from unseen.engine.types import Decoding, Request
from unseen.strategies.prompts import box_format_text

FAST = {"backoff_base_s": 0.01}
KINDS = ["openai", "vllm"]
VLLM_MODEL = "Qwen/Qwen3-VL-8B"


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _no_ambient_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def spec_of(kind: str, fp: FakeProvider, model: str | None = None) -> str:
    if kind == "openai":
        return f"openai:{model or 'gpt-4o'}"
    fp.serve(model or VLLM_MODEL)
    return f"vllm:{model or VLLM_MODEL}@{fp.url}"


def connect(kind: str, fp: FakeProvider, model: str | None = None, **kw):
    """``unseen.connect`` for ``kind`` against the fake server."""
    kw = {**FAST, **kw}
    if kind == "openai":
        kw.setdefault("api_key", "sk-test")
        kw.setdefault("base_url", fp.openai_base_url)
    return unseen.connect(spec_of(kind, fp, model), **kw)


def spec_and_url(kind: str, fp: FakeProvider) -> tuple[str, str | None]:
    """Backend spec and ``base_url`` for ``unseen.run``."""
    if kind == "openai":
        return "openai:gpt-4o", fp.openai_base_url
    fp.serve(VLLM_MODEL)
    return f"vllm:{VLLM_MODEL}@{fp.url}", None


@pytest.fixture
def ask(fp, shared_backends):
    """``await ask(kind, request, model=, max_attempts=, timeout_s=)``: one reliable call, as
    ``unseen.connect`` would make it, on a bare backend shared within the module (keyed by
    spec and timeout)."""

    async def call(kind: str, request: Request, model: str | None = None,
                   max_attempts: int = 6, timeout_s: float = 30.0):
        key = (spec_of(kind, fp, model), timeout_s)
        if key not in shared_backends:
            opts = {"api_key": "sk-test", "base_url": fp.openai_base_url} if kind == "openai" else {}
            shared_backends[key] = make_backend(key[0], timeout_s=timeout_s, **opts)
        backend = Reliable(shared_backends[key], timeout_s=timeout_s, max_attempts=max_attempts,
                           **FAST)
        return await backend.complete(request)

    return call


def image_bytes(body: dict) -> list[bytes]:
    """The bytes of every image part of an OpenAI chat request body."""
    out = []
    for msg in body["messages"]:
        content = msg["content"]
        if isinstance(content, str):
            continue
        for part in content:
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                head, _, b64 = url.partition(",")
                assert head == "data:image/png;base64"
                out.append(base64.b64decode(b64))
    return out


def prompt_of(body: dict) -> str:
    texts = []
    for msg in body["messages"]:
        content = msg["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [p["text"] for p in content if p["type"] == "text"]
    return "\n".join(texts)


# ------------------------------------------------------------------------ request shape


@pytest.mark.parametrize("kind", KINDS)
def test_direct_request_shape(kind, fp, sample_data, instances, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # each in the key its profile asks for: gpt-4o {"box"} 0-1000, Qwen3-VL {"bbox_2d"} 0-1000
    key, convention_name = ("box", "norm1000") if kind == "openai" else ("bbox_2d", "qwen3")
    fp.default = Reply(json.dumps({key: [100, 200, 300, 400]}))
    spec, base_url = spec_and_url(kind, fp)
    res = unseen.run(sample_data, ["direct"], [spec], out=tmp_path / "run", base_url=base_url,
                     limit=1, cache=False, progress=False, **FAST)
    assert res.done == 1 and res.answered == 1
    assert len(fp.requests) == 1
    rec = fp.requests[0]
    assert rec.protocol == "openai" and rec.path == "/v1/chat/completions"
    body = rec.body
    inst = instances[0]
    assert body["model"] == ("gpt-4o" if kind == "openai" else VLLM_MODEL)
    assert rec.headers["authorization"] == ("Bearer sk-test" if kind == "openai" else "Bearer EMPTY")
    # exactly one image, the dataset's file byte for byte
    assert image_bytes(body) == [Path(inst.image).read_bytes()]
    prompt = prompt_of(body)
    assert inst.text["instruction"] in prompt
    convention = box_format_text(convention_name, inst.width, inst.height)
    assert convention in prompt and "0-1000" in convention
    # deterministic decoding, nothing else asked for
    assert body["temperature"] == 0
    assert body["seed"] == 0
    for absent in ("max_tokens", "max_completion_tokens", "response_format", "structured_outputs",
                   "reasoning_effort", "logprobs"):
        assert absent not in body
    # the journal keeps the prompt that was sent
    (traj,) = read_journal(tmp_path / "run")
    assert traj["steps"][0]["prompt"] == prompt
    assert traj["steps"][0]["images"][0]["path"] == inst.image
    assert traj["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0])


def test_box_format_override_changes_prompt_and_reading(fp, sample_data, instances, tmp_path,
                                                        monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "run",
               base_url=fp.openai_base_url, limit=1, cache=False, progress=False,
               box_format="pixel", **FAST)
    prompt = prompt_of(fp.requests[0].body)
    assert box_format_text("pixel", 640, 480) in prompt
    assert "640 pixels wide and 480 pixels high" in prompt
    assert "0-1000" not in prompt
    (traj,) = read_journal(tmp_path / "run")
    assert traj["prediction"] == pytest.approx([100.0, 200.0, 300.0, 400.0])


@pytest.mark.parametrize("model", ["gpt-5-mini", "o4-mini"])
@module_loop
async def test_reasoning_models_drop_temperature_and_seed(model, fp, instances, ask):
    decoding = Decoding(temperature=0.0, seed=0, max_tokens=64, reasoning_effort="low")
    reply = await ask("openai", image_request(instances[0], decoding), model=model)
    assert reply.ok
    body = fp.requests[0].body
    assert body["model"] == model
    assert "temperature" not in body
    assert "seed" not in body
    assert body["max_completion_tokens"] == 64
    assert body["reasoning_effort"] == "low"


@module_loop
async def test_openai_gpt4o_sends_temperature_seed_and_effort(fp, instances, ask):
    decoding = Decoding(temperature=0.0, seed=7, reasoning_effort="medium")
    assert (await ask("openai", image_request(instances[0], decoding))).ok
    body = fp.requests[0].body
    assert body["temperature"] == 0 and body["seed"] == 7
    assert body["reasoning_effort"] == "medium"


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_each_sample_its_own_seed(kind, fp, instances, ask):
    """Samples of one request are separate draws: the seed sent is seed + sample (before,
    every sample went out with the same seed, one draw five times at temperature > 0)."""
    decoding = Decoding(temperature=0.7, seed=7)
    for sample in (0, 1, 4):
        req = image_request(instances[0], decoding).model_copy(update={"sample": sample})
        assert (await ask(kind, req)).ok
    assert [r.body["seed"] for r in fp.requests] == [7, 8, 11]


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_max_tokens_mapping(kind, fp, instances, ask):
    reply = await ask(kind, image_request(instances[0], Decoding(max_tokens=123)))
    assert reply.ok
    body = fp.requests[0].body
    if kind == "openai":
        assert body["max_completion_tokens"] == 123
        assert "max_tokens" not in body
    else:
        assert body["max_tokens"] == 123
        assert "max_completion_tokens" not in body


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_choices_mapping(kind, fp, instances, ask):
    fp.default = Reply('{"choice": "B"}' if kind == "openai" else "B")
    reply = await ask(kind, image_request(instances[0], Decoding(choices=["A", "B"])))
    assert reply.ok
    body = fp.requests[0].body
    if kind == "openai":
        rf = body["response_format"]
        assert rf["type"] == "json_schema"
        assert rf["json_schema"]["strict"] is True
        schema = rf["json_schema"]["schema"]
        assert schema["properties"]["choice"]["enum"] == ["A", "B"]
        assert schema["required"] == ["choice"]
        assert schema["additionalProperties"] is False
        assert "structured_outputs" not in body
    else:
        # extra_body is merged into the JSON body
        assert body["structured_outputs"] == {"choice": ["A", "B"]}
        assert "response_format" not in body


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_json_schema_mapping(kind, fp, instances, ask):
    schema = {
        "type": "object",
        "properties": {"box": {"type": "array", "items": {"type": "number"}}},
        "required": ["box"],
        "additionalProperties": False,
    }
    reply = await ask(kind, image_request(instances[0], Decoding(json_schema=schema)))
    assert reply.ok
    rf = fp.requests[0].body["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["schema"] == schema
    assert rf["json_schema"]["strict"] is True
    assert isinstance(rf["json_schema"]["name"], str) and rf["json_schema"]["name"]


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_reasoning_and_usage(kind, fp, instances, ask):
    fp.default = Reply('{"box": [1, 2, 3, 4]}', reasoning="The knob is behind the chair.",
                       prompt_tokens=321, completion_tokens=45, reasoning_tokens=40,
                       cached_tokens=256, finish_reason="length")
    reply = await ask(kind, image_request(instances[0]))
    assert reply.ok
    assert reply.text == '{"box": [1, 2, 3, 4]}'
    assert reply.reasoning == "The knob is behind the chair."
    assert reply.usage.input_tokens == 321
    assert reply.usage.output_tokens == 45
    assert reply.usage.reasoning_tokens == 40
    # usage.prompt_tokens_details.cached_tokens: the part of the prompt the cache served
    assert reply.usage.cached_input_tokens == 256
    assert reply.finish_reason == "length"
    assert reply.latency_s > 0
    assert not reply.cached


def _completion_body(message: dict) -> bytes:
    return json.dumps({
        "id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }).encode()


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@module_loop
async def test_vllm_reasoning_field_either_name(field, fp, instances, ask):
    fp.default = Raw(_completion_body(
        {"role": "assistant", "content": "B", field: "thinking it over"}))
    reply = await ask("vllm", image_request(instances[0]))
    assert reply.ok and reply.text == "B"
    assert reply.reasoning == "thinking it over"
    assert reply.usage.input_tokens == 5 and reply.usage.reasoning_tokens == 0
    assert reply.usage.cached_input_tokens == 0  # no prompt_tokens_details: none cached


# ------------------------------------------------------------------ failures and retries


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_429_retry_after_is_honoured(kind, fp, instances, ask):
    fp.script(Error(429, headers={"Retry-After": "1"}), Reply("ok"))
    t0 = time.perf_counter()
    reply = await ask(kind, image_request(instances[0]), max_attempts=3)
    elapsed = time.perf_counter() - t0
    assert reply.ok and reply.text == "ok"
    assert len(fp.requests) == 2
    assert elapsed >= 0.9  # backoff_base_s is 0.01: only Retry-After explains the wait
    # (how long it waits, exactly: test_reliable's fake clock; no upper wall-clock bound here)


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_429_rate_limit_without_retry_after_is_retried(kind, fp, instances, ask):
    fp.script(Error(429), Error(429), Reply("ok"))
    reply = await ask(kind, image_request(instances[0]), max_attempts=4)
    assert reply.ok and reply.text == "ok"
    assert len(fp.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_429_quota_exhausted_is_not_retried(kind, fp, instances, ask):
    fp.default = Error(429, body={"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
    reply = await ask(kind, image_request(instances[0]), max_attempts=5)
    assert_failed(reply, "quota", status=429, attempts=1)
    assert len(fp.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_500_retried_up_to_max_attempts(kind, fp, instances, ask):
    fp.default = Error(500)
    reply = await ask(kind, image_request(instances[0]), max_attempts=3)
    assert_failed(reply, "server", status=500, attempts=3)
    assert len(fp.requests) == 3
    assert reply.text == ""


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_500_then_success(kind, fp, instances, ask):
    fp.script(Error(500), Error(503))
    fp.default = Reply("fine")
    reply = await ask(kind, image_request(instances[0]), max_attempts=3)
    assert reply.ok and reply.text == "fine"
    assert len(fp.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [400, 401])
@module_loop
async def test_4xx_is_client_error_not_retried(kind, status, fp, instances, ask):
    fp.default = Error(status)
    reply = await ask(kind, image_request(instances[0]), max_attempts=4)
    assert_failed(reply, "client", status=status, attempts=1)
    assert len(fp.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_slow_reply_times_out(kind, fp, instances):
    fp.default = Reply("late", delay=2.0)
    backend = connect(kind, fp, timeout_s=0.3, max_attempts=1)
    reply, elapsed = await complete_once(backend, image_request(instances[0]))
    assert_failed(reply, "timeout", attempts=1)  # else "late" would have come, 2 s later


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_connection_refused_is_connection_error(kind, instances):
    url = f"http://127.0.0.1:{unused_port()}"
    if kind == "openai":
        backend = unseen.connect("openai:gpt-4o", api_key="sk-test", base_url=url + "/v1",
                                 max_attempts=2, **FAST)
    else:
        backend = unseen.connect(f"vllm:{VLLM_MODEL}@{url}", max_attempts=2, **FAST)
    reply, _ = await complete_once(backend, image_request(instances[0]))
    assert_failed(reply, "connection", attempts=2)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "raw",
    [
        Raw(b"not json"),
        Raw(b"<html>bad gateway</html>", content_type="text/plain"),
        Raw(b'{"object": "chat.completion", "choices": null}'),
        Raw(b'{"object": "chat.completion", "choices": []}'),
        Raw(b'{"object": "chat.completion", "choices": [{"index": 0}]}'),
        Raw(b'[1, 2]'),
    ],
    ids=["not-json", "text-plain", "choices-null", "choices-empty", "no-message", "list"],
)
@module_loop
async def test_malformed_body_is_retried_then_typed(kind, raw, fp, instances, ask):
    fp.default = raw
    reply = await ask(kind, image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "malformed", attempts=2)
    assert len(fp.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_a_json_body_under_another_content_type_is_read(kind, fp, instances, ask):
    """The reply is read from the decoded JSON, whatever content type the server gave it (as
    the SDK's own models read it)."""
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "good"}}]}
    fp.default = Raw(json.dumps(body).encode(), content_type="text/plain")
    reply = await ask(kind, image_request(instances[0]), max_attempts=1)
    assert reply.ok and reply.text == "good" and reply.finish_reason == "stop"


@pytest.mark.parametrize("kind", KINDS)
@module_loop
async def test_malformed_then_success(kind, fp, instances, ask):
    fp.script(Raw(b"not json"))
    fp.default = Reply("good")
    reply = await ask(kind, image_request(instances[0]), max_attempts=2)
    assert reply.ok and reply.text == "good"
    assert len(fp.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text", ["", "   \n"])
@module_loop
async def test_empty_text_is_typed_empty(kind, text, fp, instances, ask):
    fp.default = Reply(text)
    reply = await ask(kind, image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "empty", attempts=2)  # empty replies are retried
    assert len(fp.requests) == 2


# --------------------------------------------------------------------------- end to end

ANSWERED = {0: [100, 200, 300, 400], 1: [500, 100, 900, 600], 2: [10, 20, 990, 980],
            4: [250, 250, 750, 750]}
MALFORMED, FAILING = 3, 5


@pytest.mark.parametrize("kind", KINDS)
def test_run_end_to_end(kind, fp, sample_data, instances, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    by_image = {Path(inst.image).read_bytes(): i for i, inst in enumerate(instances[:6])}

    def behave(rec: Recorded):
        (img,) = image_bytes(rec.body)
        i = by_image[img]
        if i == MALFORMED:
            return Reply("I don't know")
        if i == FAILING:
            return Error(500)
        key = "box" if kind == "openai" else "bbox_2d"  # as each profile asks
        return Reply(json.dumps({key: ANSWERED[i]}), reasoning=f"thought {i}",
                     reasoning_tokens=2)

    fp.default = behave
    spec, base_url = spec_and_url(kind, fp)
    run_dir = tmp_path / "run"
    res = unseen.run(sample_data, ["direct"], [spec], out=run_dir, base_url=base_url, limit=6,
                     cache=False, progress=False, max_attempts=2, timeout_s=10, **FAST)
    assert res.done == 6 and res.answered == 4

    rows = read_journal(run_dir)
    assert len(rows) == 6
    by_id = {r["instance_id"]: r for r in rows}
    assert set(by_id) == {inst.id for inst in instances[:6]}
    # requests: one per answered or malformed instance, two (max_attempts) for the failing one
    assert len(fp.requests) == len(ANSWERED) + 1 + 2

    for i, inst in enumerate(instances[:6]):
        row = by_id[inst.id]
        gt = inst.truth["box"]
        w, h = inst.width, inst.height
        assert (w, h) == (640, 480)
        assert row["backend"] == spec
        assert row["model"] == ("gpt-4o" if kind == "openai" else VLLM_MODEL)
        assert row["simulated"] is False
        if i in ANSWERED:
            x1, y1, x2, y2 = ANSWERED[i]
            expected = [x1 / 1000 * 640, y1 / 1000 * 480, x2 / 1000 * 640, y2 / 1000 * 480]
            assert row["status"] == "answered"
            assert row["error"] is None
            assert row["prediction"] == pytest.approx(expected)
            step = row["steps"][0]
            assert step["parsed"] == pytest.approx(expected)
            assert step["parse_error"] is None
            assert step["reply"]["reasoning"] == f"thought {i}"
            assert step["reply"]["usage"]["reasoning_tokens"] == 2
            assert step["reply"]["cached"] is False
            assert step["reply"]["latency_s"] > 0
            assert row["metrics"]["iou"] == pytest.approx(hand_iou(expected, gt))
            assert row["metrics"]["dist"] == pytest.approx(hand_dist(expected, gt, w, h))
        elif i == MALFORMED:
            assert row["status"] == "unanswered"
            assert row["error"]["kind"] == "parse"
            assert row["prediction"] is None
            step = row["steps"][0]
            assert step["reply"]["text"] == "I don't know"
            assert step["reply"]["error"] is None
            assert step["parsed"] is None and step["parse_error"]
            assert row["metrics"]["cacc75"] == 0
            assert row["metrics"]["cacc50"] == 0
            assert row["metrics"]["iou"] == 0
            assert row["metrics"]["dist"] == pytest.approx(hand_dist([0, 0, w, h], gt, w, h))
        else:
            assert row["status"] == "unanswered"
            assert row["error"]["kind"] == "server"
            assert row["error"]["status"] == 500
            assert row["error"]["attempts"] == 2
            assert row["prediction"] is None
            assert row["steps"][0]["reply"]["error"]["kind"] == "server"
            assert row["metrics"]["iou"] == 0 and row["metrics"]["cacc75"] == 0
            assert row["metrics"]["dist"] == pytest.approx(hand_dist([0, 0, w, h], gt, w, h))


# ------------------------------------------------------------------------ no key on disk

SECRET = "sk-SECRET-abc123"


@pytest.mark.parametrize("kind", KINDS)
def test_api_key_never_written(kind, fp, sample_data, instances, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY" if kind == "openai" else "VLLM_API_KEY", SECRET)
    failing = Path(instances[2].image).read_bytes()

    def behave(rec: Recorded):
        if image_bytes(rec.body) == [failing]:
            return Error(400)  # an error message lands in the journal too
        return Reply('{"box": [100, 100, 500, 500]}', reasoning="hm")

    fp.default = behave
    spec, base_url = spec_and_url(kind, fp)
    cache_dir = tmp_path / "cache"
    for name in ("run1", "run2"):
        unseen.run(sample_data, ["direct"], [spec], out=tmp_path / name, base_url=base_url,
                   limit=3, cache=True, cache_dir=cache_dir, progress=False, max_attempts=1,
                   **FAST)
    # the key was really used...
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in fp.requests)
    # ...the second run was served from the cache (the failure is retried, never cached)
    assert len(fp.requests) == 3 + 1
    second = read_journal(tmp_path / "run2")
    assert sum(r["steps"][0]["reply"]["cached"] for r in second) == 2
    # ...and it is nowhere on disk
    assert_secret_not_on_disk(SECRET, tmp_path / "run1", tmp_path / "run2", cache_dir)
