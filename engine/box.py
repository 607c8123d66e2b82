"""Boxes in the one internal convention, and the conventions models answer in.

Internally a box is pixel ``[x1, y1, x2, y2]`` in the original image, with ``x1 < x2`` and
``y1 < y2``. Each model family answers in its own convention; converting is explicit and
chosen from a model profile, never guessed from the magnitude of the numbers.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .errors import UnseenError

CONVENTIONS: tuple[str, ...] = ("pixel", "norm1000", "gemini", "unit", "qwen2.5", "qwen3")

# Qwen2.5-VL's preprocessor defaults (REFERENCE.md): sides are multiples of 28 and the
# total pixel count is kept within [4*28^2, 16384*28^2].
QWEN25_FACTOR = 28
QWEN25_MIN_PIXELS = 4 * 28 * 28
QWEN25_MAX_PIXELS = 16384 * 28 * 28


class BoxError(UnseenError, ValueError):
    """A box that cannot exist: inverted, empty, non-finite, or outside the image."""


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN25_FACTOR,
    min_pixels: int = QWEN25_MIN_PIXELS,
    max_pixels: int = QWEN25_MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2.5-VL's input size: each side rounded to a multiple of ``factor``, area clamped.

    Returns ``(height', width')``; e.g. 1440×1920 → 1428×1932.
    """
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def fit_within(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """The size an image is sent at when its longer side may be at most ``max_side``:
    scaled by ``max_side / max(width, height)`` (never up), each side rounded, at least 1."""
    if not max_side or max(width, height) <= max_side:
        return width, height
    s = max_side / max(width, height)
    return max(1, round(width * s)), max(1, round(height * s))


# The JSON key each convention's prompt asks for, and what its numbers measure. A reply that
# writes another convention's key, or a number outside the range, is a format mismatch: the
# reply is not in the convention asked, and guessing which it is in is what we never do.
_KEYS = {"pixel": "box", "norm1000": "box", "unit": "box", "gemini": "box_2d",
         "qwen2.5": "bbox_2d", "qwen3": "bbox_2d"}
#: keys that name a convention (the others, ``bbox`` and ``bounding_box``, name none)
CONVENTION_KEYS = frozenset(_KEYS.values())
#: native forms without a key, by the conventions whose numbers they are written in:
#: InternVL's ``<box>[[x1,y1,x2,y2]]</box>`` and Qwen2-VL's ``(x1,y1),(x2,y2)``, both 0-1000
_NATIVE = {"internvl": frozenset({"norm1000", "qwen3"}), "qwen2": frozenset({"norm1000", "qwen3"})}
_RANGE = {"norm1000": 1000.0, "gemini": 1000.0, "qwen3": 1000.0, "unit": 1.0}
PIXEL_SLACK = 1.0  # a pixel box may overshoot its frame by a pixel (an edge rounded out)


class Convention(str):
    """A box convention: its name (this string: ``pixel``, ``norm1000``, ``gemini``,
    ``unit``, ``qwen2.5``, ``qwen3``) and the backend's image settings its numbers depend on.

    A ``str``, so that every strategy that passes ``backend.box_format`` (plug-ins included)
    passes these settings with it and nothing guesses them:

    - ``max_side``: the image is sent with its longer side at most this (``fit_within``), so
      a ``pixel`` box is in the pixels of the image as sent;
    - ``factor``, ``min_pixels``, ``max_pixels``: Qwen2.5-VL's resize (``smart_resize``) of the
      image as sent; a ``qwen2.5`` box is in the pixels of that resized input.

    Conversion: original (W, H) → sent (W_s, H_s) = fit_within(W, H, max_side) → the model's
    frame: pixel (W_s, H_s); qwen2.5 smart_resize(H_s, W_s) = (H', W'); back to the original
    by x·W/W_frame, y·H/H_frame. The normalized conventions do not depend on the size.
    """

    max_side: int | None
    factor: int
    min_pixels: int
    max_pixels: int

    def __new__(cls, name: str, *, max_side: int | None = None, factor: int = QWEN25_FACTOR,
                min_pixels: int = QWEN25_MIN_PIXELS, max_pixels: int = QWEN25_MAX_PIXELS):
        if name not in CONVENTIONS:
            raise BoxError(unknown_convention(str(name)))
        if max_side is not None and max_side < 1:
            raise BoxError(f"max_side must be a positive number of pixels, got {max_side}")
        if not (factor >= 1 and 1 <= min_pixels <= max_pixels):
            raise BoxError(f"bad resize: factor {factor}, min_pixels {min_pixels}, "
                           f"max_pixels {max_pixels} (need 1 <= min_pixels <= max_pixels)")
        obj = super().__new__(cls, name)
        obj.max_side, obj.factor = max_side, factor
        obj.min_pixels, obj.max_pixels = min_pixels, max_pixels
        return obj

    @classmethod
    def of(cls, value: str | Convention | None) -> Convention:
        """``value`` as a Convention (a plain name gets the default settings); None (a
        backend whose convention no profile knows, refused before a run) is a BoxError."""
        if value is None:
            raise BoxError("no box convention is known for this backend (give --box-format)")
        return value if isinstance(value, Convention) else cls(value)

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def key(self) -> str:
        """The JSON key this convention's prompt asks for."""
        return _KEYS[self.name]

    def settings(self) -> dict[str, int]:
        """The settings that are not the defaults (what run.json records beside the name)."""
        out: dict[str, int] = {}
        if self.max_side is not None:
            out["max_side"] = self.max_side
        if self.name == "qwen2.5":
            out.update(factor=self.factor, min_pixels=self.min_pixels,
                       max_pixels=self.max_pixels)
        return out

    def sent_size(self, width: int, height: int) -> tuple[int, int]:
        """(W_s, H_s): the size the image is sent at."""
        return fit_within(int(width), int(height), self.max_side)

    def frame(self, width: int, height: int) -> tuple[float, float]:
        """The (width, height) the numbers of a box in this convention measure."""
        if self.name in _RANGE:
            return _RANGE[self.name], _RANGE[self.name]
        ws, hs = self.sent_size(width, height)
        if self.name == "qwen2.5":
            rh, rw = smart_resize(hs, ws, self.factor, self.min_pixels, self.max_pixels)
            return float(rw), float(rh)
        return float(ws), float(hs)

    def accepts(self, source: str) -> bool:
        """Whether a box written as ``source`` (a JSON key, ``list``, ``internvl``, ``qwen2``)
        can be in this convention."""
        if source in CONVENTION_KEYS:
            return source == self.key
        if source in _NATIVE:
            return self.name in _NATIVE[source]
        return True  # bbox, bounding_box, a bare list: the prompt said which convention

    def out_of_range(self, values: list[float], width: int, height: int) -> str | None:
        """Why these numbers cannot be a box in this convention, or None."""
        fw, fh = self.frame(width, height)
        slack = 0.0 if self.name in _RANGE else PIXEL_SLACK
        xs, ys = (values[1::2], values[0::2]) if self.name == "gemini" else \
            (values[0::2], values[1::2])
        for v, top in [*((x, fw) for x in xs), *((y, fh) for y in ys)]:
            if v < -slack or v > top + slack:
                return (f"{v:g} is outside the {self.name} range 0-{top:g}"
                        + (f" ({width}x{height} image)" if slack else ""))
        return None


class Box(BaseModel):
    """Pixel box ``[x1, y1, x2, y2]`` in the original image; ``x1 < x2``, ``y1 < y2``."""

    model_config = ConfigDict(frozen=True)

    x1: float
    y1: float
    x2: float
    y2: float

    def __init__(self, **data: float):
        try:
            super().__init__(**data)
        except ValidationError as exc:  # one clear error type for every bad box
            first = exc.errors()[0]
            reason = first.get("ctx", {}).get("error") or first.get("msg")
            raise BoxError(str(reason)) from None

    @model_validator(mode="after")
    def _ordered(self) -> Box:
        vals = (self.x1, self.y1, self.x2, self.y2)
        if not all(math.isfinite(v) for v in vals):
            raise BoxError(f"box has a non-finite coordinate: {list(vals)}")
        if not (self.x1 < self.x2 and self.y1 < self.y2):
            raise BoxError(f"box must have x1 < x2 and y1 < y2, got {list(vals)}")
        return self

    # construction -------------------------------------------------------------------------
    @classmethod
    def of(cls, values: list[float] | tuple[float, ...]) -> Box:
        """From ``[x1, y1, x2, y2]``; raises BoxError unless there are exactly four numbers."""
        if len(values) != 4:
            raise BoxError(f"a box needs four numbers, got {len(values)}")
        try:
            x1, y1, x2, y2 = (float(v) for v in values)
        except (TypeError, ValueError) as exc:
            raise BoxError(f"a box needs four numbers, got {list(values)!r}") from exc
        return cls(x1=x1, y1=y1, x2=x2, y2=y2)

    @classmethod
    def full(cls, width: float, height: float) -> Box:
        """The whole image."""
        return cls(x1=0.0, y1=0.0, x2=float(width), y2=float(height))

    def to_list(self) -> list[float]:
        return [self.x1, self.y1, self.x2, self.y2]

    # geometry -----------------------------------------------------------------------------
    @property
    def width(self) -> float:
        return self.x2 - self.x1

    @property
    def height(self) -> float:
        return self.y2 - self.y1

    @property
    def area(self) -> float:
        return self.width * self.height

    @property
    def center(self) -> tuple[float, float]:
        return ((self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2)

    def intersection(self, other: Box) -> float:
        """Area of the overlap (0 when disjoint)."""
        w = min(self.x2, other.x2) - max(self.x1, other.x1)
        h = min(self.y2, other.y2) - max(self.y1, other.y1)
        return w * h if w > 0 and h > 0 else 0.0

    def iou(self, other: Box) -> float:
        """|A ∩ B| / |A ∪ B|.

        Boxes whose areas underflow to 0 (sides below about 1e-154) are measured in the
        pair's own frame, scaled to the unit square, so a box still has IoU 1 with itself."""
        inter = self.intersection(other)
        union = self.area + other.area - inter
        if union > 0:
            return inter / union
        x0, y0 = min(self.x1, other.x1), min(self.y1, other.y1)
        sx, sy = max(self.x2, other.x2) - x0, max(self.y2, other.y2) - y0
        a, b = ([(v.x1 - x0) / sx, (v.y1 - y0) / sy, (v.x2 - x0) / sx, (v.y2 - y0) / sy]
                for v in (self, other))
        try:
            sa, sb = Box.of(a), Box.of(b)
        except BoxError:  # a side lost to rounding in the pair's frame: no measurable overlap
            return 0.0
        inter = sa.intersection(sb)
        union = sa.area + sb.area - inter
        return inter / union if union > 0 else 0.0

    def contains(self, other: Box) -> bool:
        """True when ``other`` lies inside this box (edges may touch)."""
        return (
            self.x1 <= other.x1 and self.y1 <= other.y1 and other.x2 <= self.x2 and other.y2 <= self.y2
        )

    def clip(self, width: float, height: float) -> Box:
        """This box cut to the image; BoxError when nothing of it lies inside."""
        x1, y1 = max(0.0, self.x1), max(0.0, self.y1)
        x2, y2 = min(float(width), self.x2), min(float(height), self.y2)
        if not (x1 < x2 and y1 < y2):
            raise BoxError(f"box {self.to_list()} lies outside the {width}x{height} image")
        return Box(x1=x1, y1=y1, x2=x2, y2=y2)

    def inside(self, width: float, height: float) -> bool:
        return self.x1 >= 0 and self.y1 >= 0 and self.x2 <= width and self.y2 <= height

    def split(self, axis: Literal["vertical", "horizontal"], share: float = 0.5) -> tuple[Box, Box]:
        """Two halves: ``vertical`` cuts with a vertical line (left | right), ``horizontal``
        with a horizontal one (top / bottom). ``share`` is the first part's share of the side;
        with ``share > 0.5`` each part covers that share, so the two overlap in the middle.
        """
        if not 0 < share < 1:
            raise BoxError(f"split share must be in (0, 1), got {share}")
        if axis == "vertical":
            cut1 = self.x1 + self.width * share
            cut2 = self.x2 - self.width * share if share > 0.5 else cut1
            return (
                Box(x1=self.x1, y1=self.y1, x2=cut1, y2=self.y2),
                Box(x1=cut2, y1=self.y1, x2=self.x2, y2=self.y2),
            )
        if axis == "horizontal":
            cut1 = self.y1 + self.height * share
            cut2 = self.y2 - self.height * share if share > 0.5 else cut1
            return (
                Box(x1=self.x1, y1=self.y1, x2=self.x2, y2=cut1),
                Box(x1=self.x1, y1=cut2, x2=self.x2, y2=self.y2),
            )
        raise BoxError(f"split axis must be 'vertical' or 'horizontal', got {axis!r}")

    # conventions --------------------------------------------------------------------------
    def to_convention(
        self, convention: str, width: int, height: int, **qwen_kwargs: int
    ) -> list[float]:
        """This box written the way a model of ``convention`` would write it (``width`` x
        ``height``: the original image; the convention's settings say how it was sent)."""
        conv = _convention(convention, qwen_kwargs)
        w, h = float(width), float(height)
        fw, fh = conv.frame(width, height)
        vals = [self.x1 / w * fw, self.y1 / h * fh, self.x2 / w * fw, self.y2 / h * fh]
        if conv.name == "gemini":  # y first
            return [vals[1], vals[0], vals[3], vals[2]]
        return vals

    @classmethod
    def from_convention(
        cls, values: list[float], convention: str, width: int, height: int, **qwen_kwargs: int
    ) -> Box:
        """Read four numbers written in ``convention`` into a pixel box of the original image:
        x·W/W_frame, y·H/H_frame (``Convention.frame``; Gemini's are y first)."""
        conv = _convention(convention, qwen_kwargs)
        if len(values) != 4:
            raise BoxError(f"a box needs four numbers, got {len(values)}")
        a, b, c, d = (float(v) for v in values)
        if conv.name == "gemini":
            a, b, c, d = b, a, d, c
        w, h = float(width), float(height)
        fw, fh = conv.frame(width, height)
        return cls.of([a * w / fw, b * h / fh, c * w / fw, d * h / fh])


def _convention(convention: str, qwen_kwargs: dict[str, int]) -> Convention:
    if qwen_kwargs:
        base = Convention.of(convention)
        return Convention(base.name, max_side=base.max_side, **{
            "factor": base.factor, "min_pixels": base.min_pixels,
            "max_pixels": base.max_pixels, **qwen_kwargs})
    return Convention.of(convention)


def unknown_convention(name: str) -> str:
    return f"unknown box convention {name!r}; choose one of {', '.join(CONVENTIONS)}"


def no_convention(model: str, profile: str | None = None, note: str = "") -> str:
    """The one line that refuses a box strategy for a model whose box convention no model
    profile gives (``backends/profiles.toml``): none knows the model, or the one that
    knows it (``profile``, with its ``note``) gives no box convention."""
    why = (f"model profile {profile!r} knows {model!r} but gives no box convention"
           + (f" ({note})" if note else "") if profile else
           f"no model profile knows {model!r}, so the box convention to ask it for is unknown")
    return (f"{why}: give it with --box-format ({', '.join(CONVENTIONS)}) or box_format=... "
            "in the backend spec, or add the model to a profile file (--profiles FILE, TOML "
            "[[profile]] with pattern and box_format; see README, 'Model profiles')")
