"""The one TrueType font the renderers draw text with (labels, digits, tags), by size.

Its own module, without numpy, so that drawing an overlay imports no array library.
"""

from __future__ import annotations

from functools import lru_cache

from PIL import ImageFont

FONT_NAME = "DejaVuSans-Bold.ttf"
FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",  # Debian/Ubuntu fonts-dejavu-core
    "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",  # Fedora
    "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",  # Arch
)


@lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans Bold at ``size`` px, else Pillow's scalable default font (Pillow >= 10.1)."""
    for name in (FONT_NAME, *FONT_PATHS):  # a bare name is searched in the system font folders
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)
