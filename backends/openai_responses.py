"""OpenAI's Responses API (``POST /v1/responses``) through the ``openai`` SDK.

Unlike Chat Completions, the Responses API returns the reasoning trace, as summaries:
``reasoning={"effort": ..., "summary": "auto"}`` in the request, and ``reasoning`` output items
whose ``summary`` holds ``summary_text`` parts in the reply. Every summary part of every
reasoning item, joined by blank lines, becomes ``Reply.reasoning``.

Request mapping: messages go in ``input`` (user and system content as ``input_text`` /
``input_image`` parts, images as base64 data URLs; assistant turns as plain strings, since
the API takes only ``output_text`` parts, never ``input_text``, in an assistant message);
``max_output_tokens``; ``temperature`` only where the model profile allows sampling
parameters (the Responses API has no ``seed``: it is never sent); structured output in
``text.format`` (a strict ``json_schema``; choices become a strict enum schema, as for
``openai``). ``store`` is false: nothing is kept server-side. The SDK's own retries are off
(``max_retries=0``): retries live in ``Reliable``; errors are classified as for ``openai``.

Reply: ``finish_reason`` is "stop" for a completed response, "length" when it stopped at
``max_output_tokens``, "content_filter" when filtered. A failed response is an error; a body
that is not a response object is "malformed"; one with no output text is "empty".
"""

from __future__ import annotations

import time
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.images import data_url, prepare, request_images
from ..engine.types import ImagePart, Message, Reply, Request, TextPart, Usage
from .base import provider
from .openai_chat import (
    OpenAIClientBackend,
    choice_schema,
    openai_backend,
)

# ``incomplete_details.reason`` → finish_reason, in Chat Completions' words
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
# ``error.code`` of a failed response → error kind (anything else: a client error)
_FAILED = {"server_error": "server", "rate_limit_exceeded": "rate_limit"}
# model families whose Responses calls reject a ``reasoning`` parameter
_NO_REASONING = {"gpt-4"}


def _message(m: Message, image: Any = None) -> dict[str, Any]:
    """One ``input`` item (an easy input message) for ``m``; ``image`` (``ImageSettings``)
    resizes images (``max_side``) and sets their ``detail`` (the API's default: auto)."""
    if m.role == "assistant":
        if any(isinstance(p, ImagePart) for p in m.parts):
            raise ProviderError("client", "an assistant turn cannot carry an image")
        return {"role": "assistant", "content": m.text}
    if m.role == "system":
        if any(isinstance(p, ImagePart) for p in m.parts):
            raise ProviderError("client", "a system message cannot carry an image")
        return {"role": "system", "content": m.text}
    content: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, TextPart):
            content.append({"type": "input_text", "text": p.text})
        elif isinstance(p, ImagePart):
            content.append({"type": "input_image",
                            "image_url": data_url(p, getattr(image, "max_side", None),
                                                 getattr(image, "draw_fitted", None)),
                            "detail": getattr(image, "detail", None) or "auto"})
    return {"role": m.role, "content": content}


def _items(value: Any, what: str) -> list[dict[str, Any]]:
    """``value`` as a list of JSON objects, or a "malformed" error naming ``what``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ProviderError("malformed", f"the response's {what} is not a list of objects")
    return value


def _count(obj: Any, name: str) -> int:
    value = obj.get(name) if isinstance(obj, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_response(resp: Any) -> tuple[str, str | None, Usage, str | None]:
    """(text, reasoning, usage, finish_reason) of a Responses API body (parsed JSON)."""
    if not isinstance(resp, dict) or not isinstance(resp.get("output"), list):
        raise ProviderError("malformed", "the reply is not a response object with an output list")
    status = resp.get("status")
    if status == "failed":
        err = e if isinstance(e := resp.get("error"), dict) else {}
        code = str(err.get("code") or "")
        failed = _FAILED.get(code, "client")
        detail = ": ".join(str(x) for x in (code, err.get("message")) if x)
        raise ProviderError(failed, f"the response failed: {detail or 'no error given'}")
    if status in ("in_progress", "queued", "cancelled"):
        raise ProviderError("malformed", f"the response is {status}, not finished")
    texts: list[str] = []
    summaries: list[str] = []
    refused = False
    for item in _items(resp["output"], "output"):
        kind = item.get("type")
        if kind == "message":
            for part in _items(item.get("content"), "message content"):
                if part.get("type") == "output_text":
                    if not isinstance(part.get("text"), str):
                        raise ProviderError("malformed", "an output_text part has no text")
                    texts.append(part["text"])
                elif part.get("type") == "refusal":
                    refused = True
        elif kind == "reasoning":
            for part in _items(item.get("summary"), "reasoning summary"):
                text = part.get("text")
                if part.get("type") == "summary_text" and isinstance(text, str) and text.strip():
                    summaries.append(text.strip())
    finish: str | None = None
    if status == "incomplete":
        details = resp.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = _INCOMPLETE.get(str(reason), str(reason) if reason else "incomplete")
    elif status in ("completed", None):
        finish = "refusal" if refused and not texts else "stop"
    else:
        raise ProviderError("malformed", f"unknown response status {status!r}")
    text = "".join(texts)
    if not text.strip() and finish != "length":
        why = f" (finish_reason {finish})" if finish not in (None, "stop") else ""
        raise ProviderError("empty", f"the response has no output text{why}")
    usage = Usage()
    u = resp.get("usage")
    if isinstance(u, dict):
        usage = Usage(input_tokens=_count(u, "input_tokens"),
                      output_tokens=_count(u, "output_tokens"),
                      reasoning_tokens=_count(u.get("output_tokens_details"), "reasoning_tokens"),
                      cached_input_tokens=_count(u.get("input_tokens_details"), "cached_tokens"))
    return text, "\n\n".join(summaries) or None, usage, finish


class OpenAIResponses(OpenAIClientBackend):
    provider = "openai-responses"
    capabilities = Capabilities(json_schema=True, choices=True, logprobs=False, reasoning=True)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "api": "responses"}

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body of the Responses request."""
        d = request.decoding
        kw: dict[str, Any] = {
            "model": self.model,
            "input": [_message(m, self.image) for m in request.messages],
            "store": False,
        }
        sampling = self.profile is None or self.profile.sampling
        if sampling and d.temperature is not None:
            kw["temperature"] = d.temperature
        if d.max_tokens is not None:
            kw["max_output_tokens"] = d.max_tokens
        family = self.profile.name if self.profile is not None else ""
        if d.reasoning_effort is not None and family not in _NO_REASONING:
            reasoning: dict[str, Any] = {"effort": d.reasoning_effort}
            if d.reasoning_effort != "none":
                reasoning["summary"] = "auto"
            kw["reasoning"] = reasoning
        if d.choices:
            kw["text"] = {"format": {"type": "json_schema", "name": "choice",
                                     "schema": choice_schema(d.choices), "strict": True}}
        elif d.json_schema is not None:
            kw["text"] = {"format": {"type": "json_schema", "name": "answer",
                                     "schema": d.json_schema, "strict": True}}
        return kw

    async def complete(self, request: Request) -> Reply:
        t0 = time.perf_counter()
        await prepare(request_images(request), self.image)
        # ``object`` keeps the reply as parsed JSON, read (and checked) below
        resp = await self.post("/responses", self.payload(request), object)
        return reply_of(resp, time.perf_counter() - t0)


def reply_of(resp: Any, latency: float = 0.0) -> Reply:
    """The Reply of a Responses API body (parsed JSON; a batch's lines are read here too)."""
    text, reasoning, usage, finish = read_response(resp)
    model = resp.get("model") if isinstance(resp, dict) else None
    return Reply(text=text, reasoning=reasoning, usage=usage, latency_s=latency,
                 finish_reason=finish,
                 served={"model": model} if isinstance(model, str) and model else None)


@provider("openai-responses",
          "openai-responses:MODEL[@URL[,URL...]][,key_env=VAR,detail=...]  (Responses API, "
          "reasoning summaries; OPENAI_API_KEY; OPENAI_BASE_URL or --base-url)")
def _openai_responses(target: str, *, spec: str, base_url: str | list[str] | None = None,
                      api_key: str | None = None, box_format: str | None = None,
                      timeout_s: float = 120.0, max_image_side: int | None = None, **_: Any):
    return openai_backend(OpenAIResponses, target, spec=spec, base_url=base_url,
                          api_key=api_key, box_format=box_format, timeout_s=timeout_s,
                          max_image_side=max_image_side, example="openai-responses:gpt-5-mini")
