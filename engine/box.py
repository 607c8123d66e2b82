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

Convention = Literal["pixel", "norm1000", "gemini", "unit", "qwen2.5"]
CONVENTIONS: tuple[str, ...] = ("pixel", "norm1000", "gemini", "unit", "qwen2.5")

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
        """This box written the way a model of ``convention`` would write it."""
        w, h = float(width), float(height)
        if convention == "pixel":
            return self.to_list()
        if convention == "norm1000":
            return [self.x1 / w * 1000, self.y1 / h * 1000, self.x2 / w * 1000, self.y2 / h * 1000]
        if convention == "gemini":
            return [self.y1 / h * 1000, self.x1 / w * 1000, self.y2 / h * 1000, self.x2 / w * 1000]
        if convention == "unit":
            return [self.x1 / w, self.y1 / h, self.x2 / w, self.y2 / h]
        if convention == "qwen2.5":
            rh, rw = smart_resize(height, width, **qwen_kwargs)
            sx, sy = rw / w, rh / h
            return [self.x1 * sx, self.y1 * sy, self.x2 * sx, self.y2 * sy]
        raise BoxError(unknown_convention(convention))

    @classmethod
    def from_convention(
        cls, values: list[float], convention: str, width: int, height: int, **qwen_kwargs: int
    ) -> Box:
        """Read four numbers written in ``convention`` into a pixel box of the original image."""
        if len(values) != 4:
            raise BoxError(f"a box needs four numbers, got {len(values)}")
        a, b, c, d = (float(v) for v in values)
        w, h = float(width), float(height)
        if convention == "pixel":
            return cls.of([a, b, c, d])
        if convention == "norm1000":
            return cls.of([a / 1000 * w, b / 1000 * h, c / 1000 * w, d / 1000 * h])
        if convention == "gemini":
            return cls.of([b / 1000 * w, a / 1000 * h, d / 1000 * w, c / 1000 * h])
        if convention == "unit":
            return cls.of([a * w, b * h, c * w, d * h])
        if convention == "qwen2.5":
            rh, rw = smart_resize(height, width, **qwen_kwargs)
            return cls.of([a * w / rw, b * h / rh, c * w / rw, d * h / rh])
        raise BoxError(unknown_convention(convention))


def unknown_convention(name: str) -> str:
    return f"unknown box convention {name!r}; choose one of {', '.join(CONVENTIONS)}"
