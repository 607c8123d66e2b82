"""The power simulation's report: one row per comparison and model, and its table
(:func:`power_report` runs :func:`.power.simulate` and summarises it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...table_fit import fold, least_width, measure, share
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


#: a space inside a cell that must not break: ``± 0.0``, ``gee 10``
_KEEP = "\u00a0"
#: how each column folds: a label after its pieces and hyphens (``table_fit.fold``), words at
#: their spaces, a number never
_KIND = {"#": "number", "comparison": "label", "model": "label", "family": "label",
         "G×S": "number", "true": "number", "mean est.": "number", "power": "words",
         "coverage": "words", "width": "number", "methods": "words"}
#: left out, in this order, where the others would not fit without breaking a word
_DROP = ("methods", "G×S", "width")


def render(report: list[dict[str, Any]], title: str | None = None, width: int | None = None):
    """A rich Table of :func:`power_report`'s rows, at most ``width`` columns wide: a cell
    folds at its spaces and after its hyphens, never inside a word, and a coverage keeps its
    ``± SE`` whole (``100.0`` / ``± 0.0``); the labels narrow first, the numbers last, and
    where even that is too wide the columns of :data:`_DROP` are left out (the caption says
    which)."""
    from rich.markup import escape

    reps = report[0]["reps"] if report else 0
    many = len({r["model"] for r in report}) > 1
    rows = [_cells(r) for r in report]
    left_out: list[str] = []
    for drop in (None, *_DROP):
        left_out += [drop] if drop else []
        cols = [c for c in _KIND if (many or c != "model") and c not in left_out]
        # a heading folds at its spaces, never inside a word
        heads = [max(len(w) for w in c.split()) for c in cols]
        full = [max([h] + [len(r[c]) for r in rows]) for c, h in zip(cols, heads, strict=True)]
        least = [max([h] + [_least(c, r[c]) for r in rows]) for c, h in zip(cols, heads, strict=True)]
        room = (width or 10**6) - (measure(_frame(cols, [1] * len(cols))) - len(cols))
        if sum(least) <= room:
            break
    # the text narrows first; a coverage goes over two lines only where that is not enough
    soft = [_KIND[c] != "number" and c != "coverage" for c in cols]
    widths = share(full, [m if x else f for m, f, x in zip(least, full, soft, strict=True)], room)
    widths = share(widths, least, room)
    note = f" Left out at {width} columns: {', '.join(left_out)} (--json has them)." \
        if left_out else ""
    table = _frame(cols, widths, title or f"Simulated power and coverage ({reps} studies)", note)
    for r in rows:
        table.add_row(*(escape(_fold(c, r[c], w)) for c, w in zip(cols, widths, strict=True)))
    return table


def _least(col: str, cell: str) -> int:
    """The narrowest ``col`` may be for ``cell`` without breaking a word."""
    kind = _KIND[col]
    return least_width(cell) if kind == "label" else \
        max(len(a) for a in cell.split(" ")) if kind == "words" else len(cell)


def _fold(col: str, cell: str, width: int) -> str:
    """``cell`` on lines of at most ``width`` (see :data:`_KIND`), its kept spaces spaces."""
    kind = _KIND[col]
    if kind == "label":
        return "\n".join(fold(cell, width))
    lines: list[str] = []
    for word in cell.split(" ") if kind == "words" else [cell]:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines).replace(_KEEP, " ")


def _frame(cols: Sequence[str], widths: Sequence[int], title: str | None = None,
           note: str = ""):
    """The table's columns at ``widths``, headings folded at their spaces, no rows."""
    import textwrap

    from rich import box
    from rich.table import Table

    # no vertical rules: at 80 columns the headings fit whole instead of "compa…"
    table = Table(title=title, caption="points; power: the change is declared (interval "
                  "excludes zero and, in a family, survives BH); coverage: 95% intervals "
                  "holding the true difference, ± its Monte Carlo SE." + note,
                  box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for col, w in zip(cols, widths, strict=True):
        table.add_column("\n".join(textwrap.wrap(col, w)), width=w, no_wrap=True,
                         justify="left" if _KIND[col] in ("label",) or col == "methods"
                         else "right")
    return table


def _cells(r: dict[str, Any]) -> dict[str, str]:
    """A row's cells by column, :data:`_KEEP` where a space must not break."""
    power = f"{100 * r['power']:.0f}%"
    if r["margin"]:
        power += f" (within ±:{_KEEP}{100 * r['within_margin']:.0f}%)"
    cov = ("–" if math.isnan(r["coverage"]) else
           f"{100 * r['coverage']:.1f} ±{_KEEP}{100 * r['coverage_se']:.1f}")
    return {"#": str(r["index"] + 1), "comparison": r["comparison"], "model": r["model"],
            "family": r["family"] or ("margin" if r["margin"] else "–"),
            "G×S": f"{r['scenes']}×{r['samples']}", "true": _pts(r["true_diff"], True),
            "mean est.": _pts(r["mean_diff"], True), "power": power, "coverage": cov,
            "width": _pts(r["mean_width"]),
            "methods": ", ".join(f"{m}{_KEEP}{n}" for m, n in r["methods"].items())}
