"""The power simulation's report: one row per comparison and model, and its table
(:func:`power_report` runs :func:`.power.simulate` and summarises it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..sim.respondent import DirectorKnobs
from ..study.design import Design
from .power import METHODS, NO_ESTIMATE, PowerResult, Scenes, simulate

# --- the report ----------------------------------------------------------------------------------


def summarize(result: PowerResult) -> list[dict[str, Any]]:
    """One dict per comparison and model (see the module docstring for the fields)."""
    d = result.design
    out = []
    for i, cell in enumerate(result.cells):
        runs = result.runs[:, i, :]
        ok = runs[:, 4] != NO_ESTIMATE
        n_ok = int(ok.sum())
        diff, low, high = runs[ok, 0], runs[ok, 1], runs[ok, 2]
        t0, t1, truth = (float(v) for v in result.truth[i])
        excl = np.zeros(result.reps, dtype=bool)
        excl[ok] = (low > 0) | (high < 0)
        # in a family: the interval excludes zero and the change survives BH
        declared = excl & (result.adjusted[:, i] <= d.q) if cell.group is not None else excl
        covered = (low <= truth) & (truth <= high)
        cov = float(covered.mean()) if n_ok else math.nan
        c = cell.comparison
        row: dict[str, Any] = {
            "index": cell.index, "comparison": c.title, "model": cell.model, "batch": c.batch,
            "base": c.base, "variant": c.variant, "measure": c.measure, "where": c.where,
            "set": c.set, "family": cell.group, "margin": c.margin,
            "scenes": sum(result.n_scenes[s] for s in cell.sets), "samples": d.samples,
            "true_base": t0, "true_variant": t1, "true_diff": truth,
            "mean_diff": float(diff.mean()) if n_ok else math.nan,
            "bias": float(diff.mean() - truth) if n_ok else math.nan,
            "power": float(declared.mean()), "excludes_zero": float(excl.mean()),
            "coverage": cov,
            "coverage_se": math.sqrt(cov * (1 - cov) / n_ok) if n_ok else math.nan,
            "mean_width": float((high - low).mean()) if n_ok else math.nan,
            "within_margin": (float(((-d.margin <= low) & (high <= d.margin)).sum() / result.reps)
                              if c.margin else None),
            "methods": {m: int((runs[:, 4] == k).sum()) for k, m in enumerate(METHODS)
                        if (runs[:, 4] == k).any()},
            "reps": result.reps, "estimated": n_ok,
        }
        out.append(row)
    return out


def power_report(design: Design, knobs: DirectorKnobs | Mapping[str, Any] | None = None,
                 effects: Mapping[str, float] | None = None, reps: int = 200, seed: int = 0,
                 models: Mapping[str, Any] | Sequence[str] | None = None, *,
                 scenes: Scenes = "resample", pool_size: int | None = None,
                 workers: int = 1, exact: bool = False) -> list[dict[str, Any]]:
    """:func:`simulate` then :func:`summarize`: one dict per comparison and model."""
    return summarize(simulate(design, knobs, effects, reps, seed, models, scenes=scenes,
                              pool_size=pool_size, workers=workers, exact=exact))


def _pts(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def render(report: list[dict[str, Any]], title: str | None = None):
    """A rich Table of :func:`power_report`'s rows."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    reps = report[0]["reps"] if report else 0
    # no vertical rules: at 80 columns the headings fit whole instead of "compa…"
    table = Table(title=title or f"Simulated power and coverage ({reps} studies)",
                  caption="points; power: the change is declared (interval excludes zero and, "
                          "in a family, survives BH); coverage: 95% intervals holding the true "
                          "difference, ± its Monte Carlo SE", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0),
                  pad_edge=False)
    many = len({r["model"] for r in report}) > 1
    for col, just in (("#", "right"), ("comparison", "left"), *((("model", "left"),) if many else ()),
                      ("family", "left"), ("G×S", "right"), ("true", "right"),
                      ("mean est.", "right"), ("power", "right"), ("coverage", "right"),
                      ("width", "right"), ("methods", "left")):
        # a heading never cut: each column at least as wide as its longest word
        table.add_column(col, justify=just,  # type: ignore[arg-type]
                         min_width=max(len(w) for w in col.split()), overflow="fold")
    for r in report:
        fam = r["family"] or ("margin" if r["margin"] else "–")
        power = f"{100 * r['power']:.0f}%"
        if r["margin"]:
            power += f" (within ±: {100 * r['within_margin']:.0f}%)"
        cov = ("–" if math.isnan(r["coverage"]) else
               f"{100 * r['coverage']:.1f} ± {100 * r['coverage_se']:.1f}")
        methods = ", ".join(f"{m} {n}" for m, n in r["methods"].items())
        cells = [str(r["index"] + 1), escape(r["comparison"]),
                 *((escape(r["model"]),) if many else ()), escape(fam),
                 f"{r['scenes']}×{r['samples']}", _pts(r["true_diff"], True),
                 _pts(r["mean_diff"], True), power, cov, _pts(r["mean_width"]), methods]
        table.add_row(*cells)
    return table
