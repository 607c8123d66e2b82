"""Images drawn in the terminal, as rich renderables.

The default is truecolour half-blocks: each character cell is "▀" with the upper pixel's
colour as foreground and the lower pixel's as background, so a cell holds two square-ish
pixels and any terminal with 24-bit colour shows the picture (rich downgrades the colours on
a 256- or 16-colour terminal). ``image_protocol`` picks the kitty graphics protocol instead
only when the environment says the terminal speaks it (``TERM=xterm-kitty`` or
``xterm-ghostty``, ``KITTY_WINDOW_ID``, and not inside tmux or screen, which do not pass it
through); sixel is never guessed, since only a terminal query could confirm it.

The width in cells is what the caller asks for, capped by the space rich offers; the height
follows from the image's aspect ratio.
"""

from __future__ import annotations

import base64
import io
import math
import os
from collections.abc import Mapping
from typing import Any

from PIL import Image
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import ControlType, Segment
from rich.style import Style

UPPER_HALF = "▀"
DEFAULT_CELLS = 64
KITTY_CHUNK = 4096


def image_protocol(env: Mapping[str, str] | None = None) -> str:
    """``"kitty"`` when the terminal announces the kitty graphics protocol, else
    ``"halfblock"``."""
    env = os.environ if env is None else env
    if env.get("TMUX") or env.get("STY") or env.get("TERM", "").startswith(("screen", "tmux")):
        return "halfblock"
    if env.get("TERM") in ("xterm-kitty", "xterm-ghostty") or env.get("KITTY_WINDOW_ID"):
        return "kitty"
    return "halfblock"


def cell_size(image_size: tuple[int, int], cells: int) -> tuple[int, int]:
    """(columns, rows) of an image ``cells`` columns wide: one pixel per column, two per row,
    aspect preserved (a terminal cell is about twice as tall as wide)."""
    w, h = image_size
    cols = max(1, int(cells))
    rows = max(1, math.ceil(cols * h / w / 2))
    return cols, rows


def fit(image: Image.Image, cols: int) -> Image.Image:
    """The image resized to ``cols`` × 2·rows pixels (RGB), as half-blocks draw it."""
    cols, rows = cell_size(image.size, cols)
    image = image.convert("RGB")
    if image.size == (cols, 2 * rows):
        return image
    return image.resize((cols, 2 * rows), Image.Resampling.LANCZOS, reducing_gap=3.0)


class _TerminalImage:
    def __init__(self, image: Image.Image, cells: int = DEFAULT_CELLS) -> None:
        self.image = image
        self.cells = cells

    def _cols(self, max_width: int) -> int:
        return max(1, min(self.cells, max_width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        cols = self._cols(options.max_width)
        return Measurement(cols, cols)


class HalfBlockImage(_TerminalImage):
    """An image as rows of "▀" cells in truecolour (upper pixel: foreground, lower: background);
    a run of equal cells in a row is one segment."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        img = fit(self.image, self._cols(options.max_width))
        cols, rows2 = img.size
        px = img.load()
        assert px is not None  # a loaded image has its pixels
        styles: dict[tuple, Style] = {}
        for row in range(rows2 // 2):
            y = 2 * row
            run = 0
            # (upper, lower) RGB of a cell; None past the row's end
            key: Any = None
            prev: Any = None
            for x in range(cols + 1):  # a run of equal cells is one segment
                key = (px[x, y], px[x, y + 1]) if x < cols else None
                if key != prev and run:
                    style = styles.get(prev)
                    if style is None:
                        style = styles[prev] = Style(color=Color.from_rgb(*prev[0]),
                                                     bgcolor=Color.from_rgb(*prev[1]))
                    yield Segment(UPPER_HALF * run, style)
                    run = 0
                prev, run = key, run + 1
            yield Segment.line()


class KittyImage(_TerminalImage):
    """An image sent with the kitty graphics protocol (base64 PNG in chunks), placed over a
    block of blank cells the size it occupies; the cursor is left where rich expects it."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cols = self._cols(options.max_width)
        _, rows = cell_size(self.image.size, cols)
        buf = io.BytesIO()
        self.image.convert("RGB").save(buf, format="PNG")
        yield Segment(kitty_escape(buf.getvalue(), cols, rows), None, [(ControlType.BELL,)])
        for _ in range(rows):
            yield Segment(" " * cols)
            yield Segment.line()


def kitty_escape(png: bytes, cols: int, rows: int) -> str:
    """Transmit-and-display escapes for ``png`` over ``cols`` × ``rows`` cells; ``C=1``: the
    cursor does not move (the caller prints the blank cells)."""
    data = base64.standard_b64encode(png).decode("ascii")
    chunks = [data[i:i + KITTY_CHUNK] for i in range(0, len(data), KITTY_CHUNK)] or [""]
    out = []
    for i, chunk in enumerate(chunks):
        more = int(i < len(chunks) - 1)
        head = f"a=T,f=100,q=2,C=1,c={cols},r={rows},m={more}" if i == 0 else f"m={more}"
        out.append(f"\x1b_G{head};{chunk}\x1b\\")
    return "".join(out)


def terminal_image(image: Image.Image, cells: int = DEFAULT_CELLS,
                   protocol: str | None = None) -> HalfBlockImage | KittyImage:
    """A rich renderable of ``image`` at most ``cells`` columns wide."""
    if (protocol or image_protocol()) == "kitty":
        return KittyImage(image, cells)
    return HalfBlockImage(image, cells)
