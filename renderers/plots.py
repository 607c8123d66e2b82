"""Plots with matplotlib (Agg): per-iteration curves as in the paper's Figure 2, and the
heat maps of a dataset card (where targets lie in the image and how large their boxes are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LABELS = {"dist": "Dist ×100 (lower is better)", "cacc75": "CAcc@75", "cacc50": "CAcc@50",
          "iou": "mIoU ×100", "alive": "target still inside the region (%)"}


# Ten colours and seven markers: series i gets colour i mod 10 and marker i mod 7, so no two of
# the first 70 series (lcm(10, 7)) share both, and neighbours differ in both
COLORS = tuple(f"C{k}" for k in range(10))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def style_of(i: int) -> tuple[str, str]:
    """The (colour, marker) of the ``i``-th series of a curve plot."""
    return COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]


def curve_figure(rows: list[dict[str, Any]], metric: str,
                 baselines: dict[str, dict[str, float]] | None = None) -> Any:
    """The matplotlib figure of :func:`curve_png` (not saved); its legend lies to the right of
    the axes, outside them."""
    from matplotlib.figure import Figure  # no pyplot: no global backend, no open figures
    from matplotlib.ticker import MaxNLocator

    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    simulated: dict[tuple[str, str], bool] = {}
    humans: set[tuple[str, str]] = set()
    for r in rows:
        if r[metric] is not None:  # None: a Dist no trajectory has at t (unanswered "skip")
            series.setdefault((r["model"], r["strategy"]), []).append((r["t"], r[metric]))
        simulated[(r["model"], r["strategy"])] = bool(r.get("simulated"))
        if r.get("human"):
            humans.add((r["model"], r["strategy"]))
    n_lines = len(series) + len(baselines or {})
    fig = Figure(figsize=(7 + 2.6 * (1 + (n_lines > 22)), max(4.2, 0.19 * min(n_lines, 22))),
                 dpi=150)
    ax = fig.subplots()
    if any(simulated.values()):
        ax.set_title("SIMULATED respondents (sim): not findings about models", fontsize=8)
    colors: dict[str, Any] = {}
    k = ceilings = 0
    for (model, strategy), pts in series.items():
        pts.sort()
        xs, ys = zip(*pts, strict=True)
        if model.startswith("oracle"):  # grey, each ceiling its own dash and open marker
            dash = (0, (1, 1 + 2 * ceilings))
            ax.plot(xs, ys, color="0.3", lw=2, ls=dash, marker="osD^v<>"[ceilings % 7], ms=4,
                    mfc="none", label=f"oracle ceiling ({strategy})")
            ceilings += 1
            continue
        sim = " (sim)" if simulated.get((model, strategy)) else (
            " (human)" if (model, strategy) in humans else "")
        color, marker = style_of(k)
        k += 1
        ax.plot(xs, ys, color=color, marker=marker, ms=4, lw=1.3,
                label=f"{model}{sim} · {strategy}")
        colors.setdefault(model, color)
    for model, base in (baselines or {}).items():
        if metric in base and model in colors:
            sim = " (sim)" if any(v for (m, _), v in simulated.items() if m == model) else ""
            ax.axhline(base[metric], ls="--", lw=1, color=colors[model],
                       label=f"{model}{sim} · direct")
    ax.set_xlabel("iteration t")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no t = 0.5
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.grid(alpha=0.3)
    # outside the axes, to their right: a legend inside covered the lines
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0, ncols=1 + (n_lines > 22))
    fig.tight_layout()
    return fig


def curve_png(rows: list[dict[str, Any]], metric: str, out: str | Path,
              baselines: dict[str, dict[str, float]] | None = None) -> Path:
    """One line per (model, strategy) over t, each with its own colour and marker (no two
    series share both: :func:`style_of`); each model's ``direct`` result dashed in the colour
    of its first line; each oracle ceiling grey with its own dash and open marker; simulated respondents marked and said
    so in the title; the legend outside the axes."""
    fig = curve_figure(rows, metric, baselines)
    out = Path(out)
    fig.savefig(out, bbox_inches="tight")
    return out


def box_heatmap_png(boxes: list[list[float]], out: str | Path, title: str = "",
                    fixed: list[list[float]] | None = None) -> Path:
    """Two heat maps of boxes given as shares of their image ([x1, y1, x2, y2] in 0..1):
    left, where the centres fall (12x9 bins, y down as in the image, the 3x3 grid and its
    counts drawn over it, the ``baseline:center`` box dashed and the boxes ``baseline:fixed``
    learned, ``fixed``, dotted); right, box width against box height (log-spaced bins over
    the range the boxes span). Empty bins stay white."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    b = np.asarray(boxes, dtype=float).reshape(-1, 4)
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    bw, bh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    cmap = "YlOrRd"
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=120,
                                  gridspec_kw={"width_ratios": [4 / 3, 1]})
    heat, _, _ = np.histogram2d(cy, cx, bins=(9, 12), range=((0, 1), (0, 1)))
    im = ax.imshow(np.ma.masked_equal(heat, 0), extent=(0, 1, 1, 0), cmap=cmap,
                   interpolation="nearest", aspect=3 / 4, vmin=0)
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, label="box centres per bin")
    for k in (1 / 3, 2 / 3):
        ax.axvline(k, color="0.4", lw=0.8)
        ax.axhline(k, color="0.4", lw=0.8)
    grid, _, _ = np.histogram2d(np.minimum(cy, 1 - 1e-9), np.minimum(cx, 1 - 1e-9), bins=3,
                                range=((0, 1), (0, 1)))
    for r in range(3):
        for c in range(3):
            ax.text((c + 0.5) / 3, (r + 0.5) / 3, str(int(grid[r, c])), color="0.15",
                    ha="center", va="center", fontsize=15, alpha=0.55, fontweight="bold")
    ax.add_patch(plt.Rectangle((0.25, 0.25), 0.5, 0.5, fill=False, ls="--", lw=1.2,
                               ec="#1f77b4", label="baseline:center box"))
    for k, f in enumerate(fixed or []):
        ax.add_patch(plt.Rectangle((f[0], f[1]), f[2] - f[0], f[3] - f[1], fill=False,
                                   ls=":", lw=1.6, ec="#7b2cbf",
                                   label="baseline:fixed boxes" if k == 0 else None))
    ax.set_xlim(0, 1)
    ax.set_ylim(1, 0)
    ax.set_xlabel("box centre x / image width")
    ax.set_ylabel("box centre y / image height")
    ax.legend(loc="lower right", fontsize=7, framealpha=0.8)
    ax.set_title(f"where the targets lie (n = {len(b)}; big digits: 3x3 counts)", fontsize=10)
    lo = float(np.clip(min(bw.min(), bh.min()) / 1.5, 1e-4, 0.5))
    hi = float(np.clip(max(bw.max(), bh.max()) * 1.5, lo * 4, 1.0))
    edges = np.geomspace(lo, hi, 15)
    size, _, _ = np.histogram2d(np.clip(bh, lo, hi), np.clip(bw, lo, hi), bins=(edges, edges))
    im2 = ax2.pcolormesh(edges, edges, np.ma.masked_equal(size, 0), cmap=cmap, vmin=0)
    fig.colorbar(im2, ax=ax2, fraction=0.04, pad=0.02, label="boxes per bin")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("box width / image width")
    ax2.set_ylabel("box height / image height")
    ax2.set_title("how large the boxes are", fontsize=10)
    ax2.set_aspect("equal")
    ax2.grid(alpha=0.3, which="both")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out)
    plt.close(fig)
    return out
