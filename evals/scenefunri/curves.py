"""Metrics per iteration for region strategies (SPoE and kin), as in the paper's Figure 2.

A strategy takes part when it declared, on registering, that it iterates
(``engine.graph.Iterates``): which of its Steps are iterations and how many a full
trajectory takes. For each trajectory, the region after iteration t is scored against the
ground truth with the paper's metrics, plus ``alive``: 1 while the ground-truth box still
lies inside the region. A trajectory that ends early (it stopped, or a reply could not be
read) keeps its last region for the later iterations, so every t averages over the same
instances. A (model, strategy) whose every trajectory failed before its first region is
left out, with a note.

The ceiling is each family's own: the regions of a perfect chooser under the strategy's own
rules (halving for ``spoe``, the grid for ``spoe-grid``, best-first for ``spoe-search``), on
the instances run with it; a family that declares none gets none.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...engine.box import Box
from ...engine.rundir import RunDir
from ...strategies import StrategyError, get
from .dataset import load_dataset
from .metrics import score
from .report import open_runs, run_records, summarize

CURVE_METRICS = ("dist", "cacc75", "cacc50", "iou", "alive")
CEILING_MODEL = "oracle (ceiling)"


def _truths(run: RunDir) -> dict[str, tuple[list[float], int, int]]:
    ds = load_dataset(run.config.data if run.config is not None else "")
    return {i.id: (i.truth["box"], i.width, i.height) for i in ds.instances}


def step_scores(region: list[float], gt: list[float], w: int, h: int) -> dict[str, float]:
    s = score(region, gt, w, h)
    s["alive"] = float(Box.of(region).contains(Box.of(gt)))
    return s


def _mean_rows(per_t: dict[int, list[dict[str, float]]], **key: Any) -> list[dict[str, Any]]:
    rows = []
    for t in sorted(per_t):
        vals = per_t[t]
        row = {**key, "t": t, "n": len(vals)}
        for m in CURVE_METRICS:
            row[m] = 100 * sum(v[m] for v in vals) / len(vals)
        rows.append(row)
    return rows


def _iterates(rec: dict[str, Any], notes: list[str]) -> tuple[Any, Any] | None:
    """The strategy's iteration declaration and its parameters, or None when it does not
    iterate (or is not installed here: noted)."""
    name = rec["strategy"].partition(":")[0]
    try:
        entry = get(name)
    except StrategyError:
        note = f"{rec['strategy']}: strategy {name!r} is not installed here; left out"
        if note not in notes:
            notes.append(note)
        return None
    if entry.iterates is None:
        return None
    try:
        params = entry.params(**(rec.get("params") or {}))
    except ValidationError:
        note = f"{rec['strategy']}: its journaled parameters no longer validate; left out"
        if note not in notes:
            notes.append(note)
        return None
    return entry.iterates, params


def curves(run_dirs: Iterable[str | Path | RunDir], ceiling: bool = False,
           notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows ``model``, ``strategy``, ``simulated``, ``t``, ``n`` and each metric ×100, for
    every (model, strategy) that iterates; ``t = 0`` is the full image. With ``ceiling``,
    rows of model ``oracle (ceiling)`` (``ceiling`` names the family's rule) for each
    strategy label, on the instances run with it. Groups left out are explained in
    ``notes`` when a list is given."""
    notes = notes if notes is not None else []
    groups: dict[tuple[str, str], dict[int, list[dict[str, float]]]] = defaultdict(
        lambda: defaultdict(list))
    simulated: dict[tuple[str, str], bool] = {}
    failed: dict[tuple[str, str], int] = defaultdict(int)
    humans: set[tuple[str, str]] = set()  # groups answered by a person (marked "(human)")
    # strategy label → (declaration, params, instances run with it), for the ceiling
    used: dict[str, tuple[Any, Any, set[tuple[str, str]]]] = {}
    truths: dict[str, dict[str, tuple[list[float], int, int]]] = {}
    for run in open_runs(run_dirs):
        run_dir = str(run.path)
        truths[run_dir] = _truths(run)
        for rec in run_records(run):
            found = _iterates(rec, notes)
            if found is None:
                continue
            iterates, params = found
            key = (rec["model"], rec["strategy"])
            regions = []
            for s in rec.get("steps", []):
                if s.get("name", iterates.node) != iterates.node:
                    continue  # not an iteration (a finishing box, say)
                if s.get("region") is None:
                    break  # an unreadable step: the region stays as it was
                regions.append(s["region"])
            if not regions:
                failed[key] += 1
            gt, w, h = truths[run_dir][rec["instance_id"]]
            length = iterates.length(params)
            track = [Box.full(w, h).to_list(), *regions][: length + 1]
            track += [track[-1]] * (length + 1 - len(track))
            simulated[key] = simulated.get(key, False) or bool(rec.get("simulated"))
            if rec["backend"].startswith("human"):
                humans.add(key)
            for t, region in enumerate(track):
                groups[key][t].append(step_scores(region, gt, w, h))
            used.setdefault(rec["strategy"], (iterates, params, set()))[2].add(
                (run_dir, rec["instance_id"]))
    rows = []
    for key, per_t in sorted(groups.items()):
        model, strategy = key
        if failed[key] == len(per_t[0]):
            notes.append(f"{model} · {strategy}: every trajectory ({failed[key]}) failed "
                         "before its first region; left out")
            continue
        rows += _mean_rows(per_t, model=model, strategy=strategy, simulated=simulated[key],
                           **({"human": True} if key in humans else {}))
    if ceiling:
        rows += _ceilings(used, truths)
    return rows


def _ceilings(used: dict[str, tuple[Any, Any, set[tuple[str, str]]]],
              truths: dict[str, dict[str, tuple[list[float], int, int]]]) -> list[dict[str, Any]]:
    """One ceiling per strategy label whose family has one; labels whose ceilings come out
    identical (say ``spoe`` and ``spoe:mode=keep``) share one row set."""
    out: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for label, (iterates, params, ids) in sorted(used.items()):
        if iterates.ceiling is None:
            continue
        per_t: dict[int, list[dict[str, float]]] = defaultdict(list)
        length = iterates.length(params)
        for run_dir, iid in sorted(ids):
            gt, w, h = truths[run_dir][iid]
            track = [Box.full(w, h).to_list(), *iterates.ceiling(gt, w, h, params)][: length + 1]
            for t, region in enumerate(track):
                per_t[t].append(step_scores(region, gt, w, h))
        rows = _mean_rows(per_t, model=CEILING_MODEL, strategy=label, simulated=False,
                          ceiling=iterates.ceiling_name)
        same = json.dumps([{k: v for k, v in r.items() if k != "strategy"} for r in rows],
                          sort_keys=True)
        out.setdefault(same, ([], rows))[0].append(label)
    merged = []
    for labels, rows in out.values():
        merged += [{**r, "strategy": " / ".join(labels)} for r in rows]
    return merged


def direct_baselines(run_dirs: Iterable[str | Path | RunDir]) -> dict[str, dict[str, float]]:
    """Each model's ``direct`` result (×100), the dashed line of Figure 2."""
    out = {}
    for row in summarize(run_dirs):
        if row["strategy"] == "direct":
            out[row["model"]] = {"dist": row["dist"], "cacc75": row["cacc75"],
                                 "cacc50": row["cacc50"], "iou": row["miou"]}
    return out


def with_baselines(rows: list[dict[str, Any]],
                   baselines: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """The rows, each carrying its model's ``direct`` result (the dashed line) as
    ``direct``: a dict of metric → value ×100, or None where the model has no direct run."""
    return [{**r, "direct": baselines.get(r["model"])} for r in rows]


_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return _SPARK[3] * len(values)
    return "".join(_SPARK[round((v - lo) / (hi - lo) * (len(_SPARK) - 1))] for v in values)


def curve_table(rows: list[dict[str, Any]], metric: str,
                baselines: dict[str, dict[str, float]] | None = None):
    """A rich table: per (model, strategy), the curve as a sparkline, first → last value,
    the best t, and the model's ``direct`` result for reference; simulated respondents are
    marked ``(sim)`` and said to be simulated under the table."""
    from rich.table import Table

    sim = any(r.get("simulated") for r in rows)
    table = Table(title=f"{metric} per iteration (×100)", box=None, pad_edge=False,
                  caption="(sim): simulated respondent; its curves are not findings about "
                          "models" if sim else None)
    for col in ("model", "strategy", "curve", "t=0 → T", "best t", "direct"):
        table.add_column(col, justify="left" if col in ("model", "strategy", "curve") else "right")
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    marks: dict[tuple[str, str], str] = {}
    for r in rows:
        key = (r["model"], r["strategy"])
        series.setdefault(key, []).append((r["t"], r[metric]))
        marks[key] = " (sim)" if r.get("simulated") else " (human)" if r.get("human") else ""
    lower_better = metric == "dist"
    for (model, strategy), pts in series.items():
        pts.sort()
        vals = [v for _, v in pts]
        best = (min if lower_better else max)(pts, key=lambda p: p[1])
        base = (baselines or {}).get(model, {}).get(metric)
        table.add_row(model + marks[(model, strategy)], strategy, sparkline(vals),
                      f"{vals[0]:.1f} → {vals[-1]:.1f}", f"{best[0]} ({best[1]:.1f})",
                      "" if base is None else f"{base:.1f}")
    return table
