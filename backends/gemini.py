"""Gemini through the ``google-genai`` SDK.

The SDK's retries are off (no ``retry_options``): retries live in ``Reliable``. A base URL
override (``--base-url`` or ``GEMINI_BASE_URL``) goes through the client's HTTP options, which
is also how the tests reach a local server. Thought summaries (parts with ``thought=True``)
become the reasoning trace.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import part_bytes, prepare, request_images
from ..engine.redact import remember, remember_url
from ..engine.types import ImagePart, Reply, Request, TextPart, Usage
from .base import BackendConfigError, BaseBackend, provider
from .http_errors import retry_after, status_kind
from .options import IMAGE_OPTIONS, env_name, image_settings, split_target, take_options
from .servers import check_url, single_url

# reasoning_effort → thinking level (Gemini 3) ; "none" turns thinking off where allowed;
# OpenAI's levels above high ("xhigh", "max": the paper's coder ran at the maximum) are
# Gemini's highest, never silently dropped
_LEVELS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high",
           "xhigh": "high", "max": "high"}
# Gemini 2.x takes a token budget, not a level (a level is a 400 there); Google's own
# OpenAI-compatibility mapping: low 1K, medium 8K, high 24K (the Flash models' ceiling)
_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576,
            "max": 24576}
_BUDGET_ONLY = re.compile(r"gemini-(1|2)(\.|-|$)", re.IGNORECASE)
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_delay(details: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` ``retryDelay`` (e.g. "33s") in an error body;
    Gemini sends its wait there rather than in a Retry-After header."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            m = _DELAY.match(str(item.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


def classify_gemini_error(exc: Exception) -> ProviderError:
    """Turn a google-genai or httpx exception into a typed ProviderError."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        text = f"{exc.status} {exc.message} {json.dumps(exc.details, default=str)}"
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        kind = status_kind(code, text) if code else "malformed"
        wait = retry_after(headers)
        if wait is None:
            wait = _retry_delay(exc.details)
        return ProviderError(kind, f"HTTP {code} {exc.status}: {exc.message}", code or None, wait)
    timeouts, transports = _http_exception_types()
    if isinstance(exc, timeouts):
        return ProviderError("timeout", "the request timed out")
    if isinstance(exc, transports):
        return ProviderError("connection", f"connection failed: {exc}")
    if isinstance(exc, ValueError | errors.UnknownApiResponseError):  # unreadable body
        return ProviderError("malformed", f"unreadable response: {exc}")
    raise exc


def _http_exception_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """Timeout and transport exception classes of whichever httpx the SDK uses."""
    import importlib

    timeouts: list[type] = [TimeoutError]
    transports: list[type] = [ConnectionError]
    for name in ("httpx2", "httpx"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(mod.TimeoutException)
        transports.append(mod.TransportError)
    return tuple(timeouts), tuple(transports)


class Gemini(BaseBackend):
    provider = "gemini"
    capabilities = Capabilities(json_schema=True, choices=True, logprobs=True, reasoning=True)

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 box_format: str | None = None, spec: str | None = None,
                 timeout_s: float = 120.0, include_thoughts: bool = True, image: Any = None):
        super().__init__(model, box_format=box_format, spec=spec, image=image)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.include_thoughts = include_thoughts
        self._api_key = api_key
        remember(api_key)  # scrubbed from every stored or shown text
        remember_url(base_url)  # a password or key inside the URL, too
        self._client = None

    def _get_client(self):
        if self._client is None:
            from google import genai
            from google.genai import types

            opts: dict[str, Any] = {"timeout": int(self.timeout_s * 1000)}
            if self.base_url:
                opts["base_url"] = self.base_url
            self._client = genai.Client(api_key=self._api_key,
                                        http_options=types.HttpOptions(**opts))
        return self._client

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url}

    def contents_and_config(self, request: Request) -> tuple[list, Any]:
        from google.genai import types

        system: list[str] = []
        contents = []
        resolution = getattr(self.image, "media_resolution", None)
        for m in request.messages:
            if m.role == "system":
                system.append(m.text)
                continue
            parts = []
            for p in m.parts:
                if isinstance(p, TextPart):
                    parts.append(types.Part.from_text(text=p.text))
                elif isinstance(p, ImagePart):
                    data, mime = part_bytes(p, getattr(self.image, "max_side", None),
                                            getattr(self.image, "draw_fitted", None))
                    part = types.Part.from_bytes(data=data, mime_type=mime)
                    if resolution == "ultra_high":  # only per part, and only on Gemini 3
                        part.media_resolution = types.PartMediaResolution(
                            level=types.PartMediaResolutionLevel.MEDIA_RESOLUTION_ULTRA_HIGH)
                    parts.append(part)
            contents.append(types.Content(role="model" if m.role == "assistant" else "user",
                                          parts=parts))
        d = request.decoding
        cfg: dict[str, Any] = {}
        if system:
            cfg["system_instruction"] = "\n\n".join(system)
        if resolution in ("low", "medium", "high"):
            cfg["media_resolution"] = f"MEDIA_RESOLUTION_{resolution.upper()}"
        if d.temperature is not None:
            cfg["temperature"] = d.temperature
        if d.seed is not None:
            cfg["seed"] = request.provider_seed
        if d.max_tokens is not None:
            cfg["max_output_tokens"] = d.max_tokens
        if d.choices:
            cfg["response_mime_type"] = "text/x.enum"
            cfg["response_schema"] = {"type": "STRING", "enum": list(d.choices)}
        elif d.json_schema is not None:
            cfg["response_mime_type"] = "application/json"
            cfg["response_json_schema"] = d.json_schema
        if d.logprobs:
            cfg["response_logprobs"] = True
            cfg["logprobs"] = 5
        thinking: dict[str, Any] = {}
        if self.include_thoughts:
            thinking["include_thoughts"] = True
        if d.reasoning_effort in _LEVELS and _BUDGET_ONLY.search(self.model):
            thinking["thinking_budget"] = _BUDGETS[d.reasoning_effort]
        elif d.reasoning_effort in _LEVELS:
            thinking["thinking_level"] = _LEVELS[d.reasoning_effort]
        elif d.reasoning_effort == "none":
            thinking["thinking_budget"] = 0
        if thinking:
            cfg["thinking_config"] = types.ThinkingConfig(**thinking)
        return contents, types.GenerateContentConfig(**cfg)

    async def complete(self, request: Request) -> Reply:
        client = self._get_client()
        await prepare(request_images(request), self.image)
        contents, config = self.contents_and_config(request)
        t0 = time.perf_counter()
        try:
            resp = await client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except Exception as exc:
            raise classify_gemini_error(exc) from exc
        return self.read(resp, time.perf_counter() - t0)

    def read(self, resp: Any, latency: float = 0.0) -> Reply:
        """The Reply of a ``GenerateContentResponse`` (a batch's responses are read here
        too)."""
        candidates = getattr(resp, "candidates", None) or []
        if not candidates:
            feedback = getattr(resp, "prompt_feedback", None)
            raise ProviderError("malformed", f"the response has no candidates ({feedback})")
        cand = candidates[0]
        parts = (cand.content.parts if cand.content and cand.content.parts else []) or []
        answer = "".join(p.text for p in parts if p.text and not p.thought)
        thoughts = "\n".join(p.text for p in parts if p.text and p.thought)
        um = resp.usage_metadata
        # as OpenAI counts them (and bills them): the thoughts are output, the cached
        # content part of the prompt
        thinking = (um.thoughts_token_count or 0) if um else 0
        usage = Usage(
            input_tokens=(um.prompt_token_count or 0) if um else 0,
            output_tokens=((um.candidates_token_count or 0) + thinking) if um else 0,
            reasoning_tokens=thinking,
            cached_input_tokens=(um.cached_content_token_count or 0) if um else 0,
        )
        logprobs = None
        lp = getattr(cand, "logprobs_result", None)
        if lp is not None and lp.chosen_candidates:
            tops = lp.top_candidates or []
            logprobs = [
                {"token": c.token, "logprob": c.log_probability,
                 "top": [{"token": a.token, "logprob": a.log_probability}
                         for a in (tops[i].candidates if i < len(tops) and tops[i].candidates else [])]}
                for i, c in enumerate(lp.chosen_candidates)
            ]
        finish = cand.finish_reason
        version = getattr(resp, "model_version", None)
        return Reply(
            text=answer, reasoning=thoughts or None, usage=usage, latency_s=latency,
            finish_reason=getattr(finish, "value", finish) if finish is not None else None,
            logprobs=logprobs, served={"model_version": version} if version else None,
        )


GEMINI_OPTIONS = (*IMAGE_OPTIONS, "key_env", "media_resolution")
#: Gemini's image resolution unless a spec says otherwise (the API's default for images on
#: Gemini 3, stated and sent so that it is recorded)
DEFAULT_MEDIA_RESOLUTION = "high"


@provider("gemini", "gemini:MODEL[@URL][,key_env=VAR,media_resolution=low|medium|high|"
                    "ultra_high]  (GEMINI_API_KEY or GOOGLE_API_KEY; GEMINI_BASE_URL or "
                    "--base-url)")
def _gemini(target: str, *, spec: str, base_url: str | list[str] | None = None,
            api_key: str | None = None, box_format: str | None = None, timeout_s: float = 120.0,
            max_image_side: int | None = None, **_: Any) -> Gemini:
    t = split_target(target, spec)
    if not t.model:
        raise BackendConfigError("gemini needs a model: gemini:MODEL, e.g. gemini:gemini-2.5-flash")
    opts = take_options(t, GEMINI_OPTIONS, {"box_format": box_format,
                                            "max_image_side": max_image_side}, spec)
    if "key_env" in opts:
        env = env_name(str(opts["key_env"]), spec)
        key = os.environ.get(env)
    else:
        env = "GEMINI_API_KEY (or GOOGLE_API_KEY)"
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise BackendConfigError(f"{env} is not set (needed by {spec})")
    if len(t.urls) > 1:
        raise BackendConfigError(f"{spec}: gemini takes one server")
    url = t.urls[0] if t.urls else single_url(base_url, "gemini")
    if url is None and (env_url := os.environ.get("GEMINI_BASE_URL")):
        url = check_url(env_url, spec)  # refused before any call, as --base-url is
    image = image_settings(opts, spec, media_resolution=DEFAULT_MEDIA_RESOLUTION)
    return Gemini(t.model, api_key=key, base_url=url,
                  box_format=opts.get("box_format"), spec=spec, timeout_s=timeout_s,
                  image=image)
