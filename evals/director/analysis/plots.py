"""Figures of a Director study analysis, with matplotlib (Agg), at 150 dpi.

* ``forest_<group>.png``: per BH family (and for the margin tests, and the comparisons in no
  family), one row per model under each comparison: the change in points with its 95%
  interval, the zero line, and on the right the numbers with their mark (∗ or †);
* ``hidden_<batch>[_<set>].png``: the hidden-block choice rate per condition, a bar per model,
  with the scene-resample intervals.

Every figure names a simulated model ``NAME (sim)`` and, where a simulator answered for any
model shown, says SIMULATED in its title. Drawn from an :class:`.analyze.Analysis`; the
analysis never imports its figures.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from .analyze import MARGIN_GROUP, NOT_ASKED
from .shown import group_title, interval, pct, what

DPI = 150
_COLORS = {"*": "#1f4e99", "†": "#d9822b", "": "#555555"}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _minus(s: str) -> str:
    """A typographic minus sign in place of the hyphen of a negative number."""
    return re.sub(r"(?<![\w.])-(?=\d)", "−", s)


def sim_title(analysis: Any, title: str, models: Any = None) -> str:
    """``title``, led by SIMULATED where a simulator answered for one of ``models`` (default:
    every model of the analysis)."""
    shown = analysis.models if models is None else models
    sim = [m for m in shown if m in analysis.simulated]
    return f"SIMULATED ({', '.join(sim)}) · {title}" if sim else title


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "x"


def plot_analysis(analysis: Any, out_dir: str | Path) -> list[Path]:
    """Every figure of ``analysis`` in ``out_dir`` (created); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for group, changes in analysis.groups():
        if any(c.ok for c in changes):
            paths.append(forest_png(analysis, group, changes, out / f"forest_{slug(group)}.png"))
    by: dict[tuple[str, str], list[Any]] = {}
    for r in analysis.rates:
        by.setdefault((r.batch, r.set), []).append(r)
    sets_per_batch: dict[str, int] = {}
    for batch, _ in by:
        sets_per_batch[batch] = sets_per_batch.get(batch, 0) + 1
    for (batch, set_), rates in by.items():
        if not any("hidden" in r.shares for r in rates):
            continue
        name = f"hidden_{slug(batch)}" + (f"_{slug(set_)}" if sets_per_batch[batch] > 1 else "")
        paths.append(hidden_bars_png(analysis, batch, set_, rates, out / f"{name}.png"))
    return paths


def forest_png(analysis: Any, group: str, changes: list[Any], out: str | Path) -> Path:
    """A forest plot of one group's changes: a heading per comparison, a row per model."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    rows: list[tuple[str, Any]] = []  # ("head", comparison) or ("row", change)
    last = None
    for c in changes:
        if c.status == NOT_ASKED:
            continue
        if c.index != last:
            rows.append(("head", c.comparison))
            last = c.index
        rows.append(("row", c))
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9.0, 1.3 + 0.3 * n), dpi=DPI)
    ys = list(range(n, 0, -1))
    ticks, labels = [], []
    lo_all, hi_all = [0.0], [0.0]
    margin = group == MARGIN_GROUP
    if margin:
        m = 100 * analysis.margin
        ax.axvspan(-m, m, color="#2e8b57", alpha=0.08, lw=0)
        for x in (-m, m):
            ax.axvline(x, color="#2e8b57", lw=0.8, ls="--")
        lo_all.append(-m)
        hi_all.append(m)
    for y, (kind, item) in zip(ys, rows, strict=True):
        if kind == "head":
            title = item.title if item.label else what(item)
            ax.text(0.005, y, textwrap.shorten(title, 95, placeholder="…"),
                    transform=ax.get_yaxis_transform(), fontsize=8.5, fontweight="bold",
                    va="center", ha="left", zorder=5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
            continue
        c = item
        ticks.append(y)
        labels.append(analysis.label(c.model))
        if not c.ok:
            ax.text(1.01, y, c.status, transform=ax.get_yaxis_transform(), fontsize=8,
                    va="center", color="0.45", style="italic")
            continue
        color = _COLORS[c.mark] if not margin else ("#2e8b57" if c.equivalent else "#b22222")
        d, lo, hi = 100 * c.diff, 100 * c.low, 100 * c.high
        lo_all.append(lo)
        hi_all.append(hi)
        ax.plot([lo, hi], [y, y], color=color, lw=1.6, solid_capstyle="butt")
        ax.plot([d], [y], "o", color=color, ms=5)
        mk = {"*": "∗", "†": "†"}.get(c.mark, "")
        note = _minus(f"{pct(c.diff, signed=True)} {interval(c.low, c.high)}{mk}")
        if margin:
            note += "  within" if c.equivalent else "  not within"
        ax.text(1.01, y, note, transform=ax.get_yaxis_transform(), fontsize=8, va="center",
                color=color, fontweight="bold" if c.mark == "*" else "normal")
    ax.axvline(0, color="0.2", lw=0.9)
    lo, hi = min(lo_all), max(hi_all)
    pad = max(2.0, 0.06 * (hi - lo))
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(0.4, n + 0.8)
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("change, variant minus base (points, 95% interval)")
    ax.grid(axis="x", alpha=0.3)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    title = sim_title(analysis, group_title(analysis, group, changes),
                      {c.model for c in changes if c.status != NOT_ASKED})
    ax.set_title(textwrap.fill(title, 90), fontsize=9.5, loc="left",
                 color="#a0006e" if title.startswith("SIMULATED") else "black")
    if margin:
        handles = [Line2D([], [], color="#2e8b57", marker="o", label="within the margin"),
                   Line2D([], [], color="#b22222", marker="o", label="not within")]
    else:
        handles = [Line2D([], [], color=_COLORS["*"], marker="o", label="∗ survives BH"),
                   Line2D([], [], color=_COLORS["†"], marker="o", label="† fails BH"),
                   Line2D([], [], color=_COLORS[""], marker="o", label="interval includes 0")]
    height = fig.get_size_inches()[1]
    fig.legend(handles=handles, fontsize=7.5, frameon=False, loc="lower center",
               bbox_to_anchor=(0.5, 0.0), ncol=3)
    fig.tight_layout(rect=(0, 0.3 / height, 1, 1))
    out = Path(out)
    fig.savefig(out, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return out


def hidden_bars_png(analysis: Any, batch: str, set_: str, rates: list[Any],
                    out: str | Path) -> Path:
    """The hidden-block choice rate per condition of a batch, a bar per model, with intervals."""
    plt = pyplot()
    try:
        order = list(analysis.design.batch(batch).conditions)
    except KeyError:
        order = []
    conds = sorted(dict.fromkeys(r.condition for r in rates),
                   key=lambda c: (order.index(c) if c in order else len(order), c))
    models = [m for m in analysis.models if any(r.model == m for r in rates)]
    k = len(models)
    labels = k * len(conds) <= 30  # values above the bars, where they fit
    width = 0.8 / max(k, 1)
    longest = max(len(c) for c in conds)
    group_in = max(0.35 * k + 0.4, 0.08 * longest + 0.4)  # room for the bars and the label
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 + group_in * len(conds)), 4.0), dpi=DPI)
    cmap = plt.get_cmap("tab10" if k <= 10 else "tab20")
    for j, model in enumerate(models):
        xs, hs, errs_lo, errs_hi = [], [], [], []
        for i, cond in enumerate(conds):
            r = next((r for r in rates if r.model == model and r.condition == cond), None)
            x = i - 0.4 + width * (j + 0.5)
            s = r.shares.get("hidden") if r is not None else None
            if s is None:
                if r is not None:  # asked, but no answered reply with a choice
                    ax.text(x, 1.0, "n/a", ha="center", va="bottom", fontsize=6.5, color="0.4",
                            rotation=90)
                continue
            xs.append(x)
            hs.append(100 * s.share)
            errs_lo.append(max(0.0, 100 * (s.share - s.low)))
            errs_hi.append(max(0.0, 100 * (s.high - s.share)))
            if labels:
                ax.text(x, 100 * s.high + 1.0, pct(s.share), ha="center", va="bottom",
                        fontsize=6.5, color="0.25")
        ax.bar(xs, hs, width=width * 0.92, color=cmap(j % cmap.N), label=analysis.label(model),
               yerr=[errs_lo, errs_hi], error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "0.2"})
    tilt = len(conds) > 8 and longest > 8
    ax.set_xticks(range(len(conds)), conds, fontsize=8.5, rotation=20 if tilt else 0,
                  ha="right" if tilt else "center")
    ax.set_xlim(-0.6, len(conds) - 0.4)
    ax.set_ylim(0, 108)
    ax.set_ylabel("hidden-block choices (% of answered)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    title = sim_title(analysis, f"Hidden-block choice rate, batch {batch}"
                      + (f" (set {set_})" if set_ else ""), models)
    ax.set_title(textwrap.fill(title, 80), fontsize=10, loc="left",
                 color="#a0006e" if title.startswith("SIMULATED") else "black")
    if k > 1:
        ax.legend(fontsize=7.5, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return out
