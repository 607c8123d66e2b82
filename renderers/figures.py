"""Figures for papers: a grid of predicted and true boxes, as in SceneFunRI's Figure 3.

One column per instance (its instruction, wrapped, as the title), one row per (model,
strategy) (its label on the left); each cell the instance's image with the prediction in red
and the ground truth in green. An unanswered cell says so.

Drawn with matplotlib's Agg canvas directly (no pyplot, no global backend switch). Every axes
is placed at an exact position computed here (no tight layout), so the returned
``GridLayout`` can map image pixels to PNG pixels exactly; the tests sample colours with it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.types import Instance

PRED_COLOR = (0.95, 0.1, 0.1)
TRUTH_COLOR = (0.1, 0.85, 0.1)


@dataclass
class GridCell:
    """One cell: a predicted box in image pixels, or ``None`` with a note saying why."""

    box: Sequence[float] | None = None
    note: str = ""  # e.g. "unanswered (parse)"; shown over a dimmed image when there is no box
    caption: str = ""  # small text under the image, e.g. "IoU 12.3 · Dist 25.1"


@dataclass
class GridRow:
    label: str  # e.g. "sim-strong (sim)\ndirect:prompt=hidden"
    cells: list[GridCell | None]  # one per column; None: no trajectory


@dataclass
class GridLayout:
    """Where things landed in the PNG (pixels, origin top-left)."""

    n_rows: int
    n_cols: int
    width: int
    height: int
    # (row, col) → (x0, y0, sx, sy): image pixel (x, y) lies at PNG (x0 + x·sx, y0 + y·sy)
    cells: dict[tuple[int, int], tuple[float, float, float, float]] = field(default_factory=dict)

    def to_png(self, row: int, col: int, x: float, y: float) -> tuple[float, float]:
        x0, y0, sx, sy = self.cells[(row, col)]
        return x0 + x * sx, y0 + y * sy


def _wrap(text: str, chars: int, max_lines: int) -> list[str]:
    lines = textwrap.wrap(text, max(8, chars)) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = textwrap.shorten(lines[-1] + " …", max(8, chars), placeholder=" …")
    return lines


def prediction_grid(
    instances: Sequence[Instance], rows: Sequence[GridRow], out: str | Path, *, dpi: int = 120,
    cell_height_in: float = 2.2, title_lines: int = 3, line_width: float = 2.0,
) -> GridLayout:
    """Draw the grid and write it to ``out`` (PNG). Returns where each cell's image landed."""
    from matplotlib import patheffects
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from PIL import Image

    if not instances or not rows:
        raise ValueError("a figure needs at least one instance and one row")
    n_rows, n_cols = len(rows), len(instances)
    # geometry in inches: each column as wide as its image at the common cell height
    widths = [min(cell_height_in * inst.width / inst.height, 2.2 * cell_height_in)
              for inst in instances]
    font = 8.5
    char_in = font * 0.52 / 72  # average glyph width of the default sans at this size
    titles = [_wrap(inst.text.get("instruction", ""), int(w / char_in), title_lines)
              for inst, w in zip(instances, widths, strict=True)]
    label_lines = [line for r in rows for line in r.label.splitlines()]
    left = min(max(1.0, max(len(s) for s in label_lines) * char_in + 0.3), 3.0)
    gap_x, gap_y, caption_h = 0.12, 0.08, 0.2
    line_h = font * 1.35 / 72
    top = 0.35 + (max(len(t) for t in titles) + 1) * line_h
    bottom = 0.18
    fig_w = max(left + sum(widths) + gap_x * (n_cols - 1) + 0.15, 4.4)  # room for the legend
    fig_h = top + n_rows * (cell_height_in + caption_h) + (n_rows - 1) * gap_y + bottom
    fig = Figure(figsize=(fig_w, fig_h), dpi=dpi, facecolor="white")
    FigureCanvasAgg(fig)

    layout = GridLayout(n_rows=n_rows, n_cols=n_cols, width=0, height=0)
    stroke = [patheffects.withStroke(linewidth=line_width + 1.6, foreground="black", alpha=0.55)]
    legend_y = 1 - 0.12 / fig_h
    fig.text(0.08 / fig_w, legend_y, "prediction", fontsize=font, va="top", ha="left",
             color=PRED_COLOR, fontweight="bold")
    fig.text(0.08 / fig_w + 0.85 / fig_w, legend_y, "ground truth", fontsize=font, va="top",
             ha="left", color=TRUTH_COLOR, fontweight="bold")
    if any(cell is not None and cell.caption for row in rows for cell in row.cells):
        fig.text(0.08 / fig_w + 1.95 / fig_w, legend_y, "under each image: IoU and Dist ×100",
                 fontsize=font - 1, va="top", ha="left", color="0.4")
    images = {}
    for c, inst in enumerate(instances):
        with Image.open(inst.image) as im:
            images[c] = im.convert("RGB").copy()

    for r, row in enumerate(rows):
        y_top = top + r * (cell_height_in + caption_h + gap_y)  # inches from the figure top
        fig.text((left - 0.12) / fig_w, 1 - (y_top + cell_height_in / 2) / fig_h, row.label,
                 ha="right", va="center", fontsize=font, linespacing=1.3)
        x_left = left
        for c, inst in enumerate(instances):
            w_in = widths[c]
            ax = fig.add_axes((x_left / fig_w, 1 - (y_top + cell_height_in) / fig_h,
                               w_in / fig_w, cell_height_in / fig_h))
            ax.set_xlim(0, inst.width)
            ax.set_ylim(inst.height, 0)
            ax.set_axis_off()
            cell = row.cells[c]
            missing = cell is None or cell.box is None
            ax.imshow(images[c], extent=(0, inst.width, inst.height, 0), aspect="auto",
                      alpha=0.35 if missing else 1.0, interpolation="antialiased")
            truth = inst.truth.get("box")
            if truth is not None:
                x1, y1, x2, y2 = truth
                ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False,
                                       edgecolor=TRUTH_COLOR, linewidth=line_width,
                                       path_effects=stroke))
            if cell is not None and cell.box is not None:  # not missing
                x1, y1, x2, y2 = cell.box
                ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False,
                                       edgecolor=PRED_COLOR, linewidth=line_width,
                                       path_effects=stroke))
            else:
                note = "no trajectory" if cell is None else (cell.note or "unanswered")
                ax.text(0.5, 0.5, "\n".join(_wrap(note, int(w_in / char_in) - 2, 3)),
                        transform=ax.transAxes, ha="center", va="center", fontsize=font,
                        color="0.15", bbox={"boxstyle": "round", "fc": "white", "ec": "0.5"})
            if cell is not None and cell.caption:
                fig.text((x_left + w_in / 2) / fig_w,
                         1 - (y_top + cell_height_in + 0.03) / fig_h, cell.caption,
                         ha="center", va="top", fontsize=font - 1.5, color="0.35")
            if r == 0:
                fig.text((x_left + w_in / 2) / fig_w, 1 - (top - 0.06) / fig_h,
                         "\n".join(titles[c]), ha="center", va="bottom", fontsize=font,
                         linespacing=1.25)
                fig.text((x_left + w_in / 2) / fig_w, 1 - (top - 0.06) / fig_h
                         + len(titles[c]) * line_h / fig_h, inst.id, ha="center", va="bottom",
                         fontsize=font - 1.5, color="0.45")
            # image pixel (x, y) → PNG pixel: the axes spans exactly this rectangle
            x0_px, y0_px = x_left * dpi, y_top * dpi
            layout.cells[(r, c)] = (x0_px, y0_px, w_in * dpi / inst.width,
                                    cell_height_in * dpi / inst.height)
            x_left += w_in + gap_x
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, facecolor="white")
    with Image.open(out) as png:
        layout.width, layout.height = png.size
    return layout
