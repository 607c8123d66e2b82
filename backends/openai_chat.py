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

from ..engine.backend import RATE_HINTS, Capabilities, ProviderError, RateHints
from ..engine.images import data_url, prepare, request_images
from ..engine.redact import remember, remember_url
from ..engine.types import ImagePart, Reply, Request, TextPart, Usage
from .base import BackendConfigError, BaseBackend, provider
from .http_errors import retry_after, status_kind
from .options import IMAGE_OPTIONS, Target, env_name, image_settings, split_target, take_options
from .rejected import note_drop, rejected_param, without
from .servers import spread, url_list

#: the openai SDK's request header that returns the raw response (``with_raw_response``)
RAW_RESPONSE = "X-Stainless-Raw-Response"


def choice_schema(choices: list[str]) -> dict[str, Any]:
    """A strict JSON schema for picking one of ``choices`` (reply: {"choice": ...})."""
    return {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": list(choices)}},
        "required": ["choice"],
        "additionalProperties": False,
    }


def _content(parts: list, max_side: int | None, detail: str | None,
             fitted: bool | None = None) -> list[dict[str, Any]] | str:
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, TextPart):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            image: dict[str, Any] = {"url": data_url(p, max_side, fitted)}
            if detail is not None:
                image["detail"] = detail
            out.append({"type": "image_url", "image_url": image})
    if len(out) == 1 and out[0]["type"] == "text":
        return out[0]["text"]
    return out


def chat_messages(request: Request, image: Any = None) -> list[dict[str, Any]]:
    """The request's messages in the OpenAI chat format (``vllm-local`` renders the same);
    ``image`` (``ImageSettings``) resizes images (``max_side``) and sets OpenAI's ``detail``."""
    max_side = getattr(image, "max_side", None)
    detail = getattr(image, "detail", None)
    fitted = getattr(image, "draw_fitted", None)
    return [{"role": m.role, "content": _content(m.parts, max_side, detail, fitted)}
            for m in request.messages]


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
        return ProviderError(kind, f"HTTP {status}: {exc.message}", status, retry_after(headers),
                             hints=RateHints.of(headers))
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError):
        return ProviderError("malformed", f"unreadable response: {exc}")
    if isinstance(exc, openai.OpenAIError):
        return ProviderError("malformed", f"{type(exc).__name__}: {exc}")
    raise exc


class OpenAIClientBackend(BaseBackend):
    """What every backend over the ``openai`` SDK shares: the async client (SDK retries off),
    the endpoint in ``describe`` (the key never), closing."""

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key: str | None = None,
        box_format: str | None = None, spec: str | None = None, timeout_s: float = 120.0,
        image: Any = None,
    ):
        super().__init__(model, box_format=box_format, spec=spec, image=image)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._api_key = api_key  # only ever handed to the client
        remember(api_key)  # and scrubbed from every stored or shown text
        remember_url(base_url)  # a password or key inside the URL, too
        self._client = None
        self.dropped: set[str] = set()  # parameters the provider rejected (rejected.py)

    async def post(self, path: str, body: dict[str, Any], cast_to: Any) -> Any:
        """POST ``body`` (without the parameters this model rejected); a 400 that names a
        droppable parameter drops it and sends the call again at once (``rejected.py``)."""
        client = self._get_client()
        while True:
            sent = without(body, self.dropped)
            try:
                # the low-level post skips the SDK's recursive TypedDict transform of the
                # payload (a third of the client's CPU per call, measured); the payload is
                # already plain JSON, and errors, timeouts and parsing stay the SDK's. The
                # raw response (the SDK's with_raw_response header) gives the rate-limit
                # headers too
                raw = await client.post(path, body=sent, cast_to=cast_to,
                                        options={"headers": {RAW_RESPONSE: "true"}})
                RATE_HINTS.set(RateHints.of(raw.headers))
                return raw.parse()
            except Exception as exc:
                name = rejected_param(exc, sent)
                if name is None:
                    raise classify_openai_error(exc) from exc
                if name not in self.dropped:  # else a call in flight dropped it meanwhile
                    note_drop(self, name)

    def _get_client(self):
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url,
                max_retries=0, timeout=self.timeout_s,
            )
        return self._client

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "base_url": self.base_url}
        if self.dropped:
            out["dropped_params"] = sorted(self.dropped)
        return out

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
        vllm: bool = False, enable_thinking: bool | None = None, image: Any = None,
    ):
        self.vllm = vllm
        if vllm:
            self.provider = "vllm"
        super().__init__(model, base_url=base_url, api_key=api_key, box_format=box_format,
                         spec=spec, timeout_s=timeout_s, image=image)
        # a reasoning model's profile says it returns no log-probabilities
        logprobs = vllm or self.profile is None or self.profile.logprobs
        self.capabilities = Capabilities(json_schema=True, choices=True, logprobs=logprobs,
                                         reasoning=vllm)
        self.enable_thinking = enable_thinking
        self.served: dict[str, Any] | None = None  # a vLLM server's GET /v1/models entry

    async def identify(self) -> dict[str, Any]:
        """For a vLLM server, the served model's ``root`` (the weights it loaded) and
        ``max_model_len`` from GET /v1/models, asked once; they go into the cache key, so two
        servers serving other weights under one name never share replies."""
        ident = await super().identify()
        if self.enable_thinking is not None:
            ident["enable_thinking"] = self.enable_thinking
        if not self.vllm:
            return ident
        if self.served is None:
            self.served = await self._models_entry()
        return {**ident, "served": self.served}

    async def _models_entry(self) -> dict[str, Any]:
        try:
            body = await self._get_client().get("/models", cast_to=object)
        except Exception as exc:
            raise classify_openai_error(exc) from exc
        data = body.get("data") if isinstance(body, dict) else None
        entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
        entry = next((e for e in entries if e.get("id") == self.model), None)
        if entry is None:
            served = ", ".join(str(e.get("id")) for e in entries) or "none"
            raise ProviderError("config", f"the server at {self.base_url} does not serve "
                                f"{self.model!r} (GET /v1/models lists: {served})")
        return {k: entry[k] for k in ("root", "parent", "max_model_len")
                if entry.get(k) is not None}

    def mm_processor_kwargs(self) -> dict[str, int] | None:
        """What a vLLM server's HF processor is told per request: Qwen2.5-VL's resize, so
        that the pixels of its boxes are those this backend converts from."""
        conv = self.box_format
        if not self.vllm or self.image is None:
            return None
        given = self.image.resize()
        if conv is not None and conv.name == "qwen2.5":
            return {"min_pixels": conv.min_pixels, "max_pixels": conv.max_pixels}
        return {k: v for k, v in given.items() if k != "factor"} or None

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body of the Chat Completions request."""
        d = request.decoding
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(request, self.image),
        }
        extra: dict[str, Any] = {}
        if self.vllm or self.profile is None or self.profile.sampling:
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
        if (mm := self.mm_processor_kwargs()) is not None:
            extra["mm_processor_kwargs"] = mm
        kw.update(extra)  # vLLM's extras are top-level fields of the same JSON body
        return kw

    async def complete(self, request: Request) -> Reply:
        t0 = time.perf_counter()
        await prepare(request_images(request), self.image)
        # cast_to=object: the decoded JSON as it came, read below; the SDK's construction of
        # a ChatCompletion model was a tenth of a millisecond of CPU per call (measured)
        resp = await self.post("/chat/completions", self.payload(request), object)
        return self.read(resp, time.perf_counter() - t0)

    def read(self, resp: Any, latency: float = 0.0) -> Reply:
        """The Reply of a Chat Completions response: its decoded JSON (a call's, or a
        batch line's ``body``)."""
        body = _json_body(resp)
        choices = body.get("choices")
        if not choices or not isinstance(choices, list):
            raise ProviderError("malformed", "the response has no choices")
        choice = _mapping(choices[0])
        msg = choice.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), str | None):
            raise ProviderError("malformed", "the response's first choice has no text message")
        reasoning = msg.get("reasoning") or msg.get("reasoning_content")
        usage = Usage()
        if isinstance(raw_usage := body.get("usage"), dict):
            details = _mapping(raw_usage.get("completion_tokens_details"))
            prompt = _mapping(raw_usage.get("prompt_tokens_details"))
            usage = Usage(
                input_tokens=raw_usage.get("prompt_tokens") or 0,
                output_tokens=raw_usage.get("completion_tokens") or 0,
                reasoning_tokens=details.get("reasoning_tokens") or 0,
                # the part of prompt_tokens the provider's prompt cache served
                cached_input_tokens=prompt.get("cached_tokens") or 0,
            )
        logprobs = None
        if content := _mapping(choice.get("logprobs")).get("content"):
            logprobs = [
                {"token": t.get("token"), "logprob": t.get("logprob"),
                 "top": [{"token": a.get("token"), "logprob": a.get("logprob")}
                         for a in (t.get("top_logprobs") or [])]}
                for t in content
            ]
        served = {k: v for k, v in (("model", body.get("model")),
                                    ("system_fingerprint", body.get("system_fingerprint")))
                  if v}
        if self.served:
            served.update(self.served)
        return Reply(
            text=msg.get("content") or "", reasoning=reasoning, usage=usage, latency_s=latency,
            finish_reason=choice.get("finish_reason"), logprobs=logprobs, served=served or None,
        )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _json_body(resp: Any) -> dict[str, Any]:
    """A response as a dict: the SDK hands back the text of a body whose content type is not
    JSON (a JSON body under another type is read all the same, as the SDK's models did)."""
    if isinstance(resp, str | bytes):
        try:
            resp = json.loads(resp)
        except ValueError:
            return {}
    return _mapping(resp)

OPENAI_OPTIONS = (*IMAGE_OPTIONS, "key_env", "detail")
VLLM_OPTIONS = (*IMAGE_OPTIONS, "key_env", "enable_thinking")
#: OpenAI's image detail unless a spec says otherwise: boxes need the full resolution
DEFAULT_DETAIL = "high"


def api_key_for(opts: dict[str, Any], default_env: str, given: str | None, spec: str,
                provider_name: str) -> tuple[str | None, str]:
    """The key a backend sends and the variable it came from: the spec's ``key_env``
    variable, else ``given`` (``api_key=``), else ``default_env``."""
    if "key_env" in opts:
        env = env_name(str(opts["key_env"]), spec)
        return os.environ.get(env) or None, env
    return given or os.environ.get(default_env) or None, default_env


def endpoints(target: Target, base_url: str | list[str] | None, env: str) -> list[str | None]:
    """The spec's own servers, else ``--base-url``, else ``$env``, else the SDK's own."""
    urls: list[str | None] = [*target.urls] or [*url_list(base_url)] or [os.environ.get(env)]
    return urls


@provider("openai", "openai:MODEL[@URL[,URL...]][,key_env=VAR,detail=low|high|auto|original,"
                    "max_image_side=N]  (OPENAI_API_KEY; OPENAI_BASE_URL or --base-url)")
def _openai(target: str, *, spec: str, base_url: str | list[str] | None = None,
            api_key: str | None = None, box_format: str | None = None, timeout_s: float = 120.0,
            max_image_side: int | None = None, **_: Any):
    return openai_backend(OpenAIChat, target, spec=spec, base_url=base_url, api_key=api_key,
                          box_format=box_format, timeout_s=timeout_s,
                          max_image_side=max_image_side, example="openai:gpt-4o")


def openai_backend(cls: type, target: str, *, spec: str, base_url: str | list[str] | None,
                   api_key: str | None, box_format: str | None, timeout_s: float,
                   max_image_side: int | None, example: str):
    """A backend of OpenAI's API (``cls``: Chat Completions or Responses) from its target:
    its model, its own servers (else ``--base-url``, else ``$OPENAI_BASE_URL``), its key
    (``key_env``, else ``$OPENAI_API_KEY``) and its image settings."""
    provider_name = spec.partition(":")[0]
    t = split_target(target, spec)
    if not t.model:
        raise BackendConfigError(f"{provider_name} needs a model: {provider_name}:MODEL, "
                                 f"e.g. {example}")
    opts = take_options(t, OPENAI_OPTIONS, {"box_format": box_format,
                                            "max_image_side": max_image_side}, spec)
    key, env = api_key_for(opts, "OPENAI_API_KEY", api_key, spec, provider_name)
    if not key:
        raise BackendConfigError(f"{env} is not set (needed by {spec})")
    image = image_settings(opts, spec, detail=DEFAULT_DETAIL)
    return spread(lambda url: cls(t.model, base_url=url, api_key=key,
                                  box_format=opts.get("box_format"), spec=spec,
                                  timeout_s=timeout_s, image=image),
                  endpoints(t, base_url, "OPENAI_BASE_URL"), spec)


def vllm_url(url: str) -> str:
    """A vLLM server's address as the SDK's base URL (``.../v1``)."""
    url = url.strip().rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


@provider("vllm", "vllm:MODEL@URL[,URL...][,min_pixels=N,max_pixels=N,key_env=VAR]  (vLLM "
                  "OpenAI-compatible servers, calls spread over them; VLLM_API_KEY if needed)")
def _vllm(target: str, *, spec: str, base_url: str | list[str] | None = None,
          api_key: str | None = None, box_format: str | None = None, timeout_s: float = 120.0,
          enable_thinking: bool | None = None, max_image_side: int | None = None, **_: Any):
    t = split_target(target, spec)
    urls = t.urls or url_list(base_url)
    if not t.model or not urls:
        raise BackendConfigError(
            "vllm needs a model and a server: vllm:MODEL@URL[,URL...], e.g. vllm:Qwen/Qwen3-VL-8B@http://127.0.0.1:8000"
        )
    opts = take_options(t, VLLM_OPTIONS, {"box_format": box_format,
                                          "max_image_side": max_image_side}, spec)
    key, _env = api_key_for(opts, "VLLM_API_KEY", api_key, spec, "vllm")
    thinking = opts.get("enable_thinking", enable_thinking)
    if isinstance(thinking, str):
        thinking = {"true": True, "false": False}.get(thinking.lower())
        if thinking is None:
            raise BackendConfigError(f"enable_thinking in {spec!r} is true or false")
    image = image_settings(opts, spec)
    return spread(lambda url: OpenAIChat(t.model, base_url=url, api_key=key or "EMPTY",
                                         box_format=opts.get("box_format"), spec=spec,
                                         timeout_s=timeout_s, vllm=True,
                                         enable_thinking=thinking, image=image),
                  [vllm_url(u) for u in urls], spec)
