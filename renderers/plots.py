"""Plots with matplotlib (Agg): per-iteration curves as in the paper's Figure 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LABELS = {"dist": "Dist ×100 (lower is better)", "cacc75": "CAcc@75", "cacc50": "CAcc@50",
          "iou": "mIoU ×100", "alive": "target still inside the region (%)"}


def curve_png(rows: list[dict[str, Any]], metric: str, out: str | Path,
              baselines: dict[str, dict[str, float]] | None = None) -> Path:
    """One line per (model, strategy) over t; each model's ``direct`` result dashed; the
    oracle ceiling dotted grey; simulated respondents marked and said so in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=150)
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    simulated: dict[tuple[str, str], bool] = {}
    for r in rows:
        series.setdefault((r["model"], r["strategy"]), []).append((r["t"], r[metric]))
        simulated[(r["model"], r["strategy"])] = bool(r.get("simulated"))
    if any(simulated.values()):
        ax.set_title("SIMULATED respondents (sim): not findings about models", fontsize=8)
    colors: dict[str, Any] = {}
    for (model, strategy), pts in series.items():
        pts.sort()
        xs, ys = zip(*pts, strict=True)
        if model.startswith("oracle"):
            ax.plot(xs, ys, ":", color="0.3", lw=2, label=f"oracle ceiling ({strategy})")
            continue
        sim = " (sim)" if simulated.get((model, strategy)) else ""
        line = ax.plot(xs, ys, marker="o", ms=3, label=f"{model}{sim} · {strategy}")[0]
        colors.setdefault(model, line.get_color())
    for model, base in (baselines or {}).items():
        if metric in base and model in colors:
            ax.axhline(base[metric], ls="--", lw=1, color=colors[model],
                       label=f"{model} · direct")
    ax.set_xlabel("iteration t")
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out)
    plt.close(fig)
    return out
