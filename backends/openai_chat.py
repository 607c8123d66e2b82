"""OpenAI Chat Completions, and vLLM's OpenAI-compatible server, through the ``openai`` SDK.

The SDK's own retries are off (``max_retries=0``): retries live in ``Reliable``. Images go as
base64 data URLs. vLLM extras: ``structured_outputs`` (json / choice) in the body,
``chat_template_kwargs``, and the reasoning trace in ``message.reasoning`` (older servers:
``reasoning_content``; both are read). ``reasoning_effort`` goes top-level to both: vLLM's
``ChatCompletionRequest`` has the field and hands it to the chat template (recent servers also
turn ``enable_thinking`` on for any effort but "none", unless ``chat_template_kwargs`` sets it;
servers before the field ignore it). Chat Completions returns no reasoning text from OpenAI:
``openai-responses`` (openai_responses.py) is the backend that keeps OpenAI's summaries.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import data_url
from ..engine.redact import remember
from ..engine.types import ImagePart, Reply, Request, TextPart, Usage
from .base import BackendConfigError, BaseBackend, provider
from .http_errors import retry_after, status_kind
from .servers import spread, url_list


def choice_schema(choices: list[str]) -> dict[str, Any]:
    """A strict JSON schema for picking one of ``choices`` (reply: {"choice": ...})."""
    return {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": list(choices)}},
        "required": ["choice"],
        "additionalProperties": False,
    }


def _content(parts: list) -> list[dict[str, Any]] | str:
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, TextPart):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            out.append({"type": "image_url", "image_url": {"url": data_url(p)}})
    if len(out) == 1 and out[0]["type"] == "text":
        return out[0]["text"]
    return out


def chat_messages(request: Request) -> list[dict[str, Any]]:
    """The request's messages in the OpenAI chat format (``vllm-local`` renders the same)."""
    return [{"role": m.role, "content": _content(m.parts)} for m in request.messages]


def classify_openai_error(exc: Exception) -> ProviderError:
    """Turn an ``openai`` SDK exception into a typed ProviderError."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("timeout", "the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("connection", f"connection failed: {exc}")
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if exc.body is not None else ""
        text = json.dumps(body) if not isinstance(body, str) else body
        status = exc.status_code
        kind = status_kind(status, f"{text} {exc.message}")
        headers = exc.response.headers if exc.response is not None else None
        return ProviderError(kind, f"HTTP {status}: {exc.message}", status, retry_after(headers))
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError):
        return ProviderError("malformed", f"unreadable response: {exc}")
    if isinstance(exc, openai.OpenAIError):
        return ProviderError("malformed", f"{type(exc).__name__}: {exc}")
    raise exc


def _chat_completion_type() -> type:
    from openai.types.chat import ChatCompletion

    return ChatCompletion


class OpenAIClientBackend(BaseBackend):
    """What every backend over the ``openai`` SDK shares: the async client (SDK retries off),
    the endpoint in ``describe`` (the key never), closing."""

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key: str | None = None,
        box_format: str | None = None, spec: str | None = None, timeout_s: float = 120.0,
    ):
        super().__init__(model, box_format=box_format, spec=spec)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._api_key = api_key  # only ever handed to the client
        remember(api_key)  # and scrubbed from every stored or shown text
        self._client = None

    def _get_client(self):
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url,
                max_retries=0, timeout=self.timeout_s,
            )
        return self._client

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class OpenAIChat(OpenAIClientBackend):
    provider = "openai"
    capabilities = Capabilities(json_schema=True, choices=True, logprobs=True, reasoning=False)

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key: str | None = None,
        box_format: str | None = None, spec: str | None = None, timeout_s: float = 120.0,
        vllm: bool = False, enable_thinking: bool | None = None,
    ):
        self.vllm = vllm
        if vllm:
            self.provider = "vllm"
            self.capabilities = Capabilities(
                json_schema=True, choices=True, logprobs=True, reasoning=True
            )
        super().__init__(model, base_url=base_url, api_key=api_key, box_format=box_format,
                         spec=spec, timeout_s=timeout_s)
        self.enable_thinking = enable_thinking

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body of the Chat Completions request."""
        d = request.decoding
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(request),
        }
        extra: dict[str, Any] = {}
        if self.profile.sampling_params or self.vllm:
            if d.temperature is not None:
                kw["temperature"] = d.temperature
            if d.seed is not None:
                kw["seed"] = request.provider_seed
        if d.max_tokens is not None:
            kw["max_tokens" if self.vllm else "max_completion_tokens"] = d.max_tokens
        if d.reasoning_effort is not None:
            # vLLM takes it top-level too (ChatCompletionRequest.reasoning_effort)
            kw["reasoning_effort"] = d.reasoning_effort
        if d.choices:
            if self.vllm:
                extra["structured_outputs"] = {"choice": list(d.choices)}
            else:
                kw["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "choice", "schema": choice_schema(d.choices),
                                    "strict": True},
                }
        elif d.json_schema is not None:
            kw["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": d.json_schema, "strict": True},
            }
        if d.logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = 5
        if self.vllm and self.enable_thinking is not None:
            extra["chat_template_kwargs"] = {"enable_thinking": self.enable_thinking}
        kw.update(extra)  # vLLM's extras are top-level fields of the same JSON body
        return kw

    async def complete(self, request: Request) -> Reply:
        client = self._get_client()
        t0 = time.perf_counter()
        try:
            # The low-level post skips the SDK's recursive TypedDict transform of the
            # payload (a third of the client's CPU per call, measured); the payload is
            # already plain JSON, and errors, timeouts and parsing stay the SDK's.
            resp = await client.post("/chat/completions", body=self.payload(request),
                                     cast_to=_chat_completion_type())
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        latency = time.perf_counter() - t0
        if not getattr(resp, "choices", None):
            raise ProviderError("malformed", "the response has no choices")
        choice = resp.choices[0]
        msg = getattr(choice, "message", None)
        if msg is None or not isinstance(msg.content, str | None):
            raise ProviderError("malformed", "the response's first choice has no text message")
        extra = getattr(msg, "model_extra", None) or {}
        reasoning = extra.get("reasoning") or extra.get("reasoning_content")
        usage = Usage()
        if resp.usage is not None:
            details = getattr(resp.usage, "completion_tokens_details", None)
            usage = Usage(
                input_tokens=resp.usage.prompt_tokens or 0,
                output_tokens=resp.usage.completion_tokens or 0,
                reasoning_tokens=(getattr(details, "reasoning_tokens", None) or 0) if details else 0,
            )
        logprobs = None
        if choice.logprobs is not None and choice.logprobs.content:
            logprobs = [
                {"token": t.token, "logprob": t.logprob,
                 "top": [{"token": a.token, "logprob": a.logprob} for a in (t.top_logprobs or [])]}
                for t in choice.logprobs.content
            ]
        return Reply(
            text=msg.content or "", reasoning=reasoning, usage=usage, latency_s=latency,
            finish_reason=choice.finish_reason, logprobs=logprobs,
        )

def _key(env: str, given: str | None) -> str | None:
    return given or os.environ.get(env)


@provider("openai", "openai:MODEL  (OPENAI_API_KEY; OPENAI_BASE_URL or --base-url, repeatable)")
def _openai(target: str, *, spec: str, base_url: str | list[str] | None = None,
            api_key: str | None = None, box_format: str | None = None, timeout_s: float = 120.0,
            **_: Any):
    if not target:
        raise BackendConfigError("openai needs a model: openai:MODEL, e.g. openai:gpt-4o")
    key = _key("OPENAI_API_KEY", api_key)
    if not key:
        raise BackendConfigError("OPENAI_API_KEY is not set (needed by the openai backend)")
    urls = url_list(base_url) or [os.environ.get("OPENAI_BASE_URL")]  # [None]: the SDK's own
    return spread(lambda url: OpenAIChat(target, base_url=url, api_key=key, box_format=box_format,
                                         spec=spec, timeout_s=timeout_s), urls, spec)


def vllm_url(url: str) -> str:
    """A vLLM server's address as the SDK's base URL (``.../v1``)."""
    url = url.strip().rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


@provider("vllm", "vllm:MODEL@URL[,URL...]  (vLLM OpenAI-compatible servers, calls spread over "
                  "them; VLLM_API_KEY if they need one)")
def _vllm(target: str, *, spec: str, base_url: str | list[str] | None = None,
          api_key: str | None = None, box_format: str | None = None, timeout_s: float = 120.0,
          enable_thinking: bool | None = None, **_: Any):
    model, _, at = target.partition("@")
    urls = [u for u in (x.strip() for x in at.split(",")) if u] if at else url_list(base_url)
    if not model or not urls:
        raise BackendConfigError(
            "vllm needs a model and a server: vllm:MODEL@URL[,URL...], e.g. vllm:Qwen/Qwen3-VL-8B@http://127.0.0.1:8000"
        )
    key = _key("VLLM_API_KEY", api_key) or "EMPTY"
    return spread(lambda url: OpenAIChat(model, base_url=url, api_key=key, box_format=box_format,
                                         spec=spec, timeout_s=timeout_s, vllm=True,
                                         enable_thinking=enable_thinking),
                  [vllm_url(u) for u in urls], spec)
