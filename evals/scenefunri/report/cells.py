"""The cells of a SceneFunRI comparison table, shared by every format (and the HTML export).

A row is a dict from ``report.summarize`` (or ``paper.paper_rows``); these functions turn its
numbers into the text a table shows: ``model_label`` the model as shown (``(sim)``, ``(rule)``,
``(paper)``), ``n_cell`` the trajectories (``72×2``: 72 instances, 2 samples each), the notes
under a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ....engine.rundir import serving_lines, who
from ... import costs

METRIC_COLUMNS = ("cacc75", "cacc50", "miou", "dist")
HEADERS = {
    "model": "model", "strategy": "strategy", "n": "n", "answered": "answered %",
    "cacc75": "CAcc@75", "cacc50": "CAcc@50", "miou": "mIoU", "dist": "Dist",
    "calls": "calls/inst", "input_tokens": "in tok/inst", "output_tokens": "out tok/inst",
    "seconds": "s/inst", "cost_usd": "USD/inst", "cost_total_usd": "USD total",
}
LOWER_IS_BETTER = {"dist"}
KIND_ORDER = {"model": 0, "human": 1, "sim": 2, "rule": 3, "paper": 4}
def nan_to_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def fmt_num(v: Any, digits: int = 2, sign: bool = False) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"
    return str(v)


def model_label(r: dict[str, Any]) -> str:
    """The model as a table shows it (``engine.rundir.who``: rules by their rule, the
    simulator and people marked), and what is quoted from the paper says so."""
    if r.get("kind") == "paper":
        return r["model"] + " (paper)"
    return who(r["model"], r.get("kind", "model"))


def interval_text(r: dict[str, Any], key: str, digits: int = 2, sep: str = ", ") -> str:
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    if lo is None or hi is None:
        return ""
    return f"[{fmt_num(lo, digits)}{sep}{fmt_num(hi, digits)}]"


def delta_star(r: dict[str, Any], m: str) -> str:
    return "*" if r.get(f"delta_{m}_sig") else ""


def n_cell(r: dict[str, Any]) -> str:
    n, inst = r.get("n"), r.get("instances")
    if n is None:
        return ""
    if inst in (None, n):
        return str(n)
    return f"{inst}×{n // inst}" if n % inst == 0 else f"{inst} ({n} traj.)"


def cost_cells(r: dict[str, Any]) -> list[str]:
    return [fmt_num(r.get("answered"), 1), fmt_num(r.get("calls")), fmt_num(r.get("input_tokens"), 0),
            fmt_num(r.get("output_tokens"), 0), fmt_num(r.get("seconds"))]


def has_costs(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether the table has a cost column: some row is a real model's (``summarize``
    with a price table)."""
    return any(r.get("costed") for r in rows)


def usd_text(r: dict[str, Any], key: str = "cost_usd") -> str:
    """A row's cost in US dollars: empty for the simulator, rules and people, ``no price``
    for a model without one (never 0)."""
    if not r.get("costed"):
        return ""
    return costs.NO_PRICE if r.get(key) is None else costs.usd(r[key])


def cost_note(rows: Sequence[dict[str, Any]]) -> str:
    """The legend of the cost columns: the prices and their dates, the models without."""
    return costs.legend(rows)


def has_deltas(rows: Sequence[dict[str, Any]]) -> bool:
    return any(r.get(f"delta_{m}") is not None for r in rows for m in METRIC_COLUMNS)


def split_paper(rows: Sequence[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    run = [r for r in rows if r.get("source") != "paper"]
    return run, [r for r in rows if r.get("source") == "paper"]


def ci_note(rows: Sequence[dict[str, Any]]) -> str:
    r = next((r for r in rows if r.get("ci_resamples")), None)
    if r is None:
        return ""
    return (f"[low, high]: {100 * r['ci_level']:g} % percentile bootstrap over instances, "
            f"{r['ci_resamples']} resamples, seed {r['ci_seed']}")


def delta_note(rows: Sequence[dict[str, Any]]) -> str:
    base = next((r["baseline"] for r in rows if r.get("baseline")), None)
    if base is None:
        return ""
    return (f"Δ: paired difference against {base} of the same model; "
            "* its paired-bootstrap interval excludes 0")


def serving_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The notes under a table that say how each model was asked: its image settings, and
    the parameters its provider rejected and unseen dropped (``Reliable`` records them)."""
    seen: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    for r in rows:
        if r.get("serving"):
            seen.setdefault(r["model"], r["serving"])
        if r.get("dropped"):
            dropped.setdefault(r["model"], r["dropped"])
    return serving_lines(seen, dropped)


def pool_note(rows: Sequence[dict[str, Any]]) -> str:
    """Which rows pool one (model, strategy) from several runs (``compare --pool``)."""
    by: dict[tuple[str, ...], list[str]] = {}
    for r in rows:
        if len(r.get("runs") or ()) > 1:
            by.setdefault(tuple(r["runs"]), []).append(f"{r['model']} {r['strategy']}")
    parts = []
    for runs, names in by.items():
        which = ("every row" if len(names) == len(rows) else
                 ", ".join(names) if len(names) <= 3 else f"{len(names)} rows")
        parts.append(f"{which} from {' + '.join(runs)}")
    return ("pooled (--pool): " + "; ".join(parts) + " (n counts every run's trajectories; "
            "an instance in several runs counts as several samples)") if parts else ""
