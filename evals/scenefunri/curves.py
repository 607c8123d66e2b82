"""Metrics per iteration for region strategies (SPoE and kin), as in the paper's Figure 2.

For each trajectory, the region after step t is scored against the ground truth with the
paper's metrics, plus ``alive``: 1 while the ground-truth box still lies inside the region.
A trajectory that ends before T (it stopped, or a reply could not be read) keeps its last
region for the later iterations, so every t averages over the same instances.

The oracle ceiling is SPoE with a perfect chooser: at every step it eliminates the half
holding less of the ground-truth box (ties: A), the same rule as ``sim:oracle``. It is the
best any model can reach with hard halving: a target cut by a split line is lost even so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...engine.box import Box
from ...engine.journal import RUN_FILE
from .dataset import load_dataset
from .metrics import score
from .report import current_records

CURVE_METRICS = ("dist", "cacc75", "cacc50", "iou", "alive")


def _truths(run_dir: Path) -> dict[str, tuple[list[float], int, int]]:
    cfg = json.loads((Path(run_dir) / RUN_FILE).read_text(encoding="utf-8"))
    ds = load_dataset(cfg["data"])
    return {i.id: (i.truth["box"], i.width, i.height) for i in ds.instances}


def step_scores(region: list[float], gt: list[float], w: int, h: int) -> dict[str, float]:
    s = score(region, gt, w, h)
    s["alive"] = float(Box.of(region).contains(Box.of(gt)))
    return s


def oracle_regions(gt: list[float], w: int, h: int, T: int, share: float = 0.5) -> list[list[float]]:
    """Regions after steps 1..T of SPoE with a perfect chooser."""
    from ...strategies.spoe import candidates

    region = Box.full(w, h).to_list()
    truth = Box.of(gt)
    out = []
    for t in range(1, T + 1):
        a, b = candidates(region, t, share)
        # eliminate the half holding less of the truth; ties eliminate A
        region = b if truth.intersection(Box.of(a)) <= truth.intersection(Box.of(b)) else a
        out.append(region)
    return out


def _mean_rows(per_t: dict[int, list[dict[str, float]]], **key: Any) -> list[dict[str, Any]]:
    rows = []
    for t in sorted(per_t):
        vals = per_t[t]
        row = {**key, "t": t, "n": len(vals)}
        for m in CURVE_METRICS:
            row[m] = 100 * sum(v[m] for v in vals) / len(vals)
        rows.append(row)
    return rows


def curves(run_dirs: Iterable[str | Path], ceiling: bool = False) -> list[dict[str, Any]]:
    """Rows ``model``, ``strategy``, ``t``, ``n`` and each metric ×100, for every (model,
    strategy) that iterates over regions (its parameters have ``T``); ``t = 0`` is the full
    image. With ``ceiling``, rows of model ``oracle (ceiling)`` for each (T, share) used, on
    the instances run with it."""
    groups: dict[tuple[str, str], dict[int, list[dict[str, float]]]] = defaultdict(
        lambda: defaultdict(list))
    # (T, share) → instances run with it, for the ceiling
    used: dict[tuple[int, float], set[tuple[str, str]]] = defaultdict(set)
    truths: dict[str, dict[str, tuple[list[float], int, int]]] = {}
    for run_dir in map(str, run_dirs):
        truths[run_dir] = _truths(Path(run_dir))
        for rec in current_records([run_dir]):
            if "T" not in rec.get("params", {}):
                continue  # not an iterative region strategy
            regions = []
            for s in rec.get("steps", []):
                if s.get("region") is None:
                    break  # an unreadable step: the region stays as it was
                regions.append(s["region"])
            gt, w, h = truths[run_dir][rec["instance_id"]]
            T = int(rec["params"]["T"])
            track = [Box.full(w, h).to_list(), *regions]
            track += [track[-1]] * (T + 1 - len(track))
            for t, region in enumerate(track):
                groups[(rec["model"], rec["strategy"])][t].append(step_scores(region, gt, w, h))
            used[(T, float(rec["params"].get("share", 0.5)))].add((run_dir, rec["instance_id"]))
    rows = []
    for (model, strategy), per_t in sorted(groups.items()):
        rows += _mean_rows(per_t, model=model, strategy=strategy)
    if ceiling:
        for (T, share), ids in sorted(used.items()):
            per_t: dict[int, list[dict[str, float]]] = defaultdict(list)
            for run_dir, iid in sorted(ids):
                gt, w, h = truths[run_dir][iid]
                track = [Box.full(w, h).to_list(), *oracle_regions(gt, w, h, T, share)]
                for t, region in enumerate(track):
                    per_t[t].append(step_scores(region, gt, w, h))
            rows += _mean_rows(per_t, model="oracle (ceiling)", strategy=f"T={T},share={share}")
    return rows


def direct_baselines(run_dirs: Iterable[str | Path]) -> dict[str, dict[str, float]]:
    """Each model's ``direct`` result (×100), the dashed line of Figure 2."""
    from .report import summarize

    out = {}
    for row in summarize(run_dirs):
        if row["strategy"] == "direct":
            out[row["model"]] = {"dist": row["dist"], "cacc75": row["cacc75"],
                                 "cacc50": row["cacc50"], "iou": row["miou"]}
    return out


_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return _SPARK[3] * len(values)
    return "".join(_SPARK[round((v - lo) / (hi - lo) * (len(_SPARK) - 1))] for v in values)


def curve_table(rows: list[dict[str, Any]], metric: str,
                baselines: dict[str, dict[str, float]] | None = None):
    """A rich table: per (model, strategy), the curve as a sparkline, first → last value,
    the best t, and the model's ``direct`` result for reference."""
    from rich.table import Table

    table = Table(title=f"{metric} per iteration (×100)", box=None, pad_edge=False)
    for col in ("model", "strategy", "curve", "t=0 → T", "best t", "direct"):
        table.add_column(col, justify="left" if col in ("model", "strategy", "curve") else "right")
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in rows:
        series.setdefault((r["model"], r["strategy"]), []).append((r["t"], r[metric]))
    lower_better = metric == "dist"
    for (model, strategy), pts in series.items():
        pts.sort()
        vals = [v for _, v in pts]
        best = (min if lower_better else max)(pts, key=lambda p: p[1])
        base = (baselines or {}).get(model, {}).get(metric)
        table.add_row(model, strategy, sparkline(vals), f"{vals[0]:.1f} → {vals[-1]:.1f}",
                      f"{best[0]} ({best[1]:.1f})", "" if base is None else f"{base:.1f}")
    return table
