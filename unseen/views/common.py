"""What every view shares: panels and key-value tables, styles and outcome marks, folded and
rounded text, terminal images of what a model saw, and the HTML page's escaping and CSS.

Text from a run (replies, instructions, file names) reaches a terminal through the CLI's
``SafeConsole`` and a page through :func:`e`: both pass ``engine.sanitize.shown`` (no control
sequence, no secret). The TUI's widgets are not a ``SafeConsole``: what they show passes
:func:`shown` here first.

Who answered is named by one function, ``engine.rundir.who``: ``center (rule)``,
``alice (human)``, ``sim-default (sim)`` in tables, ``(SIMULATED)`` in headings.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from PIL import Image
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..engine.images import load_image, open_image
from ..engine.records import ImageRecord, TrajectoryRecord
from ..engine.rundir import kind_of, who
from ..engine.sanitize import shown, shown_now
from ..renderers.overlay import draw
from ..renderers.terminal import DEFAULT_CELLS, cell_size, image_protocol, terminal_image

__all__ = ["kind_of", "shown", "shown_now", "who"]

PROMPT_LINES = 6  # prompt lines shown before "… more (--full)"
REPLY_LINES = 4
SIDE_BY_SIDE_TEXT = 44  # the least text width that puts the image beside the text
KITTY_MAX_PX = 800
OUTCOMES = ("all", "correct", "wrong", "unanswered", "error")
MARK = {"correct": "✓", "wrong": "✗", "unanswered": "∅", "error": "!", "answered": "·"}
OUTCOME_STYLE = {"correct": "green", "wrong": "red", "unanswered": "yellow", "error": "red",
                 "answered": ""}


# --- text ------------------------------------------------------------------------------------


def box_text(b: Any) -> str:
    """``[10, 20, 30, 40]`` (pixels, rounded), or ``none``."""
    if not b:
        return "none"
    if isinstance(b, list | tuple) and all(isinstance(v, int | float) for v in b):
        return "[" + ", ".join(f"{v:.0f}" for v in b) + "]"
    return value_text(b)


def number(v: float) -> str:
    """A float as people read it: 3 significant digits (``0.955``, ``12.3``, ``1234``)."""
    if not math.isfinite(v):
        return str(v)
    if v == 0 or abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}" if abs(v) >= 0.001 else f"{v:.1e}"


def value_text(v: Any) -> str:
    """A parsed answer or a prediction, numbers rounded: ``choice A, confidence 0.955``."""
    if isinstance(v, bool) or v is None:
        return str(v).lower() if isinstance(v, bool) else "none"
    if isinstance(v, float):
        return number(v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {value_text(x)}" for k, x in v.items() if x is not None) or "—"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    return str(v)


def fold(text: str, lines: int | None, width: int = 0) -> str:
    """``text`` wrapped at ``width`` (when > 0), cut after ``lines`` lines (None: all)."""
    out: list[str] = []
    for raw in (text or "").splitlines():
        out.extend(textwrap.wrap(raw, width, break_long_words=True, replace_whitespace=False)
                   if width > 0 and raw.strip() else [raw])
    if lines is None or len(out) <= lines:
        return "\n".join(out)
    rest = len(out) - lines
    return "\n".join(out[:lines]) + f"\n… {rest} more line{'s' * (rest != 1)} (--full)"


def fold_label(label: str, width: int = 0) -> str:
    """A strategy label with room to wrap between its parameters, never inside one:
    ``spoe:T=3,mode=keep`` → ``spoe: T=3, mode=keep``; unchanged when it fits ``width``."""
    if width and len(label) <= width:
        return label
    name, sep, params = label.partition(":")
    return name + (": " + ", ".join(params.split(",")) if sep else "")


def short_id(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters from the left (``…`` first): the end of an id
    tells ids apart, and ``unseen show`` takes any unique part of one."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def usage_text(u: Mapping[str, Any]) -> str:
    """A reply's token counts (``UsageRecord``, or their sums over the steps)."""
    cached = f" ({u['cached_input_tokens']} cached)" if u["cached_input_tokens"] else ""
    return (f"in {u['input_tokens']}{cached} · out {u['output_tokens']} · "
            f"reasoning {u['reasoning_tokens']}")


def outcome_text(outcome: str) -> Text:
    """``✓ correct`` in green, ``✗ wrong`` in red, and so on."""
    return Text(f"{MARK.get(outcome, '?')} {outcome}", style=OUTCOME_STYLE.get(outcome, ""))


def error_kind(rec: TrajectoryRecord, missing: str = "?") -> str:
    """The kind of the record's error (``missing`` for a record without one)."""
    err = rec["error"]
    return err["kind"] if err else missing


def status_text(rec: TrajectoryRecord) -> str:
    """``answered``, or ``unanswered (parse)``."""
    err = rec["error"]
    return rec["status"] + (f" ({err['kind']})" if err else "")


def record_who(rec: TrajectoryRecord, *, loud: bool = True) -> str:
    """The record's model, marked as :func:`who` marks it."""
    return who(rec["model"], kind_of(rec["backend"], rec["simulated"]), loud=loud)


# --- panels ----------------------------------------------------------------------------------


def kv(rows: Iterable[tuple[str, RenderableType]]) -> Table:
    """A two-column grid: dim keys, folded values."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for k, v in rows:
        grid.add_row(k, v)
    return grid


def model_view(part: ImageRecord) -> Image.Image:
    """The image of a step's image part as the model saw it (overlay redrawn), full size."""
    img = load_image(part["path"])
    spec = part["overlay"]
    return draw(img, spec) if spec else img


def small_view(part: ImageRecord, cols: int) -> Image.Image:
    """The model's view for half-blocks: drawn at twice the cell resolution (lines and labels
    stay readable once scaled down), then reduced to ``cols`` × 2·rows pixels."""
    img = load_image(part["path"])
    spec = dict(part["overlay"] or {})
    if "crop" in spec:
        img = img.crop(tuple(round(v) for v in spec.pop("crop")))
    c, r = cell_size(img.size, cols)
    big = (2 * c, 4 * r)
    sx, sy = big[0] / img.width, big[1] / img.height
    small = img.resize(big, Image.Resampling.LANCZOS)
    if spec.get("boxes"):
        spec["boxes"] = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in spec["boxes"]]
        small = draw(small, spec)
    return small.resize((c, 2 * r), Image.Resampling.LANCZOS)


def thumb(img: Image.Image) -> Image.Image:
    if img.width <= KITTY_MAX_PX:
        return img
    return img.resize((KITTY_MAX_PX, round(img.height * KITTY_MAX_PX / img.width)),
                      Image.Resampling.LANCZOS)


def image_size(path: str) -> tuple[int, int] | None:
    """An image's size from its header, or None when it cannot be read."""
    try:
        with open_image(path) as im:
            return im.size
    except OSError:
        return None


class Pictures:
    """Terminal images for one console: protocol and width chosen once. ``full(img)`` and
    ``small(img)`` draw an image drawn at full size or already reduced for half-blocks."""

    def __init__(self, console: Console, on: bool) -> None:
        self.on = on and console.is_terminal
        self.protocol = image_protocol()
        self.cols = max(8, min(console.width - 4, DEFAULT_CELLS))

    def draw(self, full, small) -> RenderableType:
        """The kitty protocol draws ``full()`` (capped), half-blocks ``small(cols)``."""
        try:
            if self.protocol == "kitty":
                return terminal_image(thumb(full()), self.cols, "kitty")
            return terminal_image(small(self.cols), self.cols, "halfblock")
        except OSError as exc:
            return Text(f"(image unreadable: {exc})", style="red")

    def step(self, part: ImageRecord) -> RenderableType:
        return self.draw(lambda: model_view(part), lambda cols: small_view(part, cols))

    def layout(self, images: list[RenderableType], text: RenderableType,
               width: int) -> RenderableType:
        """The images beside the text where both fit, else above it."""
        if not images:
            return text
        inner = width - 4  # panel border and padding
        if inner - self.cols - 2 >= SIDE_BY_SIDE_TEXT:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(width=self.cols, no_wrap=True)
            grid.add_column()
            grid.add_row(Group(*images), text)
            return grid
        return Group(*images, text)

    def text_width(self, console: Console) -> int:
        """The width left for a panel's values beside its keys (and its images)."""
        inner = console.width - 4
        label = 10  # the key column and its gap
        if self.on and inner - self.cols - 2 >= SIDE_BY_SIDE_TEXT:
            return inner - self.cols - 2 - label
        return inner - label


# --- columns by width ----------------------------------------------------------------------


def letters(n: int) -> list[str]:
    """Short column keys: A … Z, then AA, AB …"""
    out = []
    for i in range(n):
        s, i = "", i + 1
        while i:
            i, r = divmod(i - 1, 26)
            s = chr(65 + r) + s
        out.append(s)
    return out


def pack(entries: list[str], width: int | None, sep: str = "   ") -> str:
    """``entries`` joined on lines of at most ``width`` characters, never split inside one
    (a legend: ``A sim-default · cot   B sim-default · direct``)."""
    lines: list[str] = []
    for entry in entries:
        if lines and (width is None or len(lines[-1]) + len(sep) + len(entry) <= width):
            lines[-1] += sep + entry
        else:
            lines.append(entry)
    return "\n".join(lines)


# --- HTML ------------------------------------------------------------------------------------


def e(v: Any) -> str:
    """HTML-escaped, with no control byte (ESC, BEL) and no secret left."""
    return escape(shown(v), quote=True)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._")[:60] or "x"


def img_attrs(path: Path, scale: float = 1.0) -> str:
    """``width`` and ``height`` attributes (the page does not reflow as images load)."""
    size = image_size(str(path))
    if size is None:
        return ""
    return f' width="{round(size[0] * scale)}" height="{round(size[1] * scale)}"'


def banner(models: Iterable[str], what: str = "replies") -> str:
    """The SIMULATED banner over a page whose numbers a simulation made."""
    names = ", ".join(dict.fromkeys(models))
    if not names:
        return ""
    return (f"<p class=banner><b>SIMULATED</b>: the {e(what)} of {e(names)} come from a "
            "simulated respondent, not a model; its numbers test the pipeline, not a "
            "model.</p>")


def strip_figure(n: int, name: str, caption: str) -> str:
    """Strip ``n`` (``img/NAME``) as a figure the instance table's ``steps`` links to."""
    return (f'<figure id="strip-{n}"><img src="img/{e(name)}" alt="{e(caption)}" '
            f'loading="lazy"><figcaption>{e(caption)}</figcaption></figure>')


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 1.5em; color: #222; max-width: 1600px; }
.wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f2f2f2; }
td.l, th.l { text-align: left; }
td.id { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all;
        max-width: 22em; }
td.text { max-width: 28em; overflow-wrap: anywhere; }
.ci { color: #777; font-size: 85%; white-space: nowrap; }
.sig { color: #b00; font-weight: bold; }
.bad { color: #b00; }
.note { color: #555; font-size: 90%; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 90%; color: #555; }
.banner { background: #fff3cd; border: 1px solid #e0c36a; padding: 6px 10px; margin: .5em 0; }
.simtag { background: #b00; color: #fff; font-size: 11px; font-weight: bold; padding: 0 4px;
          border-radius: 3px; margin-left: 4px; }
nav ul { margin: .2em 0; padding-left: 1.4em; }
h3 { margin: 1.2em 0 .3em; font-size: 15px; }
pre.step { white-space: pre-wrap; overflow-wrap: anywhere; background: #f8f8f8;
           padding: 4px 8px; margin: .2em 0; font-size: 12px; }
"""


@dataclass
class ExportResult:
    """What an export wrote, for the command's last line."""

    index: Path
    table_rows: int = 0
    curves: list[Path] = field(default_factory=list)
    strips: list[Path] = field(default_factory=list)
    trajectories: int = 0
    notes: list[str] = field(default_factory=list)
    summary: str = ""  # what was written, in words, where the counts above do not fit


def page(title: str, body: Iterable[str], css: str = "") -> str:
    """A whole page: no script, the shared CSS and a benchmark's own."""
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>{e(title)}</title><style>" + CSS + css + "</style></head><body>\n"
            + "\n".join(b for b in body if b) + "\n</body></html>\n")
