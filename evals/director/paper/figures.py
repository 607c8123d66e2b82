"""The Director paper's Figures 3-7: their layouts as tables, and PNGs (matplotlib, Agg).

Figure 3 and 4: hidden-block and director-view choices under move with and without the
visibility question; Figure 5: the readings of the coded traces; Figure 6: move and its two
rewordings; Figure 7a and 7b: the joint rate and hidden-block choices under the base prompt
and the combined constraint. A figure whose models a simulator answered for says SIMULATED in
its title, and names them ``NAME (sim)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis.analyze import Analysis, Share
from ..analysis.shown import pct
from .picks import (
    COMBINED,
    OURS,
    VIS_MOVE,
    Layout,
    Pick,
    ch,
    each_model,
    rate,
    rates_per_model,
    rt,
    with_batches,
)


def _with_without(a: Analysis, number: str, caption: str, pick: Pick, measure: str,
                  kind: str) -> Layout:
    rows: list[Any] = []
    series: dict[str, list[Any]] = {"without the question": [], "with the question": []}
    labels, batches = [], []
    for m, c, b in each_model(a, pick):
        k = c.comparison
        s0, s1 = rate(a, m, b, k.base, measure), rate(a, m, b, k.variant, measure)
        rows.append([a.label(m), rt(s0), rt(s1), ch(c)])
        labels.append(a.label(m))
        batches.append(b)
        series["without the question"].append(s0)
        series["with the question"].append(s1)
    lay = Layout(number, caption, ["model", "without (%)", "with (%)", "change"], rows,
                 [OURS.format(what="figure") + " Bars per model, 95% intervals."],
                 {"kind": "bars", "labels": labels, "series": series,
                  "ylabel": f"{kind} (% of answered replies)"})
    return with_batches(lay, batches)


def figures(a: Analysis) -> list[Layout]:
    out = [
        _with_without(a, "Figure 3", "Hidden-block choices under move with and without the "
                      "visibility question.", VIS_MOVE, "hidden", "hidden-block choices"),
        _with_without(a, "Figure 4", "Director-view choices under move with and without the "
                      "visibility question.", Pick("move/novis", "move", "dv"), "dv",
                      "director-view choices"),
        figure5(a),
    ]
    want = Pick("move", "move-want")
    out.append(rates_per_model(a, "Figure 6", "Hidden-block choices under move and its two "
                               "rewordings.", want,
                               {"move (%)": ("move", "hidden"),
                                "“want you to move” (%)": ("move-want", "hidden"),
                                "“the block that you will move” (%)": ("move-will", "hidden")},
                               figure="hidden-block choices"))
    for n, meas, what in (("Figure 7a", "joint", "joint rate"),
                          ("Figure 7b", "hidden", "hidden-block choices")):
        out.append(rates_per_model(
            a, n, f"The {what} under the base prompt and under the combined constraint, in "
            "the same batch.", COMBINED,
            {"base prompt (%)": ("move", meas), "combined constraint (%)": ("move+combined", meas)},
            changes={"constraint − base": Pick("move", "move+combined", meas)}, figure=what))
    return out


READINGS = (("dv_reading", "director view"), ("own_view", "own view"),
            ("digit_reading", "largest digit"), ("prior_reading", "prior knowledge"))


def figure5(a: Analysis) -> Layout:
    rows, stacks = [], []
    for r in a.rates:
        if "own_view" not in r.shares:
            continue
        shares = [r.shares[m].share if m in r.shares else 0.0 for m, _ in READINGS]
        none = max(0.0, 1.0 - sum(shares))
        rows.append([a.label(r.model), r.batch, r.condition, str(r.shares["own_view"].n),
                     *(rt(r.shares.get(m)) for m, _ in READINGS), pct(none)])
        stacks.append({"label": f"{a.label(r.model)} · {r.condition}",
                       "parts": [*shares, none]})
    return Layout("Figure 5", "The readings of “the largest block” in the coded reasoning "
                  "traces.", ["model", "batch", "condition", "coded", *(n + " (%)" for _, n in
                                                                         READINGS), "no rule (%)"],
                  rows, [OURS.format(what="figure") + " A stacked bar per model and condition."]
                  + ([] if rows else ["not coded: run `unseen director code RUN --coder SPEC` "
                                      "first."]),
                  {"kind": "stacked", "stacks": stacks,
                   "parts": [n for _, n in READINGS] + ["no rule"]})



# --- PNGs ------------------------------------------------------------------------------------


def _title(a: Analysis, lay: Layout, labels: list[str]) -> str:
    title = f"{lay.number}. {lay.caption}"
    sim = [x for x in labels if x.endswith(" (sim)")]
    return f"SIMULATED ({len(sim)} of {len(labels)} models) · {title}" if sim else title


def draw(a: Analysis, lays: list[Layout], out_dir: str | Path) -> list[Path]:
    """A PNG per figure that has data, ``figure3.png`` … ``figure7b.png`` in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for lay in lays:
        if lay.figure is None or lay.empty:
            continue
        path = out / (lay.number.lower().replace(" ", "") + ".png")
        draw_one = _bars if lay.figure["kind"] == "bars" else _stacked
        paths.append(draw_one(a, lay, path))
    return paths


def _finish(fig: Any, ax: Any, a: Analysis, lay: Layout, labels: list[str], path: Path) -> Path:
    import textwrap

    from ..analysis.plots import DPI, pyplot

    title = _title(a, lay, labels)
    ax.set_title(textwrap.fill(title, 95), fontsize=9.5, loc="left",
                 color="#a0006e" if title.startswith("SIMULATED") else "black")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    pyplot().close(fig)
    return path


def _bars(a: Analysis, lay: Layout, path: Path) -> Path:
    """Grouped bars: a group per model, a bar per series, with the 95% intervals."""
    from ..analysis.plots import DPI, pyplot

    plt = pyplot()
    f = lay.figure or {}
    labels, series = f["labels"], f["series"]
    k = len(series)
    width = 0.8 / k
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 0.32 * k * len(labels) + 0.3 * len(labels)),
                                    4.2), dpi=DPI)
    colors = ["#9aa5b1", "#1f4e99", "#d9822b", "#2e8b57"]
    for j, (name, shares) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(labels))]
        hs = [100 * s.share if isinstance(s, Share) else 0.0 for s in shares]
        lo = [max(0.0, 100 * (s.share - s.low)) if isinstance(s, Share) else 0.0 for s in shares]
        hi = [max(0.0, 100 * (s.high - s.share)) if isinstance(s, Share) else 0.0 for s in shares]
        ax.bar(xs, hs, width=width * 0.92, color=colors[j % len(colors)], label=name,
               yerr=[lo, hi], error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "0.2"})
        for x, s in zip(xs, shares, strict=True):
            ax.text(x, (100 * s.high if isinstance(s, Share) else 0) + 1.5,
                    pct(s.share) if isinstance(s, Share) else "–", ha="center", va="bottom",
                    fontsize=6.5, color="0.25", rotation=90 if k * len(labels) > 24 else 0)
    ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=25, ha="right")
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, 112)
    ax.set_ylabel(f["ylabel"], fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=7.5, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, a, lay, labels, path)


def _stacked(a: Analysis, lay: Layout, path: Path) -> Path:
    """Horizontal stacked bars: one per model and condition, a segment per reading."""
    from ..analysis.plots import DPI, pyplot

    plt = pyplot()
    f = lay.figure or {}
    stacks, parts = f["stacks"], f["parts"]
    fig, ax = plt.subplots(figsize=(8.5, 1.2 + 0.42 * len(stacks)), dpi=DPI)
    colors = ["#1f4e99", "#d62728", "#d9822b", "#8c564b", "#bbbbbb"]
    ys = list(range(len(stacks), 0, -1))
    left = [0.0] * len(stacks)
    for j, name in enumerate(parts):
        w = [100 * s["parts"][j] for s in stacks]
        ax.barh(ys, w, left=left, color=colors[j % len(colors)], label=name, height=0.7)
        for y, x0, wi in zip(ys, left, w, strict=True):
            if wi >= 7:
                ax.text(x0 + wi / 2, y, f"{wi:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if j < 4 else "0.2")
        left = [x + wi for x, wi in zip(left, w, strict=True)]
    ax.set_yticks(ys, [s["label"] for s in stacks], fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("coded traces (%)", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    labels = [s["label"].split(" · ")[0] for s in stacks]
    return _finish(fig, ax, a, lay, list(dict.fromkeys(labels)), path)
