"""The gemini backend (google-genai ``generateContent``) against the fake provider on 127.0.0.1:
request shape, decoding mappings, thoughts and usage, the failure kinds and their retries, an
end-to-end run, and no key on disk."""

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
from unseen.engine.types import Decoding, ImagePart, Message, Request, TextPart
from unseen.strategies.prompts import box_format_text

FAST = {"backoff_base_s": 0.01}
MODEL = "gemini-2.5-flash"
SPEC = f"gemini:{MODEL}"


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    for name in ("GOOGLE_API_KEY", "GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")


def connect(fp: FakeProvider, model: str = MODEL, **kw):
    """``unseen.connect`` for a gemini model against the fake server."""
    return unseen.connect(f"gemini:{model}", base_url=fp.gemini_base_url, **{**FAST, **kw})


@pytest.fixture
def ask(fp, shared_backends):
    """``await ask(request, model=, max_attempts=)``: one reliable call, as ``unseen.connect``
    would make it, on a bare backend shared within the module (keyed by model and timeout)."""

    async def call(request: Request, model: str = MODEL, max_attempts: int = 6,
                   timeout_s: float = 30.0):
        key = (model, timeout_s)
        if key not in shared_backends:
            shared_backends[key] = make_backend(f"gemini:{model}", timeout_s=timeout_s,
                                                base_url=fp.gemini_base_url)
        backend = Reliable(shared_backends[key], timeout_s=timeout_s, max_attempts=max_attempts,
                           **FAST)
        return await backend.complete(request)

    return call


def _b64(s: str) -> bytes:
    # the SDK sends URL-safe base64; accept the standard alphabet too
    s = s.replace("+", "-").replace("/", "_")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def parts(body: dict) -> list[dict]:
    return [p for c in body["contents"] for p in c["parts"]]


def image_parts(body: dict) -> list[tuple[bytes, str]]:
    out = []
    for p in parts(body):
        inline = p.get("inlineData") or p.get("inline_data")
        if inline is not None:
            mime = inline.get("mimeType") or inline.get("mime_type")
            out.append((_b64(inline["data"]), mime))
    return out


def prompt_of(body: dict) -> str:
    return "\n".join(p["text"] for p in parts(body) if "text" in p)


def gen_config(body: dict) -> dict:
    return body.get("generationConfig", {})


def thinking(body: dict) -> dict:
    cfg = gen_config(body)
    return cfg.get("thinkingConfig") or cfg.get("thinking_config") or {}


def gemini_error(code: int, status: str, message: str, details: list | None = None) -> Error:
    err: dict = {"code": code, "message": message, "status": status}
    if details is not None:
        err["details"] = details
    return Error(code, body={"error": err})


def quota_failure(quota_id: str) -> dict:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": MODEL},
            "quotaValue": "250",
        }],
    }


# ------------------------------------------------------------------------ request shape


def test_direct_request_shape(fp, sample_data, instances, tmp_path):
    fp.default = Reply('{"box_2d": [100, 200, 300, 400]}')
    res = unseen.run(sample_data, ["direct"], [SPEC], out=tmp_path / "run",
                     base_url=fp.gemini_base_url, limit=1, cache=False, progress=False, **FAST)
    assert res.done == 1 and res.answered == 1
    assert len(fp.requests) == 1
    rec = fp.requests[0]
    inst = instances[0]
    assert rec.protocol == "gemini"
    assert rec.model == MODEL
    assert rec.path.endswith(f"/models/{MODEL}:generateContent")
    assert rec.headers["x-goog-api-key"] == "g-test"
    body = rec.body
    # exactly one image, the dataset's file byte for byte
    assert image_parts(body) == [(Path(inst.image).read_bytes(), "image/png")]
    prompt = prompt_of(body)
    assert inst.text["instruction"] in prompt
    convention = box_format_text("gemini", inst.width, inst.height)
    assert convention in prompt and "box_2d" in convention and "y_min, x_min" in convention
    cfg = gen_config(body)
    assert cfg["temperature"] == 0
    assert cfg["seed"] == 0
    for absent in ("maxOutputTokens", "responseMimeType", "responseSchema", "responseJsonSchema"):
        assert absent not in cfg
    assert thinking(body).get("include_thoughts") is True
    (traj,) = read_journal(tmp_path / "run")
    assert traj["steps"][0]["prompt"] == prompt
    assert traj["steps"][0]["images"][0]["path"] == inst.image
    # y-first 0-1000: [y1, x1, y2, x2] = [100, 200, 300, 400] on 640x480
    assert traj["prediction"] == pytest.approx([128.0, 48.0, 256.0, 144.0])


def test_box_format_override(fp, sample_data, tmp_path):
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    unseen.run(sample_data, ["direct"], [SPEC], out=tmp_path / "run",
               base_url=fp.gemini_base_url, limit=1, cache=False, progress=False,
               box_format="norm1000", **FAST)
    prompt = prompt_of(fp.requests[0].body)
    assert box_format_text("norm1000", 640, 480) in prompt
    assert "box_2d" not in prompt
    (traj,) = read_journal(tmp_path / "run")
    assert traj["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0])


@module_loop
async def test_system_message_and_sampling(fp, instances, ask):
    req = Request(
        messages=[Message(role="system", parts=[TextPart(text="Be precise.")]),
                  Message(role="user", parts=[ImagePart(path=instances[1].image),
                                              TextPart(text="Where?")])],
        decoding=Decoding(temperature=0.0, seed=3),
    )
    assert (await ask(req)).ok
    body = fp.requests[0].body
    assert body["systemInstruction"]["parts"] == [{"text": "Be precise."}]
    assert [c["role"] for c in body["contents"]] == ["user"]
    assert image_parts(body) == [(Path(instances[1].image).read_bytes(), "image/png")]
    assert gen_config(body)["temperature"] == 0 and gen_config(body)["seed"] == 3


@module_loop
async def test_each_sample_its_own_seed(fp, instances, ask):
    """Samples of one request are separate draws: the seed sent is seed + sample."""
    for sample in (0, 2):
        req = image_request(instances[0], Decoding(temperature=0.7, seed=3)).model_copy(
            update={"sample": sample})
        assert (await ask(req)).ok
    assert [gen_config(r.body)["seed"] for r in fp.requests] == [3, 5]


@module_loop
async def test_max_tokens_mapping(fp, instances, ask):
    assert (await ask(image_request(instances[0], Decoding(max_tokens=77)))).ok
    assert gen_config(fp.requests[0].body)["maxOutputTokens"] == 77


@module_loop
async def test_choices_mapping(fp, instances, ask):
    fp.default = Reply("B")
    reply = await ask(image_request(instances[0], Decoding(choices=["A", "B"])))
    assert reply.ok and reply.text == "B"
    cfg = gen_config(fp.requests[0].body)
    assert cfg["responseMimeType"] == "text/x.enum"
    assert cfg["responseSchema"]["enum"] == ["A", "B"]
    assert cfg["responseSchema"]["type"].upper() == "STRING"
    assert "responseJsonSchema" not in cfg


@module_loop
async def test_json_schema_mapping(fp, instances, ask):
    schema = {
        "type": "object",
        "properties": {"box_2d": {"type": "array", "items": {"type": "number"}}},
        "required": ["box_2d"],
    }
    assert (await ask(image_request(instances[0], Decoding(json_schema=schema)))).ok
    cfg = gen_config(fp.requests[0].body)
    assert cfg["responseMimeType"] == "application/json"
    assert cfg["responseJsonSchema"] == schema
    assert "responseSchema" not in cfg


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        ("gemini-2.5-flash", "low", {"thinking_budget": 1024}),
        ("gemini-2.5-pro", "high", {"thinking_budget": 24576}),
        ("gemini-2.5-flash", "none", {"thinking_budget": 0}),
        ("gemini-3-flash-preview", "low", {"thinking_level": "LOW"}),
        # the paper's coder effort, "max": Gemini's highest, not dropped
        ("gemini-3-flash-preview", "max", {"thinking_level": "HIGH"}),
        ("gemini-2.5-flash", "max", {"thinking_budget": 24576}),
    ],
)
@module_loop
async def test_reasoning_effort_mapping(model, effort, expected, fp, instances, ask):
    req = image_request(instances[0], Decoding(reasoning_effort=effort))
    assert (await ask(req, model=model)).ok
    cfg = thinking(fp.requests[0].body)
    ((key, value),) = expected.items()
    camel = {"thinking_budget": "thinkingBudget", "thinking_level": "thinkingLevel"}[key]
    got = cfg.get(key, cfg.get(camel))
    assert (got.upper() if isinstance(got, str) else got) == value
    other = "thinking_level" if key == "thinking_budget" else "thinking_budget"
    assert other not in cfg  # never both: that is a 400


@module_loop
async def test_thoughts_and_usage(fp, instances, ask):
    fp.default = Reply('{"box_2d": [1, 2, 3, 4]}', reasoning="The valve sits under the sill.",
                       prompt_tokens=258, completion_tokens=12, reasoning_tokens=99,
                       cached_tokens=200, finish_reason="length")
    reply = await ask(image_request(instances[0]))
    assert reply.ok
    assert reply.text == '{"box_2d": [1, 2, 3, 4]}'  # the thought part is not the answer
    assert reply.reasoning == "The valve sits under the sill."
    assert reply.usage.input_tokens == 258
    # the thoughts are billed as output: counted in it, as OpenAI's completion_tokens are
    assert reply.usage.output_tokens == 12 + 99
    assert reply.usage.reasoning_tokens == 99
    assert reply.usage.cached_input_tokens == 200  # usage_metadata.cached_content_token_count
    assert reply.finish_reason == "MAX_TOKENS"
    assert reply.latency_s > 0
    assert not reply.cached


# ------------------------------------------------------------------ failures and retries


@module_loop
async def test_429_retry_after_is_honoured(fp, instances, ask):
    limited = gemini_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted")
    limited.headers["Retry-After"] = "1"
    fp.script(limited, Reply("ok"))
    t0 = time.perf_counter()
    reply = await ask(image_request(instances[0]), max_attempts=3)
    elapsed = time.perf_counter() - t0
    assert reply.ok and reply.text == "ok"
    assert len(fp.requests) == 2
    assert elapsed >= 0.9  # backoff_base_s is 0.01: only Retry-After explains the wait
    # (how long it waits, exactly: test_reliable's fake clock; no upper wall-clock bound here)


@module_loop
async def test_429_retry_info_delay_is_honoured(fp, instances, ask):
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.3s"}
    fp.script(gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded, retry in 0.3s",
                           [quota_failure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
                            retry_info]),
              Reply("ok"))
    t0 = time.perf_counter()
    reply = await ask(image_request(instances[0]), max_attempts=3)
    elapsed = time.perf_counter() - t0
    assert reply.ok and reply.text == "ok"
    assert len(fp.requests) == 2
    assert elapsed >= 0.27


@module_loop
async def test_429_per_minute_is_rate_limit_and_retried(fp, instances, ask):
    per_minute = gemini_error(
        429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and "
        "billing details.", [quota_failure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier")])
    fp.default = per_minute
    reply = await ask(image_request(instances[0]), max_attempts=3)
    assert_failed(reply, "rate_limit", attempts=3)
    assert len(fp.requests) == 3


@module_loop
async def test_429_daily_quota_is_not_retried(fp, instances, ask):
    fp.default = gemini_error(
        429, "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. "
        "Quota exceeded for metric: generativelanguage.googleapis.com/"
        "generate_content_free_tier_requests, limit: 250 (GenerateRequestsPerDayPerProjectPerModel).",
        [quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier")])
    reply = await ask(image_request(instances[0]), max_attempts=5)
    assert_failed(reply, "quota", status=429, attempts=1)
    assert len(fp.requests) == 1


@module_loop
async def test_500_retried_up_to_max_attempts(fp, instances, ask):
    fp.default = Error(500)
    reply = await ask(image_request(instances[0]), max_attempts=3)
    assert_failed(reply, "server", status=500, attempts=3)
    assert len(fp.requests) == 3
    assert reply.text == ""


@module_loop
async def test_500_then_success(fp, instances, ask):
    fp.script(Error(500), Error(503))
    fp.default = Reply("fine")
    reply = await ask(image_request(instances[0]), max_attempts=3)
    assert reply.ok and reply.text == "fine"
    assert len(fp.requests) == 3


@pytest.mark.parametrize("status", [400, 403])
@module_loop
async def test_4xx_is_client_error_not_retried(status, fp, instances, ask):
    fp.default = Error(status)
    reply = await ask(image_request(instances[0]), max_attempts=4)
    assert_failed(reply, "client", status=status, attempts=1)
    assert len(fp.requests) == 1


@module_loop
async def test_slow_reply_times_out(fp, instances):
    fp.default = Reply("late", delay=2.0)
    backend = connect(fp, timeout_s=0.3, max_attempts=1)
    reply, elapsed = await complete_once(backend, image_request(instances[0]))
    assert_failed(reply, "timeout", attempts=1)  # else "late" would have come, 2 s later


@module_loop
async def test_connection_refused_is_connection_error(instances):
    backend = unseen.connect(SPEC, base_url=f"http://127.0.0.1:{unused_port()}", max_attempts=2,
                             **FAST)
    reply, _ = await complete_once(backend, image_request(instances[0]))
    assert_failed(reply, "connection", attempts=2)


@pytest.mark.parametrize(
    "raw",
    [
        Raw(b"not json"),
        Raw(b"<html>bad gateway</html>", content_type="text/html"),
        Raw(b"{}"),
        Raw(b'{"candidates": [], "promptFeedback": {"blockReason": "OTHER"}}'),
    ],
    ids=["not-json", "html", "no-candidates", "blocked"],
)
@module_loop
async def test_malformed_body_is_retried_then_typed(raw, fp, instances, ask):
    fp.default = raw
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "malformed", attempts=2)
    assert len(fp.requests) == 2


@module_loop
async def test_malformed_then_success(fp, instances, ask):
    fp.script(Raw(b"not json"))
    fp.default = Reply("good")
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert reply.ok and reply.text == "good"
    assert len(fp.requests) == 2


@pytest.mark.parametrize("variant", ["empty-text", "blank-text"])
@module_loop
async def test_empty_reply_is_typed_empty(variant, fp, instances, ask):
    fp.default = Reply("" if variant == "empty-text" else "  \n")
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert_failed(reply, "empty", attempts=2)  # empty replies are retried
    assert len(fp.requests) == 2


@module_loop
async def test_thoughts_cut_at_max_tokens_are_a_length_stop_not_retried(fp, instances, ask):
    """Gemini stopped at MAX_TOKENS while thinking: the reply has no answer text, and asked
    again it stops at the same limit: it is the reply (the strategy's reason ``length``),
    never an ``empty`` failure retried."""
    fp.default = Raw(json.dumps({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "hmm, thinking", "thought": True}]}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 5, "thoughtsTokenCount": 50},
    }).encode())
    reply = await ask(image_request(instances[0]), max_attempts=2)
    assert reply.ok and reply.text == "" and reply.cut
    assert reply.finish_reason == "MAX_TOKENS" and reply.reasoning == "hmm, thinking"
    assert len(fp.requests) == 1


# --------------------------------------------------------------------------- end to end

# what the fake answers, y-first 0-1000: [y1, x1, y2, x2]
ANSWERED = {0: [100, 200, 300, 400], 1: [500, 100, 900, 600], 2: [10, 20, 990, 980],
            4: [250, 250, 750, 750]}
MALFORMED, FAILING = 2, 5


def test_run_end_to_end(fp, sample_data, instances, tmp_path):
    answered = {i: b for i, b in ANSWERED.items() if i != MALFORMED}
    answered[3] = [0, 0, 1000, 1000]
    by_image = {Path(inst.image).read_bytes(): i for i, inst in enumerate(instances[:6])}

    def behave(rec: Recorded):
        ((img, _),) = image_parts(rec.body)
        i = by_image[img]
        if i == MALFORMED:
            return Reply("I don't know")
        if i == FAILING:
            return Error(500)
        return Reply(json.dumps({"box_2d": answered[i]}), reasoning=f"thought {i}",
                     reasoning_tokens=4)

    fp.default = behave
    run_dir = tmp_path / "run"
    res = unseen.run(sample_data, ["direct"], [SPEC], out=run_dir, base_url=fp.gemini_base_url,
                     limit=6, cache=False, progress=False, max_attempts=2, timeout_s=10, **FAST)
    assert res.done == 6 and res.answered == 4

    rows = read_journal(run_dir)
    assert len(rows) == 6
    by_id = {r["instance_id"]: r for r in rows}
    assert set(by_id) == {inst.id for inst in instances[:6]}
    assert len(fp.requests) == len(answered) + 1 + 2  # the failing one is tried twice

    for i, inst in enumerate(instances[:6]):
        row = by_id[inst.id]
        gt = inst.truth["box"]
        w, h = inst.width, inst.height
        assert (w, h) == (640, 480)
        assert row["backend"] == SPEC and row["model"] == MODEL
        if i in answered:
            y1, x1, y2, x2 = answered[i]
            expected = [x1 / 1000 * 640, y1 / 1000 * 480, x2 / 1000 * 640, y2 / 1000 * 480]
            assert row["status"] == "answered"
            assert row["error"] is None
            assert row["prediction"] == pytest.approx(expected)
            step = row["steps"][0]
            assert step["parse_error"] is None
            assert step["reply"]["reasoning"] == f"thought {i}"
            assert step["reply"]["usage"]["reasoning_tokens"] == 4
            assert step["reply"]["cached"] is False
            assert row["metrics"]["iou"] == pytest.approx(hand_iou(expected, gt))
            assert row["metrics"]["dist"] == pytest.approx(hand_dist(expected, gt, w, h))
            if i == 3:  # the whole image: contains the truth but covers all of it
                assert row["metrics"]["cacc50"] == 0
        elif i == MALFORMED:
            assert row["status"] == "unanswered"
            assert row["error"]["kind"] == "parse"
            assert row["prediction"] is None
            step = row["steps"][0]
            assert step["reply"]["text"] == "I don't know"
            assert step["parsed"] is None and step["parse_error"]
            assert row["metrics"]["cacc75"] == 0 and row["metrics"]["cacc50"] == 0
            assert row["metrics"]["iou"] == 0
            assert row["metrics"]["dist"] == pytest.approx(hand_dist([0, 0, w, h], gt, w, h))
        else:
            assert row["status"] == "unanswered"
            assert row["error"]["kind"] == "server"
            assert row["error"]["attempts"] == 2
            assert row["prediction"] is None
            assert row["metrics"]["iou"] == 0
            assert row["metrics"]["dist"] == pytest.approx(hand_dist([0, 0, w, h], gt, w, h))


# ------------------------------------------------------------------------ no key on disk

SECRET = "sk-SECRET-abc123"


def test_api_key_never_written(fp, sample_data, instances, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    failing = Path(instances[2].image).read_bytes()

    def behave(rec: Recorded):
        if [b for b, _ in image_parts(rec.body)] == [failing]:
            return Error(400)  # an error message lands in the journal too
        return Reply('{"box_2d": [100, 100, 500, 500]}', reasoning="hm")

    fp.default = behave
    cache_dir = tmp_path / "cache"
    for name in ("run1", "run2"):
        unseen.run(sample_data, ["direct"], [SPEC], out=tmp_path / name,
                   base_url=fp.gemini_base_url, limit=3, cache=True, cache_dir=cache_dir,
                   progress=False, max_attempts=1, **FAST)
    # the key was really used...
    assert all(r.headers["x-goog-api-key"] == SECRET for r in fp.requests)
    # ...the second run was served from the cache (the failure is retried, never cached)
    assert len(fp.requests) == 3 + 1
    second = read_journal(tmp_path / "run2")
    assert sum(r["steps"][0]["reply"]["cached"] for r in second) == 2
    # ...and it is nowhere on disk
    assert_secret_not_on_disk(SECRET, tmp_path / "run1", tmp_path / "run2", cache_dir)
