"""Textures as (H, W, 4) uint8 RGBA arrays: digits and other text drawn with a TrueType font."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from .fonts import font

_PROBE = 100  # font size used to measure text before scaling it to the tile


def digit_texture(text, size: int = 128, fg=(20, 20, 20), bg=None, fill: float = 0.7) -> np.ndarray:
    """``text`` centred on a ``size`` x ``size`` tile, ``fill`` of its height (and at most 85 %
    of its width). ``bg`` None leaves the background transparent, so the face colour shows."""
    text = str(text)
    fg = tuple(int(c) for c in fg)[:3]
    probe = font(_PROBE)
    left, top, right, bottom = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), text, font=probe)
    scale = min(fill * size / max(bottom - top, 1), 0.85 * size / max(right - left, 1))
    f = font(max(1, round(_PROBE * scale)))
    # Transparent pixels carry the ink colour too, so filtering the texture gives no dark fringe.
    back = fg + (0,) if bg is None else tuple(int(c) for c in bg)[:3] + (255,)
    img = Image.new("RGBA", (size, size), back)
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=f)
    draw.text(((size - (right - left)) / 2 - left, (size - (bottom - top)) / 2 - top), text,
              fill=fg + (255,), font=f)
    return np.asarray(img, dtype=np.uint8).copy()


def checker_texture(cells: int = 8, size: int = 64, a=(0, 0, 0), b=(255, 255, 255)) -> np.ndarray:
    """An opaque ``cells`` x ``cells`` checkerboard; cell (0, 0) at the top left has colour ``a``."""
    idx = (np.arange(size) * cells) // size
    odd = (idx[:, None] + idx[None, :]) % 2 == 1
    rgb = np.where(odd[..., None], np.asarray(b, np.uint8), np.asarray(a, np.uint8))
    return np.concatenate([rgb, np.full((size, size, 1), 255, np.uint8)], axis=2)
