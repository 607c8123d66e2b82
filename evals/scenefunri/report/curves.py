"""Metrics per iteration for region strategies (SPoE and kin), as in the paper's Figure 2.

A strategy takes part when it declared, on registering, that it iterates
(``engine.graph.Iterates``): which of its Steps are iterations and how many a full
trajectory takes. For each trajectory, the region after iteration t is scored against the
ground truth with the paper's metrics, plus ``alive``: 1 while the ground-truth box still
lies inside the region. Every t averages over the same instances, as the table does (the
mean over instances of each instance's mean over samples), by one rule:

- an answered trajectory that stopped early (``tau``, ``unsure``, ``min_area``) keeps its
  last region for the later iterations;
- an unanswered one is scored, from the iteration where it failed onward, exactly as the
  table scores it: the benchmark's scorer with the run's ``scoring.unanswered`` (``full``:
  the full image's Dist, CAcc and IoU 0; ``skip``: no Dist), and ``alive`` 0.

So the curve at the last t is the table's row for a strategy whose prediction is its last
region (``spoe``); one that answers with another box (``finish=direct``: a box asked
inside the last region) gets a note saying the two measure different things. A (model, strategy) whose every trajectory failed
before its first region is left out, with a note.

The ceiling is each family's own: the regions of a perfect chooser under the strategy's own
rules (halving for ``spoe``, the grid for ``spoe-grid``, best-first for ``spoe-search``), on
the instances run with it; a family that declares none gets none.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ....engine.box import Box
from ....engine.records import TrajectoryRecord
from ....engine.rundir import RunDir
from ....engine.types import Instance
from ....strategies import StrategyError, get
from ..data.dataset import load_dataset
from ..metrics import Unanswered, score
from ..scoring import scorer
from .bootstrap import instance_means
from .summary import open_runs, run_records, summarize

CURVE_METRICS = ("dist", "cacc75", "cacc50", "iou", "alive")
CEILING_MODEL = "oracle (ceiling)"

# t → instance (or (run, instance) for ceilings) → the scores of its samples
PerT = dict[int, dict[Any, list[dict[str, float]]]]


def _instances(run: RunDir) -> dict[str, Instance]:
    ds = load_dataset(run.config.data if run.config is not None else "")
    return {i.id: i for i in ds.instances}


def unanswered_rule(run: RunDir) -> Unanswered:
    """The run's ``scoring.unanswered`` (``run.json``), the rule its table scored with."""
    return ((run.config.scoring if run.config is not None else {}) or {}).get(
        "unanswered", "full")


def step_scores(region: list[float], gt: list[float], w: int, h: int) -> dict[str, float]:
    s = score(region, gt, w, h)
    s["alive"] = float(Box.of(region).contains(Box.of(gt)))
    return s


def iteration_regions(rec: TrajectoryRecord, node: str, length: int,
                      full: list[float]) -> list[list[float] | None]:
    """The region after each iteration t = 0..``length`` (t = 0: ``full``): an answered
    trajectory that stopped early keeps its last region; an unanswered one has None from
    the iteration where it failed onward."""
    regions: list[list[float] | None] = [full]
    for s in rec["steps"]:
        if s.get("name", node) != node:
            continue  # not an iteration (a finishing box, say)
        if s.get("region") is None:
            break  # the step that failed
        regions.append(s["region"])
    regions = regions[: length + 1]
    pad = regions[-1] if rec["status"] == "answered" else None
    return regions + [pad] * (length + 1 - len(regions))


def trajectory_scores(regions: list[list[float] | None], inst: Instance,
                      unanswered: Unanswered = "full") -> list[dict[str, float]]:
    """The scores (unscaled) of :func:`iteration_regions`; where there is no region (the
    trajectory failed), the table's score of an unanswered trajectory."""
    gt, w, h = inst.truth["box"], inst.width, inst.height
    failed = {**scorer(unanswered)(inst, None), "alive": 0.0}
    return [dict(failed) if r is None else step_scores(r, gt, w, h) for r in regions]


def _mean_rows(per_t: PerT, **key: Any) -> list[dict[str, Any]]:
    """Per t, each metric ×100 as the table takes it: the mean over instances of each
    instance's mean over samples (None where no trajectory has the metric)."""
    rows = []
    for t in sorted(per_t):
        row = {**key, "t": t, "n": sum(len(v) for v in per_t[t].values())}
        _, mat = instance_means(per_t[t], CURVE_METRICS)
        for j, m in enumerate(CURVE_METRICS):
            vals = [float(v) for v in mat[:, j] if not math.isnan(v)]
            row[m] = 100 * sum(vals) / len(vals) if vals else None
        rows.append(row)
    return rows


def iterates_of(rec: TrajectoryRecord, notes: list[str]) -> tuple[Any, Any] | None:
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
        params = entry.params(**rec["params"])
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
    groups: dict[tuple[str, str], PerT] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    simulated: dict[tuple[str, str], bool] = {}
    total: dict[tuple[str, str], int] = defaultdict(int)
    failed: dict[tuple[str, str], int] = defaultdict(int)
    # answered with a box other than the last region (a finishing step: finish=direct)
    answers_apart: dict[tuple[str, str], int] = defaultdict(int)
    # trajectories with steps, none named as the declaration says: a naming slip, not failure
    unnamed: dict[tuple[str, str], int] = defaultdict(int)
    node_of: dict[tuple[str, str], str] = {}
    humans: set[tuple[str, str]] = set()  # groups answered by a person (marked "(human)")
    # strategy label → (declaration, params, instances run with it), for the ceiling
    used: dict[str, tuple[Any, Any, set[tuple[str, str]]]] = {}
    instances: dict[str, dict[str, Instance]] = {}
    for run in open_runs(run_dirs):
        run_dir = str(run.path)
        instances[run_dir] = _instances(run)
        rule = unanswered_rule(run)
        for rec in run_records(run):
            found = iterates_of(rec, notes)
            if found is None:
                continue
            iterates, params = found
            key = (rec["model"], rec["strategy"])
            inst = instances[run_dir][rec["instance_id"]]
            regions = iteration_regions(rec, iterates.node, iterates.length(params),
                                        Box.full(inst.width, inst.height).to_list())
            total[key] += 1
            failed[key] += len(regions) > 1 and regions[1] is None
            last = next((r for r in reversed(regions) if r is not None), None)
            answers_apart[key] += bool(rec["status"] == "answered" and rec["prediction"]
                                       and last is not None and rec["prediction"] != last)
            steps = rec["steps"]
            unnamed[key] += bool(steps) and all(st.get("name") != iterates.node for st in steps)
            node_of[key] = iterates.node
            simulated[key] = simulated.get(key, False) or bool(rec["simulated"])
            if rec["backend"].startswith("human"):
                humans.add(key)
            for t, scores in enumerate(trajectory_scores(regions, inst, rule)):
                groups[key][t][rec["instance_id"]].append(scores)
            used.setdefault(rec["strategy"], (iterates, params, set()))[2].add(
                (run_dir, rec["instance_id"]))
    rows = []
    for key, per_t in sorted(groups.items()):
        model, strategy = key
        if unnamed[key] == total[key]:
            notes.append(f"{model} · {strategy}: no step of its {total[key]} trajectories is "
                         f"named {node_of[key]!r}, the node its Iterates declares; left out "
                         "(declare Iterates(node=...) with the graph's iteration node)")
            continue
        if failed[key] == total[key]:
            notes.append(f"{model} · {strategy}: every trajectory ({failed[key]}) failed "
                         "before its first region; left out")
            continue
        if answers_apart[key]:
            notes.append(f"{model} · {strategy}: {answers_apart[key]} of {total[key]} "
                         "trajectories answer with a box other than their last region (a "
                         "finishing step); the curve draws the regions, the table scores the "
                         "answers, so its last iteration is not the table's row")
        rows += _mean_rows(per_t, model=model, strategy=strategy, simulated=simulated[key],
                           **({"human": True} if key in humans else {}))
    if ceiling:
        rows += _ceilings(used, instances)
    return rows


def _ceilings(used: dict[str, tuple[Any, Any, set[tuple[str, str]]]],
              instances: dict[str, dict[str, Instance]]) -> list[dict[str, Any]]:
    """One ceiling per strategy label whose family has one; labels whose ceilings come out
    identical (say ``spoe`` and ``spoe:mode=keep``) share one row set."""
    out: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for label, (iterates, params, ids) in sorted(used.items()):
        if iterates.ceiling is None:
            continue
        per_t: PerT = defaultdict(lambda: defaultdict(list))
        length = iterates.length(params)
        for run_dir, iid in sorted(ids):
            inst = instances[run_dir][iid]
            gt, w, h = inst.truth["box"], inst.width, inst.height
            track = [Box.full(w, h).to_list(), *iterates.ceiling(gt, w, h, params)][: length + 1]
            for t, region in enumerate(track):
                per_t[t][(run_dir, iid)].append(step_scores(region, gt, w, h))
        rows = _mean_rows(per_t, model=CEILING_MODEL, strategy=label, simulated=False,
                          ceiling=iterates.ceiling_name)
        same = json.dumps([{k: v for k, v in r.items() if k != "strategy"} for r in rows],
                          sort_keys=True)
        out.setdefault(same, ([], rows))[0].append(label)
    merged = []
    for labels, rows in out.values():
        merged += [{**r, "strategy": " / ".join(labels)} for r in rows]
    return merged


def direct_baselines(run_dirs: Iterable[str | Path | RunDir],
                     rows: list[dict[str, Any]] | None = None) -> dict[str, dict[str, float]]:
    """Each model's ``direct`` result (×100), the dashed line of Figure 2 (``rows``: the
    runs' ``summarize`` rows where the caller has them, not computed again)."""
    out = {}
    for row in rows if rows is not None else summarize(run_dirs):
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
        if r[metric] is not None:  # None: a Dist no trajectory has at t (unanswered "skip")
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
