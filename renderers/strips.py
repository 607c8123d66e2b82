"""A trajectory as one image strip, for papers and issue reports (Pillow only).

One tile per step, left to right: the image the model saw (its overlay redrawn), scaled to a
common height, with a caption under it ("t=2 eliminate A", a box); then a final tile with the
prediction in red and the ground truth in green. An optional title runs across the top.

Geometry, in PNG pixels: a margin ``pad`` all round; tiles ``height`` tall, each as wide as its
image at that height (``round(w · height / h)``), ``gap`` apart; under them a caption band of
``caption_lines`` lines. ``strip`` returns a ``StripLayout`` that says where each tile landed,
so tests and callers can map image pixels to strip pixels exactly.

``draw_marks`` outlines boxes in given colours with a tag each (a Director scene's hidden,
director-view and chosen blocks); ``wrap_text`` is shared with the Director Task's PNG panel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

from .figures import PRED_COLOR, TRUTH_COLOR
from .textures import font

PRED_RGB = tuple(round(255 * c) for c in PRED_COLOR)
TRUTH_RGB = tuple(round(255 * c) for c in TRUTH_COLOR)


def draw_result(image: Image.Image, prediction: Sequence[float] | None,
                truth: Sequence[float] | None, line: int | None = None) -> Image.Image:
    """A copy of ``image`` with the prediction (red) and the truth (green, on top) outlined;
    line width scales with the image unless given."""
    out = image.convert("RGB").copy()
    d = ImageDraw.Draw(out)
    w, h = out.size
    line = line or max(2, round(min(w, h) / 160))
    for box, color in ((prediction, PRED_RGB), (truth, TRUTH_RGB)):
        if not box:
            continue
        x1, y1, x2, y2 = (round(v) for v in box)
        x2, y2 = max(x1, min(x2, w) - 1), max(y1, min(y2, h) - 1)
        d.rectangle([x1, y1, x2, y2], outline=color, width=line)
    return out


@dataclass
class Mark:
    """A box to outline on an image: its colour, an optional tag, and an optional second
    outline (``ring``) just outside it, e.g. to say the model chose this box too."""

    box: Sequence[float]
    color: tuple[int, int, int]
    label: str = ""
    ring: tuple[int, int, int] | None = None


def draw_marks(image: Image.Image, marks: Sequence[Mark], *, line: int | None = None,
               font_size: int | None = None, labels: bool = True) -> Image.Image:
    """A copy of ``image`` with each mark outlined; its tag (white on the mark's colour) sits
    just above the box, or inside its top edge when the box touches the image's top. Line
    width and font size scale with the image unless given."""
    out = image.convert("RGB").copy()
    d = ImageDraw.Draw(out)
    w, h = out.size
    line = line or max(2, round(min(w, h) / 160))
    size = font_size or max(11, round(min(w, h) / 26))
    f = font(size)
    pad = max(1, size // 6)
    for m in marks:
        x1, y1, x2, y2 = (round(v) for v in m.box)
        x1, y1 = max(0, x1), max(0, y1)
        x2, y2 = max(x1, min(x2, w - 1)), max(y1, min(y2, h - 1))
        if m.ring:
            d.rectangle([x1 - 2 * line, y1 - 2 * line, x2 + 2 * line, y2 + 2 * line],
                        outline=m.ring, width=line)
        d.rectangle([x1, y1, x2, y2], outline=m.color, width=line)
    if labels:  # tags after every outline, so no outline crosses a tag
        for m in marks:
            if not m.label:
                continue
            x1, y1 = max(0, round(m.box[0])), max(0, round(m.box[1]))
            _, top, right, bottom = d.textbbox((0, 0), m.label, font=f)
            th = bottom - top + 2 * pad
            ty = y1 - th - (2 * line if m.ring else 0)
            ty = ty if ty >= 0 else y1 + line
            tx = min(x1, max(0, w - (right + 2 * pad)))
            d.rectangle([tx, ty, tx + right + 2 * pad, ty + th], fill=m.color)
            d.text((tx + pad, ty + pad - top), m.label, fill=(255, 255, 255), font=f)
    return out


@dataclass
class Tile:
    image: Image.Image
    caption: str = ""


@dataclass
class StripLayout:
    """Where things landed in the PNG (pixels, origin top-left)."""

    width: int
    height: int
    # per tile: (x0, y0, w, h) of its image, and its scale (strip pixels per image pixel)
    tiles: list[tuple[int, int, int, int]] = field(default_factory=list)
    scales: list[tuple[float, float]] = field(default_factory=list)

    def to_png(self, tile: int, x: float, y: float) -> tuple[float, float]:
        x0, y0, _, _ = self.tiles[tile]
        sx, sy = self.scales[tile]
        return x0 + x * sx, y0 + y * sy


def wrap_text(draw: ImageDraw.ImageDraw, text: str, f, width: int, max_lines: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels, at most ``max_lines`` lines (the last ends "…")."""
    lines: list[str] = []
    for para in text.splitlines() or [""]:
        cur = ""
        for word in para.split(" "):
            trial = f"{cur} {word}" if cur else word
            if cur and draw.textlength(trial, font=f) > width:
                lines.append(cur)
                cur = word
            else:
                cur = trial
        lines.append(cur)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        last = lines[-1]
        while last and draw.textlength(last + " …", font=f) > width:
            last = last[:-1]
        lines[-1] = last + " …"
    return lines


def strip(tiles: Sequence[Tile], out: str | Path | None = None, *, height: int = 240,
          gap: int = 8, pad: int = 8, caption_lines: int = 2, font_size: int = 13,
          title: str = "") -> tuple[Image.Image, StripLayout]:
    """Lay the tiles out in one row and write the PNG to ``out`` (when given)."""
    if not tiles:
        raise ValueError("a strip needs at least one tile")
    f = font(font_size)
    line_h = font_size + 4
    title_h = line_h + pad // 2 if title else 0
    caption_h = pad // 2 + caption_lines * line_h
    widths = [max(1, round(t.image.width * height / t.image.height)) for t in tiles]
    width = 2 * pad + sum(widths) + gap * (len(tiles) - 1)
    total_h = 2 * pad + title_h + height + caption_h
    canvas = Image.new("RGB", (width, total_h), "white")
    d = ImageDraw.Draw(canvas)
    layout = StripLayout(width=width, height=total_h)
    if title:
        d.text((pad, pad), wrap_text(d, title, f, width - 2 * pad, 1)[0], fill=(20, 20, 20), font=f)
    x = pad
    y = pad + title_h
    for tile, w in zip(tiles, widths, strict=True):
        img = tile.image.convert("RGB")
        canvas.paste(img.resize((w, height), Image.Resampling.LANCZOS), (x, y))
        layout.tiles.append((x, y, w, height))
        layout.scales.append((w / img.width, height / img.height))
        for i, text in enumerate(wrap_text(d, tile.caption, f, w, caption_lines)):
            d.text((x, y + height + pad // 2 + i * line_h), text, fill=(30, 30, 30), font=f)
        x += w + gap
    if out is not None:
        canvas.save(out, format="PNG")
    return canvas, layout
