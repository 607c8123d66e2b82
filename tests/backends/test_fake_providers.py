"""The real openai and google-genai SDKs against tests/fake_providers.py (loopback only)."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import fake_providers
import openai
import pytest
from fake_providers import Error, FakeProvider, Raw, Recorded, Reply
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
MESSAGES = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Where is the cat?"},
            {"type": "image_url", "image_url": {"url": DATA_URL}},
        ],
    }
]


@pytest.fixture
def fp():
    with FakeProvider() as provider:
        yield provider


def oa(fp: FakeProvider, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.openai_base_url, api_key="test", max_retries=0, **kw)


def gc(fp: FakeProvider, timeout_ms: int = 5000) -> genai.Client:
    # retry_options left unset => google-genai makes exactly one attempt.
    # Keep the returned client referenced while calling it: a temporary
    # ``gc(fp).models.generate_content(...)`` gets garbage-collected, which closes
    # its HTTP client mid-call ("RuntimeError: Cannot send a request, as the
    # client has been closed.").
    return genai.Client(
        api_key="test",
        http_options=types.HttpOptions(base_url=fp.gemini_base_url, timeout=timeout_ms),
    )


def gemini_contents() -> list:
    return [
        types.Content(
            role="user",
            parts=[
                types.Part.from_text(text="Where is the cat?"),
                types.Part.from_bytes(data=PNG, mime_type="image/png"),
            ],
        )
    ]


GEMINI_CONFIG = types.GenerateContentConfig(
    temperature=0, thinking_config=types.ThinkingConfig(include_thoughts=True)
)


# ----------------------------------------------------------------- openai


def test_openai_chat_completion_roundtrip(fp):
    fp.script(Reply('{"box": [1, 2, 3, 4]}', reasoning="I looked.", reasoning_tokens=5))
    with oa(fp) as client:
        resp = client.chat.completions.create(model="qwen-vl", messages=MESSAGES, temperature=0.3)
    msg = resp.choices[0].message
    assert msg.content == '{"box": [1, 2, 3, 4]}'
    assert resp.choices[0].finish_reason == "stop"
    assert resp.model == "qwen-vl"
    assert resp.usage.prompt_tokens == 11
    assert resp.usage.completion_tokens == 7
    assert resp.usage.total_tokens == 18
    assert resp.usage.completion_tokens_details.reasoning_tokens == 5
    # Non-standard fields survive as pydantic extras.
    assert msg.model_extra["reasoning_content"] == "I looked."
    assert msg.model_extra["reasoning"] == "I looked."
    assert getattr(msg, "reasoning_content", None) == "I looked."

    (rec,) = fp.requests
    assert rec.protocol == "openai"
    assert rec.path == "/v1/chat/completions"
    assert rec.model == "qwen-vl"
    assert rec.body["temperature"] == 0.3
    assert rec.body["messages"][0]["content"][1]["image_url"]["url"] == DATA_URL
    assert rec.headers["authorization"] == "Bearer test"


def test_openai_logprobs_and_length(fp):
    lp = [{"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []}]
    fp.script(Reply("a", finish_reason="length", logprobs=lp))
    with oa(fp) as client:
        resp = client.chat.completions.create(model="m", messages=MESSAGES)
    choice = resp.choices[0]
    assert choice.finish_reason == "length"
    assert choice.logprobs.content[0].token == "a"
    assert choice.logprobs.content[0].logprob == -0.5


def test_openai_rate_limit_exposes_retry_after(fp):
    fp.script(Error(429, headers={"Retry-After": "2"}))
    with oa(fp) as client, pytest.raises(openai.RateLimitError) as ei:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert ei.value.status_code == 429
    assert ei.value.response.headers["retry-after"] == "2"
    assert ei.value.body["type"] == "rate_limit_exceeded"
    assert len(fp.requests) == 1  # max_retries=0


def test_openai_server_error(fp):
    fp.script(Error(500))
    with oa(fp) as client, pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_openai_timeout(fp):
    fp.script(Reply("late", delay=2))
    with oa(fp, timeout=0.3) as client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_openai_malformed_body(fp):
    """json.JSONDecodeError (not an openai.APIError) for invalid JSON; with a
    non-JSON content type the SDK returns the raw text as a str."""
    fp.script(Raw(b"not json"), Raw(b"not json", content_type="text/plain"))
    with oa(fp) as client:
        with pytest.raises(json.JSONDecodeError):
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert client.chat.completions.create(model="m", messages=MESSAGES) == "not json"


async def test_async_openai(fp):
    fp.script(Reply("async ok"), Raw(b"not json"))
    async with openai.AsyncOpenAI(
        base_url=fp.openai_base_url, api_key="test", max_retries=0
    ) as client:
        resp = await client.chat.completions.create(model="m", messages=MESSAGES)
        assert resp.choices[0].message.content == "async ok"
        with pytest.raises(json.JSONDecodeError):
            await client.chat.completions.create(model="m", messages=MESSAGES)


async def test_many_concurrent_slow_requests(fp):
    fp.default = Reply("slow", delay=0.3)
    async with openai.AsyncOpenAI(
        base_url=fp.openai_base_url, api_key="test", max_retries=0, timeout=60
    ) as client:
        results = await asyncio.gather(
            *(client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(64))
        )
    assert all(r.choices[0].message.content == "slow" for r in results)
    assert len(fp.requests) == 64
    # served concurrently, not one after another: counted by the server, not timed (a busy
    # machine stretches every duration, never the overlap of requests held 0.3 s each)
    assert fp.max_in_flight >= 8


# ----------------------------------------------------------------- gemini


def test_gemini_generate_content_roundtrip(fp):
    fp.script(Reply("the answer", reasoning="thinking...", reasoning_tokens=4))
    client = gc(fp)
    resp = client.models.generate_content(
        model="gemini-x", contents=gemini_contents(), config=GEMINI_CONFIG
    )
    assert resp.text == "the answer"
    parts = resp.candidates[0].content.parts
    assert parts[0].thought is True
    assert parts[0].text == "thinking..."
    assert not parts[1].thought
    assert resp.candidates[0].finish_reason == types.FinishReason.STOP
    um = resp.usage_metadata
    assert (um.prompt_token_count, um.candidates_token_count) == (11, 7)
    assert um.thoughts_token_count == 4
    assert um.total_token_count == 22
    assert resp.model_version == "gemini-x"

    (rec,) = fp.requests
    assert rec.protocol == "gemini"
    assert rec.model == "gemini-x"
    assert "gemini-x:generateContent" in rec.path
    assert rec.headers["x-goog-api-key"] == "test"
    req_parts = rec.body["contents"][0]["parts"]
    inline = next(p["inlineData"] for p in req_parts if "inlineData" in p)
    # google-genai 3.6 serialises the key as snake_case "mime_type" (the API accepts both).
    assert (inline.get("mimeType") or inline.get("mime_type")) == "image/png"
    assert base64.b64decode(inline["data"]) == PNG
    assert rec.body["generationConfig"]["temperature"] == 0
    thinking = rec.body["generationConfig"]["thinkingConfig"]
    assert (thinking.get("includeThoughts") or thinking.get("include_thoughts")) is True


def test_gemini_max_tokens(fp):
    fp.script(Reply("cut", finish_reason="length"))
    client = gc(fp)
    resp = client.models.generate_content(model="gemini-x", contents="hi")
    assert resp.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS


def test_gemini_rate_limit_exposes_retry_after(fp):
    fp.script(Error(429, headers={"Retry-After": "2"}))
    client = gc(fp)
    with pytest.raises(genai_errors.ClientError) as ei:
        client.models.generate_content(model="gemini-x", contents="hi")
    exc = ei.value
    assert exc.code == 429
    assert exc.status == "RESOURCE_EXHAUSTED"
    assert exc.response is not None
    assert exc.response.headers.get("retry-after") == "2"
    assert len(fp.requests) == 1  # no retries by default


def test_gemini_server_error(fp):
    fp.script(Error(500))
    client = gc(fp)
    with pytest.raises(genai_errors.ServerError) as ei:
        client.models.generate_content(model="gemini-x", contents="hi")
    assert ei.value.code == 500
    assert len(fp.requests) == 1


def test_gemini_timeout(fp):
    """HttpOptions.timeout is in milliseconds; expiry raises the transport's
    ReadTimeout (httpx2/httpx), not a genai APIError."""
    fp.script(Reply("late", delay=2))
    client = gc(fp, timeout_ms=300)
    with pytest.raises(Exception) as ei:  # noqa: B017 - class depends on transport
        client.models.generate_content(model="gemini-x", contents="hi")
    assert type(ei.value).__name__ == "ReadTimeout"
    assert not isinstance(ei.value, genai_errors.APIError)


def test_gemini_malformed_body(fp):
    """google-genai raises json.JSONDecodeError for a non-JSON 200 body."""
    fp.script(Raw(b"not json"), Raw(b"not json", content_type="text/plain"))
    client = gc(fp)
    for _ in range(2):
        with pytest.raises(json.JSONDecodeError):
            client.models.generate_content(model="gemini-x", contents="hi")


async def test_gemini_async(fp):
    fp.script(
        Reply("async answer", reasoning="hmm"),
        Error(429, headers={"Retry-After": "3"}),
        Raw(b"not json"),
    )
    client = gc(fp)
    resp = await client.aio.models.generate_content(
        model="gemini-x", contents=gemini_contents(), config=GEMINI_CONFIG
    )
    assert resp.text == "async answer"
    with pytest.raises(genai_errors.ClientError) as ei:
        await client.aio.models.generate_content(model="gemini-x", contents="hi")
    assert ei.value.response.headers.get("retry-after") == "3"
    with pytest.raises(json.JSONDecodeError):
        await client.aio.models.generate_content(model="gemini-x", contents="hi")


# ----------------------------------------------------------------- server itself


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_script_order_callable_default_and_routes(fp):
    def echo(rec: Recorded) -> Reply:
        return Reply(f"{rec.protocol}:{rec.model}")

    fp.script(Reply("first"), echo, Error(400, body={"custom": True}))
    url = fp.url
    assert url.startswith("http://127.0.0.1:")
    assert (
        _post(url + "/chat/completions", {"model": "a"})[1]["choices"][0]["message"]["content"]
        == "first"
    )
    status, body = _post(url + "/v1beta/models/gem:generateContent", {"contents": []})
    assert status == 200
    assert body["candidates"][0]["content"]["parts"][0]["text"] == "gemini:gem"
    assert _post(url + "/v1alpha/models/g:generateContent", {}) == (400, {"custom": True})
    # queue empty -> default reply
    status, body = _post(url + "/v1/chat/completions", {"model": "a"})
    assert body["choices"][0]["message"]["content"] == '{"box": [0.1, 0.1, 0.5, 0.5]}'
    assert [r.protocol for r in fp.requests] == ["openai", "gemini", "gemini", "openai"]
    # unknown route -> 404 JSON, not recorded
    assert _post(url + "/nope", {})[0] == 404
    assert len(fp.requests) == 4
    with urllib.request.urlopen(url + "/v1/models", timeout=5) as r:
        assert json.loads(r.read())["data"][0]["id"]
    with oa(fp) as client:
        assert [m.id for m in client.models.list()] == ["fake-model"]


def test_stop_is_prompt_while_reply_sleeps():
    fp = FakeProvider(Reply("never", delay=30)).start()
    url = fp.url
    errors: list[BaseException] = []

    def call() -> None:
        try:
            _post(url + "/v1/chat/completions", {"model": "m"})
        except BaseException as e:  # connection dropped by stop()
            errors.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while not fp.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fp.requests
    t0 = time.monotonic()
    fp.stop()
    assert time.monotonic() - t0 < 30 / 3  # well before the 30 s reply: stop() cut it short
    t.join(timeout=5)
    assert not t.is_alive()
    assert errors  # the client saw the connection close instead of a reply


def test_main_subprocess():
    script = Path(fake_providers.__file__)  # tests/fake_providers.py, run as a script
    proc = subprocess.Popen(
        [
            sys.executable,
            str(script),
            "--port",
            "0",
            "--delay",
            "0.05",
            "--text",
            '{"box":[1,2,3,4]}',
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with openai.OpenAI(base_url=url + "/v1", api_key="t", max_retries=0, timeout=5) as c:
            resp = c.chat.completions.create(model="m", messages=MESSAGES)
        assert resp.choices[0].message.content == '{"box":[1,2,3,4]}'
    finally:
        proc.terminate()
        try:
            assert proc.wait(timeout=5) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
