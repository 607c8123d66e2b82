"""Tokens of a request as each provider counts them: the estimate a dry run adds up.

Nothing here calls a provider: the counts follow the providers' published rules, and where a
rule is an approximation or an assumption it says so. A dry run (``unseen.dryrun``) counts
every request the real strategies build, by the rules of the backend it would go to.

**Text** (every provider): ``ceil(characters / 4)`` per text part, over every message of
the request (a multi-turn request carries the whole dialogue), plus 3 tokens per message
and 3 per request for the chat format. The 4 characters are OpenAI's rule of thumb ("one
token generally corresponds to ~4 characters of text for common English text", OpenAI help
center, "What are tokens and how to count them?") and Google's ("For Gemini models, a token
is equivalent to about 4 characters", ai.google.dev/gemini-api/docs/tokens); the 3 + 3 are
the chat overhead of OpenAI's cookbook "How to count tokens with tiktoken"
(``num_tokens_from_messages``: 3 per message, 3 to prime the reply). tiktoken is not used:
it is not a dependency, it downloads its encodings on first use (a dry run makes no network
call), and it has no encoding for Gemini or Qwen. A reply an earlier turn carried into the
dialogue counts as the output the assumptions below give it (what a model would have
written), not as the simulator's shorter text. Response schemas are not counted.

**Images**, at the size the image is sent (``engine.box.fit_within`` with the backend's
``max_side``; a SPoE overlay is the full image; ``spoe:finish=direct`` sends a crop):

- OpenAI (the vision guide, developers.openai.com/api/docs/guides/images-vision,
  "Calculating costs"; its table as copied in openai-hd4n6.mintlify.app/docs/guides/images):
  *tile* models (gpt-4o, gpt-4.1, gpt-4.5: 85 base + 170 per tile; gpt-4o-mini 2833 +
  5667; o1, o3: 75 + 150; gpt-5, gpt-5.1, gpt-5-chat: 70 + 140): ``detail=low`` is the base;
  ``high`` fits the image in 2048x2048, scales its shortest side down to 768 (never up), and
  adds one tile's tokens per 512-px tile; ``auto`` is counted as ``low`` for an image that
  fits in 512x512 and as ``high`` above (the guide leaves it to the model; this is our
  assumption). *Patch* models (gpt-4.1-mini 1.62, gpt-4.1-nano 2.46, o4-mini 1.72,
  gpt-5-mini 1.62, gpt-5-nano 2.46): 32-px patches covering the image, shrunk to fit 1536
  patches when more (the guide's steps B), times the model's multiplier, rounded up; their
  ``detail`` changes nothing but ``original``. GPT-5.2 and later (GPT-5.4, 5.5, 5.6, GPT-6):
  patches at 1.2, the multiplier users measured (community.openai.com threads 1344040 and
  1377015; openai/codex#19806), as the guide's table does not list them; users also
  measured 1.2 and 1.5 for gpt-5-mini and gpt-5-nano where the guide says 1.62 and 2.46:
  the guide's figures are kept, an overestimate of up to a third there. ``detail=original``:
  patches with a 10,000-patch budget (openai/codex pull 19865, "Cap original-detail image
  token estimates"), times the model's multiplier (1 for tile models: not documented).
- Gemini, by ``media_resolution`` (ai.google.dev/gemini-api/docs/media-resolution, "Token
  counts"; the figures as fastgptplus.com's Gemini 3 guide quotes them): Gemini 3 and later,
  per image whatever its size: low 280, medium 560, high 1120 (the default for images),
  ultra_high 2240. Gemini 1.x and 2.x (ai.google.dev/gemini-api/docs/tokens, as
  geminibyexample.com/027-calculate-input-tokens quotes it): 258 tokens for an image with
  both sides at most 384 px, else 258 per 768x768 tile; their ``media_resolution`` is not
  modelled (no token table for it was found).
- Qwen served by vLLM (``vllm``, ``vllm-local``): the image is smart-resized
  (``engine.box.smart_resize``: qwen-vl-utils ``vision_process.py``, ``smart_resize``) with
  the backend's ``min_pixels`` / ``max_pixels``, then one token per ``factor`` x ``factor``
  block: factor 28 for Qwen2.5-VL (patch 14, 2x2 merge; defaults 4·28² and 16384·28²),
  32 for Qwen3-VL, Qwen3.5 and their fine-tunes (patch 16, 2x2 merge; qwen-vl-utils of the
  Qwen3-VL repository: ``image_patch_size=16``, 4 to 16384 tokens), plus 2 for
  ``<|vision_start|>`` and ``<|vision_end|>``.
- Any other model: a stated fallback, flagged wherever it is used: OpenAI's tile rule at
  high detail (85 + 170 per tile), a stand-in for a rule unseen does not know.

**Output** (a stated assumption, :data:`OUTPUT_ASSUMPTIONS`): the visible reply by what the
request asks, plus, for a model whose profile thinks (``profiles.toml``'s ``thinking``), the
reasoning tokens of :data:`REASONING_ASSUMPTIONS` at the request's reasoning effort (unset:
as ``medium``, the providers' usual default); capped at the request's ``max_tokens``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..engine.box import Convention, fit_within, smart_resize
from ..engine.images import open_image
from ..engine.oracle import Cue
from ..engine.types import ImagePart, Request, TextPart, Usage
from .profiles import Resize, model_key

CHARS_PER_TOKEN = 4
PER_MESSAGE = 3
PER_REQUEST = 3

#: what the visible reply of each kind of request is assumed to hold: (tokens, what it is)
OUTPUT_ASSUMPTIONS: dict[str, tuple[int, str]] = {
    "box": (25, "a box as JSON ({\"box\": [x1, y1, x2, y2]})"),
    "cot": (300, "three short reasoning paragraphs, then the box (cot; cot-sr's first turn)"),
    "reflect": (200, "a reflection on the first answer, then the box (cot-sr's second turn)"),
    "choice": (5, "a region's letter (SPoE), or {\"choice\": ...}"),
    "cells": (15, "the grid cells to eliminate as JSON (spoe-grid)"),
    "fields": (40, "the Director Task's JSON reply ({\"visible\": [...], \"block\": N})"),
    "text": (200, "any other reply (a request that names no kind of answer)"),
}
#: reasoning tokens of a thinking model per reply, by reasoning effort (an assumption)
REASONING_ASSUMPTIONS: dict[str, int] = {
    "none": 0, "minimal": 200, "low": 600, "medium": 1500, "high": 4000, "xhigh": 8000,
    "max": 12000,
}
DEFAULT_EFFORT = "medium"


def text_tokens(text: str) -> int:
    """``ceil(characters / 4)``: the stated approximation of every provider's tokenizer."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


# --- image sizes -------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _file_size(path: str) -> tuple[int, int]:
    with open_image(path) as im:  # the header only
        return im.width, im.height


def sent_size(part: ImagePart, max_side: int | None) -> tuple[int, int]:
    """(width, height) of the image a provider receives for ``part``: the file, or the
    overlay's crop (a zoomed-in region; an overlay of boxes keeps the full image), fitted
    within ``max_side`` as ``engine.images.part_bytes`` sends it."""
    crop = (part.overlay or {}).get("crop")
    if crop is not None:
        x1, y1, x2, y2 = (round(v) for v in crop)
        w, h = max(1, x2 - x1), max(1, y2 - y1)
    else:
        w, h = _file_size(part.path)
    return fit_within(w, h, max_side)


# --- OpenAI ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenAIFamily:
    """One line of the vision guide's table: tile tokens (``base``, ``tile``) or a patch
    ``multiplier``."""

    pattern: str
    base: int = 0
    tile: int = 0
    multiplier: float | None = None  # set: a patch model

    @property
    def name(self) -> str:
        if self.multiplier is not None:
            return f"32-px patches x {self.multiplier:g}"
        return f"{self.base} + {self.tile} per 512-px tile"


#: first match wins (the mini and nano lines before their families)
OPENAI_FAMILIES = (
    OpenAIFamily(r"^gpt-4o-mini", 2833, 5667),
    OpenAIFamily(r"^gpt-4\.1-mini", multiplier=1.62),
    OpenAIFamily(r"^gpt-4\.1-nano", multiplier=2.46),
    OpenAIFamily(r"^o4-mini", multiplier=1.72),
    OpenAIFamily(r"^gpt-5-mini", multiplier=1.62),
    OpenAIFamily(r"^gpt-5-nano", multiplier=2.46),
    OpenAIFamily(r"^gpt-5(\.1)?(-chat)?(-latest)?(-\d{4}-\d{2}-\d{2})?$", 70, 140),
    OpenAIFamily(r"^gpt-5\.([2-9]|\d\d)|^gpt-[6-9]", multiplier=1.2),
    OpenAIFamily(r"^gpt-4o|^gpt-4\.1|^gpt-4\.5", 85, 170),
    OpenAIFamily(r"^(o1|o3)(-|$)", 75, 150),
)
PATCH = 32
PATCH_BUDGET = 1536
ORIGINAL_BUDGET = 10_000


def openai_family(model: str) -> OpenAIFamily | None:
    key = model_key(model)
    return next((f for f in OPENAI_FAMILIES if re.search(f.pattern, key)), None)


def tiles_tokens(width: int, height: int, base: int, tile: int, detail: str | None) -> int:
    """The tile rule: ``low`` the base; ``high`` fit in 2048x2048, shortest side down to
    768, ``base + tile`` per 512-px tile; ``auto`` low up to 512x512, else high."""
    if detail == "low" or (detail == "auto" and max(width, height) <= 512):
        return base
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    return base + tile * math.ceil(math.floor(w) / 512) * math.ceil(math.floor(h) / 512)


def patches(width: int, height: int, budget: int = PATCH_BUDGET) -> int:
    """32-px patches covering the image; over ``budget``, the image shrunk by
    ``sqrt(budget * 32² / (w * h))``, then further so that its sides hold whole patches,
    as the guide's steps B do."""
    n = math.ceil(width / PATCH) * math.ceil(height / PATCH)
    if n <= budget:
        return n
    shrink = math.sqrt(budget * PATCH * PATCH / (width * height))
    w, h = width * shrink / PATCH, height * shrink / PATCH
    shrink *= min(math.floor(w) / w if w >= 1 else 1.0, math.floor(h) / h if h >= 1 else 1.0)
    rw, rh = max(1, math.floor(width * shrink)), max(1, math.floor(height * shrink))
    return min(budget, math.ceil(rw / PATCH) * math.ceil(rh / PATCH))


FALLBACK_FAMILY = OpenAIFamily("", 85, 170)


def openai_image_tokens(family: OpenAIFamily, width: int, height: int,
                        detail: str | None) -> int:
    """One image's tokens on a model of an OpenAI ``family``."""
    mult = family.multiplier
    if detail == "original":
        return math.ceil(patches(width, height, ORIGINAL_BUDGET) * (mult or 1.0))
    if mult is not None:
        return math.ceil(patches(width, height) * mult)
    return tiles_tokens(width, height, family.base, family.tile, detail)


# --- Gemini ------------------------------------------------------------------------------

GEMINI3_TOKENS = {"low": 280, "medium": 560, "high": 1120, "ultra_high": 2240}
_GEMINI_OLD = re.compile(r"^gemini-(1|2)(\.|-|$)")


def gemini_image_tokens(model: str, width: int, height: int, resolution: str | None) -> int:
    """One image's tokens on Gemini: Gemini 3 and later by ``media_resolution`` (unset:
    high); Gemini 1.x/2.x 258, or 258 per 768-px tile above 384x384."""
    if _GEMINI_OLD.search(model_key(model)):
        if width <= 384 and height <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    return GEMINI3_TOKENS.get(resolution or "high", GEMINI3_TOKENS["high"])


# --- Qwen --------------------------------------------------------------------------------

#: profile families whose vision tower is Qwen3-VL's (patch 16, merge 2: factor 32)
QWEN32_FAMILIES = re.compile(r"qwen3|multihopspatial|robobrain")
QWEN25_FAMILIES = re.compile(r"qwen2\.5")
QWEN3_MIN_PIXELS, QWEN3_MAX_PIXELS = 4 * 32 * 32, 16384 * 32 * 32
VISION_MARKERS = 2  # <|vision_start|> and <|vision_end|>


def qwen_image_tokens(width: int, height: int, factor: int, min_pixels: int,
                      max_pixels: int) -> int:
    """One image's tokens on Qwen: the smart-resized size / factor², plus the two markers."""
    h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
    return (h // factor) * (w // factor) + VISION_MARKERS


# --- a backend's rules -------------------------------------------------------------------


@dataclass(frozen=True)
class TokenRules:
    """How one backend's requests are counted: its image rule (``name``, ``fallback`` when
    unseen knows no rule for the model) and whether it thinks."""

    provider: str
    model: str
    name: str
    fallback: bool = False
    thinking: bool = False
    max_side: int | None = None
    detail: str | None = None
    media_resolution: str | None = None
    qwen: tuple[int, int, int] | None = None  # factor, min_pixels, max_pixels
    openai: OpenAIFamily = FALLBACK_FAMILY  # an OpenAI model's family (and the fallback's)

    def image(self, width: int, height: int) -> int:
        """One image's tokens at its size as sent."""
        if self.qwen is not None:
            return qwen_image_tokens(width, height, *self.qwen)
        if self.provider == "gemini":
            return gemini_image_tokens(self.model, width, height, self.media_resolution)
        return openai_image_tokens(self.openai, width, height, self.detail or "high")


def rules_for(backend: Any) -> TokenRules:
    """The token rules of a backend (its provider, model, image settings, box convention
    and profile)."""
    provider, model = str(backend.provider), str(backend.model)
    image = getattr(backend, "image", None)
    profile = getattr(backend, "profile", None)
    common: dict[str, Any] = {"provider": provider, "model": model,
              "max_side": getattr(image, "max_side", None),
              "thinking": bool(profile is not None and profile.thinking)}
    if provider.startswith("openai"):
        detail = getattr(image, "detail", None) or "high"
        family = openai_family(model)
        if family is not None:  # a patch model's detail changes nothing but "original"
            said = family.multiplier is None or detail == "original"
            return TokenRules(name=f"OpenAI {family.name}" + (f", detail {detail}" if said
                                                              else ""),
                              detail=detail, openai=family, **common)
        return TokenRules(name=f"fallback: OpenAI's tile rule at detail {detail}",
                          fallback=True, detail=detail, **common)
    if provider == "gemini":
        resolution = getattr(image, "media_resolution", None) or "high"
        if _GEMINI_OLD.search(model_key(model)):
            return TokenRules(name="Gemini 2.x: 258 per 768-px tile", **common)
        return TokenRules(name=f"Gemini 3 media_resolution {resolution}: "
                               f"{GEMINI3_TOKENS[resolution]} per image",
                          media_resolution=resolution, **common)
    if provider in ("vllm", "vllm-local") and (qwen := _qwen(backend, profile, image)):
        factor, lo, hi = qwen
        return TokenRules(name=f"Qwen smart_resize / {factor}², pixels {lo}-{hi}", qwen=qwen,
                          **common)
    return TokenRules(name="fallback: OpenAI's tile rule at high detail", fallback=True,
                      **common)


def _qwen(backend: Any, profile: Any, image: Any) -> tuple[int, int, int] | None:
    """(factor, min_pixels, max_pixels) of a Qwen model, or None for another family."""
    conv = getattr(backend, "box_format", None)
    if isinstance(conv, Convention) and conv.name == "qwen2.5":  # the profile's and spec's
        return conv.factor, conv.min_pixels, conv.max_pixels
    family = profile.name.lower() if profile is not None else ""
    lo, hi = getattr(image, "min_pixels", None), getattr(image, "max_pixels", None)
    if QWEN25_FAMILIES.search(family):  # asked for boxes in another convention
        resize = profile.resize or Resize()
        return resize.factor, lo or resize.min_pixels, hi or resize.max_pixels
    if QWEN32_FAMILIES.search(family):
        return 32, lo or QWEN3_MIN_PIXELS, hi or QWEN3_MAX_PIXELS
    return None


# --- one request -------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestTokens:
    """One request's estimate: input text and image tokens, visible output and reasoning
    tokens (both billed as output), and the kind of answer it asks."""

    text: int
    image: int
    output: int
    reasoning: int
    kind: str

    def usage(self) -> Usage:
        """As a reply's usage: input text and images in, visible output and reasoning out."""
        return Usage(input_tokens=self.text + self.image,
                     output_tokens=self.output + self.reasoning,
                     reasoning_tokens=self.reasoning)


def request_kind(request: Request) -> str:
    """The kind of answer a request asks (a key of :data:`OUTPUT_ASSUMPTIONS`)."""
    kind = request.answer.kind if request.answer is not None else "text"
    if kind == "box":
        cues: frozenset = getattr(request.oracle, "cues", frozenset())
        if Cue.REFLECTION in cues:
            return "reflect"
        if Cue.REASONING in cues:
            return "cot"
    return kind if kind in OUTPUT_ASSUMPTIONS else "text"


def output_tokens(kind: str, rules: TokenRules, effort: str | None,
                  max_tokens: int | None) -> tuple[int, int]:
    """(visible, reasoning) output tokens of a reply of ``kind``, capped at ``max_tokens``."""
    visible = OUTPUT_ASSUMPTIONS[kind][0]
    reasoning = 0
    if rules.thinking:
        reasoning = REASONING_ASSUMPTIONS.get(effort or DEFAULT_EFFORT,
                                              REASONING_ASSUMPTIONS[DEFAULT_EFFORT])
    if max_tokens is not None and visible + reasoning > max_tokens:
        reasoning = max(0, min(reasoning, max_tokens - 1))
        visible = max(1, max_tokens - reasoning)
    return visible, reasoning


def count_request(request: Request, rules: TokenRules,
                  carried: Mapping[str, int] | None = None) -> RequestTokens:
    """A request's tokens by ``rules``; ``carried`` maps the text of a reply an earlier turn
    carried into the dialogue to the output tokens assumed for it."""
    carried = carried or {}
    text = PER_REQUEST
    image = 0
    for message in request.messages:
        text += PER_MESSAGE
        if message.role == "assistant" and message.text in carried:
            text += carried[message.text]
            continue
        for part in message.parts:
            if isinstance(part, TextPart):
                text += text_tokens(part.text)
            else:
                image += rules.image(*sent_size(part, rules.max_side))
    kind = request_kind(request)
    d = request.decoding
    visible, reasoning = output_tokens(kind, rules, d.reasoning_effort, d.max_tokens)
    return RequestTokens(text=text, image=image, output=visible, reasoning=reasoning,
                         kind=kind)
