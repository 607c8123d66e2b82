"""Overlays drawn on an image for a step: labelled candidate regions.

A spec is plain data, saved in the journal and redrawn identically on demand:
``{"boxes": [[x1, y1, x2, y2], ...], "labels": ["A", "B"], "format": "jpeg"}``. Line width
and font size scale with the image; each label has its own colour and sits in a filled tag
inside its box's top-left corner, so overlapping boxes stay readable.
"""

from __future__ import annotations

import io
import os
from functools import lru_cache
from typing import Any

from PIL import Image, ImageDraw

from ..engine.box import fit_within
from ..engine.images import hold
from .fonts import font

COLORS = [(230, 40, 40), (30, 110, 235), (30, 170, 70), (240, 160, 0), (150, 60, 200),
          (0, 170, 170), (220, 80, 160), (120, 120, 120), (90, 60, 20)]


@lru_cache(maxsize=16)
def _base(path: str, mtime_ns: int) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGB")


def _image(path: str) -> Image.Image:
    """The decoded image at ``path``: held for the current trajectory's life (its steps
    and votes, and the other trajectories in flight on that image, draw on one decoded
    copy however high the concurrency), else from a small cache of the last ones."""
    mtime = os.stat(path).st_mtime_ns
    img = hold(("decoded", path, mtime), lambda: _base.__wrapped__(path, mtime))
    return img if img is not None else _base(path, mtime)


def draw(image: Image.Image, spec: dict[str, Any]) -> Image.Image:
    """A copy of ``image`` with the spec's labelled boxes drawn on it; with ``crop``, only
    that region of the image (a zoomed-in view), boxes given in the crop's pixels. With
    ``fit`` (``draw_fitted``, not part of a recorded spec), the image (or crop) is first
    resized to fit within ``fit`` pixels (``engine.box.fit_within``, Lanczos, as a fitted
    send is) and each box coordinate scaled by the same factor per axis, then drawn."""
    if "crop" in spec:
        x1, y1, x2, y2 = (round(v) for v in spec["crop"])
        out = image.crop((x1, y1, x2, y2))
    else:
        out = image.copy() if "fit" not in spec else image
    boxes = spec.get("boxes") or []
    if "fit" in spec:
        fitted = fit_within(out.width, out.height, spec["fit"])
        if fitted != out.size:
            sx, sy = fitted[0] / out.width, fitted[1] / out.height
            out = out.resize(fitted, Image.Resampling.LANCZOS)
            boxes = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in boxes]
        elif out is image:
            out = image.copy()
    if not boxes:
        return out
    d = ImageDraw.Draw(out)
    w, h = out.size
    line = max(2, round(min(w, h) / 160))
    size = max(12, round(min(w, h) / 18))
    f = font(size)
    for i, (box, label) in enumerate(zip(boxes, spec["labels"], strict=True)):
        color = COLORS[i % len(COLORS)]
        x1, y1, x2, y2 = (round(v) for v in box)
        x2, y2 = min(x2, w) - 1, min(y2, h) - 1
        # inset every other box so the shared edges of adjacent boxes both show
        inset = (i % 2) * line
        d.rectangle([x1 + inset, y1 + inset, x2 - inset, y2 - inset], outline=color, width=line)
        tx, ty = x1 + inset + line, y1 + inset + line
        left, top, right, bottom = d.textbbox((tx, ty), label, font=f)
        pad = max(2, size // 6)
        d.rectangle([left - pad, top - pad, right + pad, bottom + pad], fill=color)
        d.text((tx, ty), label, fill=(255, 255, 255), font=f)
    return out


def _fitted_base(path: str, side: int) -> Image.Image:
    """The image at ``path`` fitted within ``side`` (as :func:`draw` fits it), resized once
    and held like the decoded image, so each step of ``draw_fitted`` only draws."""

    def make() -> Image.Image:
        return draw(_image(path), {"fit": side})

    mtime = os.stat(path).st_mtime_ns
    img = hold(("fitted", path, mtime, side), make)
    return img if img is not None else make()


def render_overlay(path: str, spec: dict[str, Any]) -> bytes:
    """Encoded bytes of the image at ``path`` with the overlay (JPEG unless spec says png)."""
    if "fit" in spec and "crop" not in spec:  # boxes scaled onto the once-fitted image
        full = _image(path)
        base = _fitted_base(path, spec["fit"])
        sx, sy = base.width / full.width, base.height / full.height
        boxes = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in spec.get("boxes", [])]
        rest = {k: v for k, v in spec.items() if k != "fit"}
        img = draw(base, {**rest, "boxes": boxes})
    else:
        img = draw(_image(path), spec)
    buf = io.BytesIO()
    if spec.get("format", "jpeg") == "png":
        img.save(buf, format="PNG")
    else:
        img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()
