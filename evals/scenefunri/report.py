"""Comparison tables from run directories: one row per (model, strategy).

Every number is derived from the journals alone. Metrics are the paper's aggregates ×100;
beside them the cost: answered %, calls, tokens and seconds per instance.

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

import csv
import io
import json
import math
import textwrap
import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...engine.journal import JournalError, line_of
from ...engine.rundir import RunDir, RunDirError, kind_of, who
from ...renderers.figures import GridCell, GridRow
from .bootstrap import LEVEL, RESAMPLES, bootstrap_ci, excludes_zero, instance_means, paired
from .paper import CITATION, NOTE

METRIC_COLUMNS = ("cacc75", "cacc50", "miou", "dist")
_RECORD_KEY = {"cacc75": "cacc75", "cacc50": "cacc50", "miou": "iou", "dist": "dist"}
HEADERS = {
    "model": "model", "strategy": "strategy", "n": "n", "answered": "answered %",
    "cacc75": "CAcc@75", "cacc50": "CAcc@50", "miou": "mIoU", "dist": "Dist",
    "calls": "calls/inst", "input_tokens": "in tok/inst", "output_tokens": "out tok/inst",
    "seconds": "s/inst",
}
LOWER_IS_BETTER = {"dist"}
KIND_ORDER = {"model": 0, "human": 1, "sim": 2, "rule": 3, "paper": 4}


def open_runs(run_dirs: Iterable[str | Path | RunDir]) -> list[RunDir]:
    """The run directories as SceneFunRI runs (a run of another benchmark: one line)."""
    return [d if isinstance(d, RunDir) and d.benchmark == "scenefunri"
            else RunDir.open(getattr(d, "path", d), benchmark="scenefunri") for d in run_dirs]


def _is_box(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 4 and all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v)


def _not_a_box(rec: dict[str, Any]) -> str | None:
    """The field of a SceneFunRI record that should be a box and is not."""
    if rec.get("prediction") is not None and not _is_box(rec["prediction"]):
        return "prediction"
    for i, step in enumerate(rec.get("steps") or []):
        if step.get("region") is not None and not _is_box(step["region"]):
            return f"steps.{i}.region"
    return None


def box_checked(run: RunDir, rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` of ``run`` if its prediction and regions are boxes of four numbers, else a
    damaged journal (one line naming it)."""
    if (field := _not_a_box(rec)) is not None:
        raise JournalError(f"{run.journal}:{line_of(run.journal, rec['key'])}: {field}: not a "
                           "box of four numbers: the journal is damaged")
    return rec


def run_records(run: RunDir) -> Iterable[dict[str, Any]]:
    """The run's current records (``RunDir.records``), each checked by :func:`box_checked`."""
    for rec in run.records():
        yield box_checked(run, rec)


def _nan_to_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def summarize(
    run_dirs: Iterable[str | Path | RunDir], baseline: str | None = None, *, seed: int = 0,
    resamples: int = RESAMPLES, level: float = LEVEL,
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

    Rows come sorted: real models, then simulated ones, then reference rules; within a
    model the baseline strategy first.
    """
    runs = open_runs(run_dirs)
    groups: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"by_instance": defaultdict(list), "n": 0, "answered": 0, "calls": 0, "in": 0,
                 "out": 0, "sec": 0.0, "simulated": False, "backend": ""}
    )
    for rec in (r for run in runs for r in run_records(run)):
        g = groups[(rec["model"], rec["strategy"])]
        g["n"] += 1
        g["by_instance"][rec["instance_id"]].append(rec.get("metrics") or {})
        g["answered"] += rec["status"] == "answered"
        g["simulated"] = g["simulated"] or rec.get("simulated", False)
        g["backend"] = rec["backend"]
        g["sec"] += rec.get("seconds", 0.0)
        for step in rec.get("steps", []):
            reply = step["reply"]
            # a step may stand for several calls (self-consistency votes)
            g["calls"] += 0 if reply.get("cached", False) else step.get("info", {}).get("calls", 1)
            usage = reply.get("usage") or {}
            g["in"] += usage.get("input_tokens", 0)
            g["out"] += usage.get("output_tokens", 0)
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
        }
        for j, m in enumerate(METRIC_COLUMNS):
            row[m] = float(point[j])
            row[f"{m}_low"], row[f"{m}_high"] = float(bounds[0, j]), float(bounds[1, j])
        row.update({
            "calls": g["calls"] / n, "input_tokens": g["in"] / n, "output_tokens": g["out"] / n,
            "seconds": g["sec"] / n, "ci_level": level, "ci_resamples": resamples, "ci_seed": seed,
        })
        rows.append(row)
    if baseline:
        base = {r["model"]: r for r in rows if r["strategy"] == baseline}
        for r in rows:
            b = base.get(r["model"])
            _add_deltas(r, b if b is not r else None, values, baseline, resamples, seed, level)
    rows.sort(key=lambda r: (KIND_ORDER[r["kind"]], r["model"], r["strategy"] != baseline,
                             r["strategy"]))
    return [{k: _nan_to_none(v) for k, v in r.items()} for r in rows]


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


# --- rendering --------------------------------------------------------------------------------


def _fmt(v: Any, digits: int = 2, sign: bool = False) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"
    return str(v)


def _label(r: dict[str, Any]) -> str:
    """The model as a table shows it (``engine.rundir.who``: rules by their rule, the
    simulator and people marked), and what is quoted from the paper says so."""
    if r.get("kind") == "paper":
        return r["model"] + " (paper)"
    return who(r["model"], r.get("kind", "model"))


def _interval(r: dict[str, Any], key: str, digits: int = 2, sep: str = ", ") -> str:
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    if lo is None or hi is None:
        return ""
    return f"[{_fmt(lo, digits)}{sep}{_fmt(hi, digits)}]"


def _star(r: dict[str, Any], m: str) -> str:
    return "*" if r.get(f"delta_{m}_sig") else ""


def _n(r: dict[str, Any]) -> str:
    n, inst = r.get("n"), r.get("instances")
    if n is None:
        return ""
    if inst in (None, n):
        return str(n)
    return f"{inst}×{n // inst}" if n % inst == 0 else f"{inst} ({n} traj.)"


def _cost(r: dict[str, Any]) -> list[str]:
    return [_fmt(r.get("answered"), 1), _fmt(r.get("calls")), _fmt(r.get("input_tokens"), 0),
            _fmt(r.get("output_tokens"), 0), _fmt(r.get("seconds"))]


def _has_deltas(rows: Sequence[dict[str, Any]]) -> bool:
    return any(r.get(f"delta_{m}") is not None for r in rows for m in METRIC_COLUMNS)


def _split(rows: Sequence[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    run = [r for r in rows if r.get("source") != "paper"]
    return run, [r for r in rows if r.get("source") == "paper"]


def _ci_note(rows: Sequence[dict[str, Any]]) -> str:
    r = next((r for r in rows if r.get("ci_resamples")), None)
    if r is None:
        return ""
    return (f"[low, high]: {100 * r['ci_level']:g} % percentile bootstrap over instances, "
            f"{r['ci_resamples']} resamples, seed {r['ci_seed']}")


def _delta_note(rows: Sequence[dict[str, Any]]) -> str:
    base = next((r["baseline"] for r in rows if r.get("baseline")), None)
    if base is None:
        return ""
    return (f"Δ: paired difference against {base} of the same model; "
            "* its paired-bootstrap interval excludes 0")


def render(rows: list[dict[str, Any]], fmt: str = "table", width: int | None = None) -> str | Any:
    """Rows as ``json``, ``csv``, ``md`` or ``latex`` text, or a rich renderable for ``table``.

    Rows whose ``source`` is ``paper`` (see ``paper.paper_rows``) are rendered as a separate
    block labelled "quoted from the paper, not measured". A table wider than ``width``
    leaves out cost columns (seconds, tokens, calls, answered %: in that order) until it fits,
    and says so in its caption.
    """
    if fmt == "json":
        return json.dumps([{k: _nan_to_none(v) for k, v in r.items()} for r in rows], indent=2)
    if fmt == "csv":
        return _csv(rows)
    if fmt == "md":
        return _md(rows)
    if fmt == "latex":
        return _latex(rows)
    if fmt == "table":
        return _rich(rows, width)
    raise ValueError(f"unknown format {fmt!r}; choose table, json, csv, md or latex")


def _csv(rows: list[dict[str, Any]]) -> str:
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(keys) or ["model", "strategy", "n", "answered",
                                                      *METRIC_COLUMNS])
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


# --- markdown -----------------------------------------------------------------------------


def _md(rows: list[dict[str, Any]]) -> str:
    run, quoted = _split(rows)
    deltas = _has_deltas(run)
    headers = ["model", "strategy", "n", *(HEADERS[m] for m in METRIC_COLUMNS)]
    if deltas:
        headers += [f"Δ {HEADERS[m]}" for m in METRIC_COLUMNS]
    headers += [HEADERS[c] for c in ("answered", "calls", "input_tokens", "output_tokens",
                                     "seconds")]

    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    def cells(r: dict[str, Any]) -> list[str]:
        out = [_label(r), r["strategy"], _n(r)]
        out += [f"{_fmt(r[m])} {_interval(r, m)}".strip() for m in METRIC_COLUMNS]
        if deltas:
            out += [f"{_fmt(r.get(f'delta_{m}'), sign=True)}{_star(r, m)} "
                    f"{_interval(r, f'delta_{m}')}".strip() for m in METRIC_COLUMNS]
        return out + _cost(r)

    lines = [line(headers), "|" + "---|" * 3 + "--:|" * (len(headers) - 3)]
    lines += [line(cells(r)) for r in run]
    if quoted:
        q_headers = ["model", "paper prompt", "as strategy", *(HEADERS[m] for m in METRIC_COLUMNS)]
        lines += ["", f"**{NOTE.capitalize()}** ({CITATION}, ×100; Δ as printed there, "
                      "against the basic prompt; no intervals were published)", "",
                  line(q_headers), "|" + "---|" * 3 + "--:|" * 4]
        for r in quoted:
            metric_cells = []
            for m in METRIC_COLUMNS:
                d = r.get(f"delta_{m}")
                metric_cells.append(_fmt(r[m]) + (f" ({_fmt(d, sign=True)})" if d is not None
                                                   else ""))
            lines.append(line([_label(r), r["paper_setting"], r["strategy"], *metric_cells]))
    return "\n".join(lines)


# --- LaTeX --------------------------------------------------------------------------------


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(c, c) for c in s)


def _latex(rows: list[dict[str, Any]]) -> str:
    run, quoted = _split(rows)
    arrows = {m: r"$\downarrow$" if m in LOWER_IS_BETTER else r"$\uparrow$" for m in METRIC_COLUMNS}
    headers = ["Model", "Strategy", "$n$", *(_tex(HEADERS[m]) + arrows[m] for m in METRIC_COLUMNS),
               r"Ans.\,\%", "Calls", "In tok.", "Out tok.", "s"]
    ncol = len(headers)

    def metric(r: dict[str, Any], m: str) -> str:
        cell = _fmt(r[m])
        if r.get(f"{m}_low") is not None:
            cell += r" {\scriptsize$" + _interval(r, m, 1, ",\\,") + "$}"
        d = r.get(f"delta_{m}")
        if d is not None:
            star = "^{*}" if r.get(f"delta_{m}_sig") else ""
            cell += r" {\scriptsize$" + _fmt(d, sign=True) + star + "$}"
        return cell

    def row(r: dict[str, Any]) -> str:
        cost = ["--" if c == "" else c for c in _cost(r)]
        cells = [_tex(_label(r)), _tex(r["strategy"]), _n(r).replace("×", r"$\times$") or "--",
                 *(metric(r, m) for m in METRIC_COLUMNS), *cost]
        return " & ".join(cells) + r" \\"

    notes = [n.replace("Δ", "Delta") for n in (_ci_note(run), _delta_note(run)) if n]
    lines = [f"% SceneFunRI, metrics x100. {'; '.join(notes)}." if notes else
             "% SceneFunRI, metrics x100.",
             "% Needs \\usepackage{booktabs}. Costs are per instance.",
             r"\begin{tabular}{ll" + "r" * (ncol - 2) + "}", r"\toprule",
             " & ".join(headers) + r" \\", r"\midrule"]
    lines += [row(r) for r in run]
    if quoted:
        lines += [r"\midrule",
                  rf"\multicolumn{{{ncol}}}{{l}}{{\emph{{{NOTE.capitalize()}}} "
                  rf"({_tex(CITATION)}; small signed numbers: change against the basic prompt, as printed)}} \\"]
        lines += [row(r) for r in quoted]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


# --- rich ---------------------------------------------------------------------------------


def _rich(rows: list[dict[str, Any]], width: int | None) -> Any:
    from rich import box
    from rich.console import Console, Group
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    run, quoted = _split(rows)
    deltas = _has_deltas(run)
    stars = {m: any(r.get(f"delta_{m}_sig") for r in run) for m in METRIC_COLUMNS}
    dwidth = {m: max((len(_fmt(r[f"delta_{m}"], sign=True)) for r in run
                      if r.get(f"delta_{m}") is not None), default=0) for m in METRIC_COLUMNS}

    def metric(r: dict[str, Any], m: str) -> Text:
        cell = Text(_fmt(r[m]))
        d = r.get(f"delta_{m}")
        if d is not None:
            sig = r.get(f"delta_{m}_sig")
            better = d < 0 if m in LOWER_IS_BETTER else d > 0
            style = ("bold green" if better else "bold red") if sig else (
                "green" if better and d else "red" if d else "dim")
            cell.append(" ")
            cell.append(_fmt(d, sign=True).rjust(dwidth[m]) + ("*" if sig else " " if stars[m]
                                                               else ""), style=style)
        if r.get(f"{m}_low") is not None:
            cell.append("\n" + _interval(r, m, 1, ","), style="dim")
        return cell

    # every cell first, then leave out cost columns (last first) until the table fits
    cols = ["model / strategy", "n", "ans%", *(HEADERS[m] for m in METRIC_COLUMNS), "calls",
            "tok i/o", "s/inst"]
    body: list[list[Any]] = []
    prev_kind, prev_model = None, None
    for r in run:
        if (r["model"], r["kind"]) != (prev_model, prev_kind):
            body.append([Text(_label(r), style="bold"), *[""] * (len(cols) - 1),
                         prev_kind is not None and r["kind"] != prev_kind])
        prev_kind, prev_model = r["kind"], r["model"]
        cost = _cost(r)
        body.append([Text("  " + r["strategy"]), _n(r), cost[0],
                     *(metric(r, m) for m in METRIC_COLUMNS), cost[1],
                     f"{cost[2]}/{cost[3]}", cost[4], False])

    sim = any(r.get("kind") == "sim" for r in run)
    title = "SceneFunRI (metrics ×100, 95 % intervals)"
    if sim:
        title += " · SIMULATED rows marked (sim)"
    notes = [n for n in (_ci_note(run), _delta_note(run)) if n]
    if deltas:
        notes.append("green better, red worse (Dist: lower is better)")
    if any(r.get("kind") == "rule" for r in run):
        notes.append("(rule): a fixed reference rule (baseline:...), no model")
    notes.append("per instance: calls, tokens in/out (tok i/o), seconds (s/inst)")

    ns = {_n(r) for r in run}

    def build(keep: list[int], dropped: list[str]) -> Table:
        left_out = [c for c in reversed(dropped) if c != "n"]
        cost_kept = {"calls", "tok i/o", "s/inst"} - set(dropped)
        caption = [n for n in notes if cost_kept or not n.startswith("per instance")] + (
            [f"every row: n = {next(iter(ns))}"] if "n" in dropped else []) + (
            [f"left out at this width: {', '.join(left_out)}; --format md has all"]
            if left_out else [])
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                      caption=Text("\n".join(caption)) if caption else None,
                      caption_justify="left")
        for j in keep:
            if j == 0:
                table.add_column(cols[j], overflow="fold")
            else:
                table.add_column(cols[j], justify="right", no_wrap=True)
        for row in body:
            if row[-1]:
                table.add_section()
            table.add_row(*(row[j] for j in keep))
        return table

    keep, dropped = list(range(len(cols))), []
    table = build(keep, dropped)
    if width is not None:
        console = Console(width=10_000)
        # s/inst, tok, calls, ans%, then n where every row has the same n
        for j in (len(cols) - 1, len(cols) - 2, len(cols) - 3, 2, *([1] if len(ns) == 1 else [])):
            if Measurement.get(console, console.options, table).maximum <= width:
                break
            keep.remove(j)
            dropped.append(cols[j])
            table = build(keep, dropped)
    if not quoted:
        return table

    paper = Table(title=f"{NOTE.capitalize()}: {CITATION} (×100)", box=box.SIMPLE_HEAD,
                  pad_edge=False, title_style="bold magenta",
                  caption="in parentheses: change against the basic prompt, as printed; "
                          "no intervals were published", caption_justify="left")
    paper.add_column("model (paper)")
    paper.add_column("prompt")
    paper.add_column("as strategy", style="dim")
    for m in METRIC_COLUMNS:
        paper.add_column(HEADERS[m], justify="right", no_wrap=True)
    prev_table = None
    for r in quoted:
        if prev_table is not None and r["table"] != prev_table:
            paper.add_section()
        prev_table = r["table"]
        cells = []
        for m in METRIC_COLUMNS:
            cell = Text(_fmt(r[m]))
            d = r.get(f"delta_{m}")
            if d is not None:
                better = d < 0 if m in LOWER_IS_BETTER else d > 0
                cell.append(f" ({_fmt(d, sign=True)})",
                            style=("green" if better else "red") if d else "dim")
            cells.append(cell)
        paper.add_row(textwrap.shorten(r["model"], 24), r["paper_setting"], r["strategy"], *cells)
    return Group(table, paper)


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
    from .dataset import DatasetError, load_dataset

    found: dict[str, Any] = {}
    records: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
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
            if rec["instance_id"] not in wanted or rec.get("sample", 0) != sample:
                continue
            if models and rec["model"] not in models:
                continue
            if strategies and rec["strategy"] not in strategies:
                continue
            key = (rec["model"], rec["strategy"])
            records[key][rec["instance_id"]] = rec
            kinds[key] = {"model": rec["model"], "strategy": rec["strategy"],
                          "kind": kind_of(rec["backend"], rec.get("simulated", False))}
    missing = [i for i in instance_ids if i not in found]
    if missing:
        raise RunDirError(f"unknown instance id(s) {', '.join(missing)}: not in the runs' datasets")
    order = sorted(kinds, key=lambda k: (KIND_ORDER[kinds[k]["kind"]], k[0], k[1]))
    rows = [GridRow(label=f"{_label(kinds[k])}\n{k[1]}",
                    cells=[_grid_cell(records[k].get(i)) for i in instance_ids]) for k in order]
    return [found[i] for i in instance_ids], rows


def _grid_cell(rec: dict[str, Any] | None) -> Any:
    if rec is None:
        return None
    m = rec.get("metrics") or {}
    caption = " · ".join(f"{name} {100 * m[key]:.1f}" for name, key in (("IoU", "iou"),
                                                                            ("Dist", "dist"))
                         if m.get(key) is not None)
    if rec["status"] == "answered" and rec.get("prediction"):
        return GridCell(box=rec["prediction"], caption=caption)
    err = rec.get("error") or {}
    return GridCell(note="unanswered" + (f" ({err['kind']})" if err.get("kind") else ""),
                    caption=caption)
