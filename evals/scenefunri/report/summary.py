"""Comparison tables from run directories: one row per (model, strategy).

Every number is derived from the journals alone. Metrics are the paper's aggregates ×100;
beside them the cost: answered %, calls, tokens and seconds per instance, and with a price
table (``prices``) US dollars per instance and in all (``evals.costs``).

Each metric comes with a 95 % percentile-bootstrap interval over instances (see
``bootstrap.py`` for the estimator): an instance's value is the mean over its samples, the
point estimate is the mean over instances, and 2,000 seeded resamples of the instances give
the interval. With a baseline strategy, each other row of the same model gets the paired
difference over the instances both rows share, with a paired-bootstrap interval; a difference
whose interval excludes zero is marked ``*``.

Rows carry a ``kind``: ``model`` (a real model), ``sim`` (the simulator), ``rule`` (a
``baseline:`` reference rule), or ``paper`` (quoted from the paper, not measured; ``--paper``).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from ....engine.errors import UnseenError
from ....engine.journal import JournalError, line_of
from ....engine.records import TrajectoryRecord
from ....engine.rundir import RunDir, RunDirError, kind_of, serving_text
from ....renderers.figures import GridCell, GridRow
from ... import costs
from .bootstrap import LEVEL, RESAMPLES, bootstrap_ci, excludes_zero, instance_means, paired
from .cells import KIND_ORDER, METRIC_COLUMNS, model_label, nan_to_none

_RECORD_KEY = {"cacc75": "cacc75", "cacc50": "cacc50", "miou": "iou", "dist": "dist"}


class PoolError(RunDirError):
    """Runs that share a (model, strategy), compared without ``pool``."""


def open_runs(run_dirs: Iterable[str | Path | RunDir]) -> list[RunDir]:
    """The run directories as SceneFunRI runs (a run of another benchmark: one line)."""
    return [d if isinstance(d, RunDir) and d.benchmark == "scenefunri"
            else RunDir.open(cast("str | Path", getattr(d, "path", d)), benchmark="scenefunri")
            for d in run_dirs]


def _is_box(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 4 and all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v)


def _not_a_box(rec: TrajectoryRecord) -> str | None:
    """The field of a SceneFunRI record that should be a box and is not."""
    if rec["prediction"] is not None and not _is_box(rec["prediction"]):
        return "prediction"
    for i, step in enumerate(rec["steps"]):
        if step.get("region") is not None and not _is_box(step["region"]):
            return f"steps.{i}.region"
    return None


def box_checked(run: RunDir, rec: TrajectoryRecord) -> TrajectoryRecord:
    """``rec`` of ``run`` if its prediction and regions are boxes of four numbers, else a
    damaged journal (one line naming it)."""
    if (field := _not_a_box(rec)) is not None:
        raise JournalError(f"{run.journal}:{line_of(run.journal, rec['key'])}: {field}: not a "
                           "box of four numbers: the journal is damaged")
    return rec


def run_records(run: RunDir) -> Iterable[TrajectoryRecord]:
    """The run's current records (``RunDir.records``), each checked by :func:`box_checked`."""
    for rec in run.records():
        yield box_checked(run, rec)


def summarize(
    run_dirs: Iterable[str | Path | RunDir], baseline: str | None = None, *, seed: int = 0,
    resamples: int = RESAMPLES, level: float = LEVEL, pool: bool = True,
    prices: costs.Prices | None = None,
) -> list[dict[str, Any]]:
    """Rows keyed ``model``, ``strategy``, ``n``, ``answered``, the metrics and cost columns.

    ``n`` counts trajectories and ``instances`` instances; each metric ``m`` is the mean over
    instances of the per-instance mean over samples (×100; the plain mean when every instance
    has the same number of samples), with ``m_low``/``m_high`` its percentile-bootstrap
    interval (``resamples`` resamples of the instances, ``numpy.random.default_rng(seed)``).

    With ``baseline`` (a strategy label), each row of a model also gets ``delta_<metric>``
    against that model's baseline row (the mean paired difference over the instances both
    rows share, as in the paper's Table 3), ``delta_<metric>_low``/``_high`` (paired
    bootstrap) and ``delta_<metric>_sig`` (the interval excludes zero). The baseline row
    itself, and rows of a model without a baseline row, get ``None`` there.

    ``runs`` lists the run directories a row's trajectories come from. A (model, strategy)
    found in several runs is pooled into one row (its instances' samples from every run);
    with ``pool=False`` that is a :class:`PoolError` naming the runs instead.

    With ``prices`` (``model -> Price | None``), a real model's row (``costed``) gets
    ``cost_usd`` (US dollars per trajectory) and ``cost_total_usd`` from its token usage,
    and ``price`` (the fields of the price used); a model without a price gets ``None``
    there (never 0). Rows of the simulator, rules and people have no cost.

    Rows come sorted: real models, then simulated ones, then reference rules; within a
    model the baseline strategy first.
    """
    runs = open_runs(run_dirs)
    # each backend as run.json describes it: how it sent images, what it dropped
    descs = {d.get("spec"): d for r in runs for d in _backends_of(r)}
    batched = costs.batched_specs(descs.values())
    groups: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"by_instance": defaultdict(list), "n": 0, "answered": 0, "calls": 0, "in": 0,
                 "out": 0, "sec": 0.0, "simulated": False, "backend": "", "usage": {}}
    )
    runs_of: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)
    for where, rec in ((r, rec) for r in runs for rec in run_records(r)):
        runs_of[(rec["model"], rec["strategy"])][str(where.path)] = None
        g = groups[(rec["model"], rec["strategy"])]
        g["n"] += 1
        g["by_instance"][rec["instance_id"]].append(rec["metrics"])
        g["answered"] += rec["status"] == "answered"
        g["simulated"] = g["simulated"] or rec["simulated"]
        g["backend"] = rec["backend"]
        g["sec"] += rec["seconds"]
        for step in rec["steps"]:
            reply = step["reply"]
            # a step may stand for several calls (self-consistency votes)
            g["calls"] += 0 if reply.get("cached", False) else step.get("info", {}).get("calls", 1)
            usage = reply.get("usage") or {}
            g["in"] += usage.get("input_tokens", 0)
            g["out"] += usage.get("output_tokens", 0)
            costs.add_usage(g["usage"], usage)
    if not pool:
        _refuse_pooling(runs_of)
    if baseline and not any(s == baseline for _, s in groups):
        raise RunDirError(f"baseline strategy {baseline!r} is not in these runs")

    keys = [_RECORD_KEY[m] for m in METRIC_COLUMNS]
    rows, values = [], {}
    for (model, strat), g in groups.items():
        ids, mat = instance_means(g["by_instance"], keys)
        values[(model, strat)] = (ids, mat)
        n = g["n"]
        point = 100 * _nanmean(mat)
        bounds = 100 * bootstrap_ci(mat, resamples=resamples, seed=seed, level=level)
        row: dict[str, Any] = {
            "model": model, "strategy": strat, "kind": kind_of(g["backend"], g["simulated"]),
            "source": "run", "backend": g["backend"], "simulated": g["simulated"],
            "n": n, "instances": len(ids), "answered": 100 * g["answered"] / n,
            "runs": list(runs_of[(model, strat)]),
            "serving": serving_text(descs.get(g["backend"])),
            "dropped": list((descs.get(g["backend"]) or {}).get("dropped_params") or []),
        }
        for j, m in enumerate(METRIC_COLUMNS):
            row[m] = float(point[j])
            row[f"{m}_low"], row[f"{m}_high"] = float(bounds[0, j]), float(bounds[1, j])
        row.update({
            "calls": g["calls"] / n, "input_tokens": g["in"] / n, "output_tokens": g["out"] / n,
            "seconds": g["sec"] / n, "ci_level": level, "ci_resamples": resamples, "ci_seed": seed,
        })
        costed, price = costs.priced(model, row["kind"], prices)
        total = costs.cost_of(g["usage"], price, batch=g["backend"] in batched)
        row.update({"costed": costed, "cost_usd": None if total is None else total / n,
                    "cost_total_usd": total, "price": costs.price_fields(price)})
        rows.append(row)
    if baseline:
        base = {r["model"]: r for r in rows if r["strategy"] == baseline}
        for r in rows:
            b = base.get(r["model"])
            _add_deltas(r, b if b is not r else None, values, baseline, resamples, seed, level)
    rows.sort(key=lambda r: (KIND_ORDER[r["kind"]], r["model"], r["strategy"] != baseline,
                             r["strategy"]))
    return [{k: nan_to_none(v) for k, v in r.items()} for r in rows]


def _backends_of(run: RunDir) -> list[dict[str, Any]]:
    """The backend descriptions of a run's run.json; none where it has no readable one (a
    journal copied without it still compares)."""
    try:
        config = run.config
    except UnseenError:
        return []
    return list(config.backends) if config is not None else []


def _refuse_pooling(runs_of: dict[tuple[str, str], dict[str, None]]) -> None:
    """A :class:`PoolError` naming the first (model, strategy) that several runs hold."""
    shared = {k: list(v) for k, v in runs_of.items() if len(v) > 1}
    if not shared:
        return
    (model, strat), runs = next(iter(shared.items()))
    more = f" (and {len(shared) - 1} more such pairs)" if len(shared) > 1 else ""
    raise PoolError(f"model {model}, strategy {strat} is in several runs ({', '.join(runs)})"
                    f"{more}: pass --pool to pool each into one row, or compare the runs one "
                    "at a time")


def _nanmean(mat: np.ndarray) -> np.ndarray:
    """Column means leaving NaN out; NaN, without numpy's warning, for an all-NaN column."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(mat, axis=0)


def _add_deltas(row: dict[str, Any], base: dict[str, Any] | None, values: dict, baseline: str,
                resamples: int, seed: int, level: float) -> None:
    row["baseline"] = baseline if base else None
    row["delta_n"] = None
    if base is None:
        for m in METRIC_COLUMNS:
            row.update({f"delta_{m}": None, f"delta_{m}_low": None, f"delta_{m}_high": None,
                        f"delta_{m}_sig": None})
        return
    ids_a, a = values[(row["model"], row["strategy"])]
    ids_b, b = values[(base["model"], base["strategy"])]
    shared, diff = paired(ids_a, a, ids_b, b)
    row["delta_n"] = len(shared)
    if not shared:
        for m in METRIC_COLUMNS:
            row.update({f"delta_{m}": None, f"delta_{m}_low": None, f"delta_{m}_high": None,
                        f"delta_{m}_sig": None})
        return
    point = 100 * _nanmean(diff)
    bounds = 100 * bootstrap_ci(diff, resamples=resamples, seed=seed, level=level)
    for j, m in enumerate(METRIC_COLUMNS):
        lo, hi = float(bounds[0, j]), float(bounds[1, j])
        row[f"delta_{m}"] = float(point[j])
        row[f"delta_{m}_low"], row[f"delta_{m}_high"] = lo, hi
        row[f"delta_{m}_sig"] = None if math.isnan(lo) else excludes_zero(lo, hi)


# --- figure cells -------------------------------------------------------------------------


def figure_cells(
    run_dirs: Sequence[str | Path | RunDir], instance_ids: Sequence[str], *, sample: int = 0,
    models: Sequence[str] | None = None, strategies: Sequence[str] | None = None,
) -> tuple[list[Any], list[Any]]:
    """What ``unseen figure`` draws: the instances (from each run's dataset) and the rows.

    Returns ``(instances, rows)``: the instances in the order asked for (each from the first
    run whose dataset holds it), and one ``GridRow`` per (model, strategy), ordered as in
    ``compare``, with the trajectory of sample ``sample`` drawn in each cell. Raises
    ``RunDirError`` for an instance id that no run's dataset holds.
    """
    from ..data.dataset import DatasetError, load_dataset

    found: dict[str, Any] = {}
    records: dict[tuple[str, str], dict[str, TrajectoryRecord]] = defaultdict(dict)
    kinds: dict[tuple[str, str], dict[str, Any]] = {}
    wanted = set(instance_ids)
    for run in open_runs(run_dirs):
        data = run.config.data if run.config is not None else ""
        if not data:
            raise RunDirError(f"{run.config_file}: names no dataset ('data')")
        path = Path(data)
        if not path.is_absolute() and not path.exists():
            path = run.path / path
        try:
            dataset = load_dataset(path)
        except DatasetError as exc:
            raise RunDirError(f"{run.path}: its dataset cannot be loaded: {exc}") from None
        for inst in dataset:
            if inst.id in wanted and inst.id not in found:
                found[inst.id] = inst
        for rec in run_records(run):
            if rec["instance_id"] not in wanted or rec["sample"] != sample:
                continue
            if models and rec["model"] not in models:
                continue
            if strategies and rec["strategy"] not in strategies:
                continue
            key = (rec["model"], rec["strategy"])
            records[key][rec["instance_id"]] = rec
            kinds[key] = {"model": rec["model"], "strategy": rec["strategy"],
                          "kind": kind_of(rec["backend"], rec["simulated"])}
    missing = [i for i in instance_ids if i not in found]
    if missing:
        raise RunDirError(f"unknown instance id(s) {', '.join(missing)}: not in the runs' datasets")
    order = sorted(kinds, key=lambda k: (KIND_ORDER[kinds[k]["kind"]], k[0], k[1]))
    rows = [GridRow(label=f"{model_label(kinds[k])}\n{k[1]}",
                    cells=[_grid_cell(records[k].get(i)) for i in instance_ids]) for k in order]
    return [found[i] for i in instance_ids], rows


def _grid_cell(rec: TrajectoryRecord | None) -> Any:
    if rec is None:
        return None
    m = rec["metrics"]
    caption = " · ".join(f"{name} {100 * m[key]:.1f}" for name, key in (("IoU", "iou"),
                                                                            ("Dist", "dist"))
                         if m.get(key) is not None)
    if rec["status"] == "answered" and rec["prediction"]:
        return GridCell(box=rec["prediction"], caption=caption)
    err = rec["error"]
    return GridCell(note="unanswered" + (f" ({err['kind']})" if err else ""),
                    caption=caption)
