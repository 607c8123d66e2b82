"""The fake server's own count of a request's prompt tokens (``FakeProvider.count_prompt``).

It reads the request body as it arrived on the wire (OpenAI Chat Completions, as OpenAI and
vLLM receive it, and Gemini's ``generateContent``), decodes every image it carries and
measures it, and counts by the same published rules the dry run states
(``unseen.backends.tokens``), implemented again here without importing that module:

- text: ceil(characters / 4) per text part; 3 per message and 3 per request (OpenAI's
  cookbook, "How to count tokens with tiktoken");
- OpenAI's gpt-4o (the vision guide's "Calculating costs"): detail low 85; high: fit in
  2048x2048, shortest side down to 768, 85 + 170 per 512-px tile;
- Gemini 3 (media_resolution): 280 / 560 / 1120 / 2240 per image by the request's
  ``mediaResolution`` (unset: 1120);
- Qwen2.5-VL on vLLM: qwen-vl-utils' smart_resize at factor 28 with the request's
  ``mm_processor_kwargs`` (defaults 4·28² and 16384·28²), one token per 28x28, plus 2 for the
  vision start and end markers.

A model it has no rule for is an error: a test that uses it names only these.
"""

from __future__ import annotations

import base64
import io
import math

from PIL import Image

GEMINI3 = {"MEDIA_RESOLUTION_LOW": 280, "MEDIA_RESOLUTION_MEDIUM": 560,
           "MEDIA_RESOLUTION_HIGH": 1120, "MEDIA_RESOLUTION_ULTRA_HIGH": 2240}


def prompt_tokens(rec) -> int:
    """The prompt tokens of a recorded request (``fake_providers.Recorded``)."""
    if rec.protocol == "gemini":
        return _gemini(rec.model, rec.body)
    if rec.protocol == "openai":
        return _chat(rec.body)
    raise ValueError(f"no token rule for the {rec.protocol} protocol")


def _text(s: str) -> int:
    return -(-len(s) // 4)


def _size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as im:
        return im.size


def _chat(body: dict) -> int:
    model = body["model"]
    n = 3
    for message in body["messages"]:
        n += 3
        content = message["content"]
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if part["type"] == "text":
                n += _text(part["text"])
                continue
            url = part["image_url"]["url"]
            w, h = _size(base64.b64decode(url.split(",", 1)[1]))
            if "qwen2.5-vl" in model.lower():
                n += _qwen25(w, h, body.get("mm_processor_kwargs") or {})
            elif model.startswith("gpt-4o"):
                n += _gpt4o(w, h, part["image_url"].get("detail", "auto"))
            else:
                raise ValueError(f"no image rule for {model}")
    return n


def _gpt4o(w: int, h: int, detail: str) -> int:
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = int(w * scale), int(h * scale)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _qwen25(w: int, h: int, kwargs: dict) -> int:
    lo = kwargs.get("min_pixels", 4 * 28 * 28)
    hi = kwargs.get("max_pixels", 16384 * 28 * 28)
    rh, rw = round(h / 28) * 28, round(w / 28) * 28
    rh, rw = max(28, rh), max(28, rw)
    if rh * rw > hi:
        beta = math.sqrt(h * w / hi)
        rh, rw = max(28, math.floor(h / beta / 28) * 28), max(28, math.floor(w / beta / 28) * 28)
    elif rh * rw < lo:
        beta = math.sqrt(lo / (h * w))
        rh, rw = math.ceil(h * beta / 28) * 28, math.ceil(w * beta / 28) * 28
    return (rh // 28) * (rw // 28) + 2


def _gemini(model: str, body: dict) -> int:
    if not model.startswith("gemini-3"):
        raise ValueError(f"no image rule for {model}")
    config = body.get("generationConfig") or {}
    per_image = GEMINI3[config.get("mediaResolution", "MEDIA_RESOLUTION_HIGH")]
    n = 3
    system = body.get("systemInstruction") or body.get("system_instruction")
    for content in ([system] if system else []) + body["contents"]:
        n += 3
        for part in content["parts"]:
            if "text" in part:
                n += _text(part["text"])
            else:
                inline = part.get("inlineData") or part["inline_data"]
                _size(base64.urlsafe_b64decode(inline["data"] + "=="))  # a real image
                level = (part.get("mediaResolution") or {}).get("level")
                n += GEMINI3[level] if level else per_image
    return n
