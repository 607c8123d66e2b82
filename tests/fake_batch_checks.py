"""Helpers for the tests of the fake batch servers: request lines, SDK clients bound to a
FakeProvider, raw HTTP, and a strict check of wire objects against the SDKs' pydantic types."""

from __future__ import annotations

import json
import typing
import urllib.error
import urllib.request

import openai
import pydantic
from fake_providers import FakeProvider
from google import genai
from google.genai import types
from openai.types import Batch

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


