"""A Director study's numbers and cells as the reader sees them, shared by every format.

Rates and changes are shown in percent and points to one decimal, an exact half away from
zero; an interval end of a change that rounds to zero at one decimal is given to two places
(the rule of the paper's Table 2). An interval cut at the range of a difference of shares
(``stats.compare``, "The rule") ends in ``‡``. A model a simulator answered for is shown as
``NAME (sim)`` (:meth:`Analysis.label`). ``rate_tables``, ``rate_rows`` and ``change_cells``
give the cells every format (the tables, the paper's numbered layouts and the HTML export)
shares; ``md_table`` and ``tex_tabular`` lay them out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import cast

from ....engine.rundir import serving_lines
from ..study.design import Comparison as DesignComparison
from .analyze import (
    MARGIN_GROUP,
    MEASURE_DESCRIPTIONS,
    MEASURE_NAMES,
    MEASURES,
    NO_FAMILY,
    NOT_ASKED,
    Analysis,
    Change,
    Rate,
)

# --- numbers as shown -------------------------------------------------------------------------


def _dec100(x: float, places: int) -> Decimal:
    d = Decimal(repr(float(x))) * 100
    return d.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _sgn(d: Decimal, signed: bool) -> str:
    if d == 0:
        return str(abs(d))
    return ("-" if d < 0 else "+" if signed else "") + str(abs(d))


def pct(x: float | None, signed: bool = False) -> str:
    """A fraction in percent or points, to one decimal (an exact half away from zero)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return _sgn(_dec100(x, 1), signed)


def end(x: float) -> str:
    """An interval end in points: one decimal, or two where it rounds to zero at one."""
    d = _dec100(x, 1)
    return _sgn(_dec100(x, 2) if d == 0 else d, False)


def interval(low: float, high: float, sep: str = ", ", ends: Callable[[float], str] = end) -> str:
    return f"[{ends(low)}{sep}{ends(high)}]"


def pval(p: float | None) -> str:
    if p is None or math.isnan(p):
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def what(c: DesignComparison) -> str:
    """The contrast a comparison makes, spelled out."""
    s = f"{c.variant} − {c.base}: {c.measure}"
    if c.where != "all":
        s += f" [{c.where}]"
    if c.set is not None:
        s += f" (set {c.set})"
    return s + f"; batch {c.batch}"


def group_title(analysis: Analysis, group: str, changes: Sequence[Change]) -> str:
    if group == MARGIN_GROUP:
        return (f"Margin tests: is the interval within ±{pct(analysis.margin)} points? "
                "(outside the families, not marked)")
    if group == NO_FAMILY:
        return "Comparisons in no family (not corrected, not marked)"
    done, asked = analysis.family_sizes().get(group, (sum(c.ok for c in changes), 0))
    return (f"Family {group}: Benjamini-Hochberg at q = {analysis.q:g} over {done} comparisons "
            f"(the design asks {asked} of these models)")


#: What the simulated replies are, wherever they are shown.
SIMULATED = ("SIMULATED: the replies of {models} come from the offline simulator (shown as "
             "\"(sim)\"), not from those models; they are no finding about any model.")


def heading(analysis: Analysis) -> list[str]:
    """The lines above every rendering: the study, the simulated replies, the families."""
    d = analysis.design
    first = (f"Director study {d.name}: {analysis.n_replies} replies, "
             f"{len(analysis.models)} model(s)")
    if analysis.dropped_apparent:
        first += "; scenes with the apparent-size flag left out"
    # the paper's check, "no reply stopped at a length limit", stated either way
    first += (f"; {analysis.length_stops} stopped at a length limit" if analysis.length_stops
              else "; none stopped at a length limit")
    lines = [first]
    lines += serving_lines(analysis.serving, analysis.dropped)
    if analysis.simulated:
        lines.append(SIMULATED.format(models=", ".join(analysis.simulated)))
    sizes = analysis.family_sizes()
    if sizes:
        lines.append("Benjamini-Hochberg families, comparisons estimated of those the design asks "
                     "of these models: " + ", ".join(f"{g} {done} of {asked}"
                                                    for g, (done, asked) in sizes.items()))
    return lines


def legend(analysis: Analysis) -> list[str]:
    ms = _measures_of(analysis.rates)
    return [
        "Measures: " + "; ".join(f"{MEASURE_NAMES[m]}: {MEASURE_DESCRIPTIONS[m]}" for m in ms)
        + ".",
        "Changes: variant minus base, in points, with 95% intervals (GEE with scenes as clusters; "
        "paired or bound estimator where a condition has no event or every scene agrees).",
        f"∗: an increase or a decrease (the interval excludes zero and survives Benjamini-Hochberg "
        f"at q = {analysis.q:g} within its family); †: the interval excludes zero but fails the "
        "correction.",
        "Interval ends that round to zero are given to two places; ‡: the interval reached past "
        "±100 points and is cut there (stats.compare); –: not asked.",
        f"Rates: % of answered replies the measure applies to, with 95% percentile intervals over "
        f"{analysis.n_boot} scene resamples (seed {analysis.seed}).",
    ]


_MARK = {"*": "∗", "†": "†", "": ""}
_VERDICT = {True: "within", False: "not within", None: ""}


def _measures_of(rates: Sequence[Rate]) -> list[str]:
    present = {m for r in rates for m in r.shares}
    return [m for m in MEASURES if m in present]


@dataclass(frozen=True)
class RateTable:
    """The rates of one (batch, set): a column per condition, per model a row for the answer
    rate and one per measure that applies."""

    title: str
    conditions: list[str]
    models: list[str]
    measures: list[str]
    cell: dict[tuple[str, str], Rate]  # (model, condition)
    labels: dict[str, str]  # model -> as shown ("(sim)" after a simulated one)


def rate_tables(analysis: Analysis) -> list[RateTable]:
    by: dict[tuple[str, str], list[Rate]] = {}
    for r in analysis.rates:
        by.setdefault((r.batch, r.set), []).append(r)
    sets_of: dict[str, int] = defaultdict(int)
    for batch, _ in by:
        sets_of[batch] += 1
    out = []
    for (batch, set_), rates in by.items():
        try:
            b = analysis.design.batch(batch)
            note, order = b.note, b.conditions
        except KeyError:
            note, order = "not in the design", []
        title = (f"Rates (% of answered replies), batch {batch}"
                 + (f", set {set_}" if sets_of[batch] > 1 else "") + (f": {note}" if note else ""))
        conds = sorted(dict.fromkeys(r.condition for r in rates),
                       key=lambda c: (order.index(c) if c in order else len(order), c))
        models = list(dict.fromkeys(r.model for r in rates))
        out.append(RateTable(title, conds, models, _measures_of(rates),
                             {(r.model, r.condition): r for r in rates},
                             {m: analysis.label(m) for m in models}))
    return out


def rate_rows(t: RateTable) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """(model, row label, cells) for each row of a rates table; a cell is (value, interval,
    note), ("–", "", "") where the measure does not apply or the condition was not asked.
    Show the model as ``t.labels[model]``."""
    rows = []
    for model in t.models:
        answered = []
        for cond in t.conditions:
            r = t.cell.get((model, cond))
            answered.append(("–", "", "") if r is None else
                            (pct(r.answer_rate), "", f"{r.answered}/{r.n}"))
        rows.append((model, "answered", answered))
        for m in t.measures:
            cells = []
            for cond in t.conditions:
                r = t.cell.get((model, cond))
                sh = r.shares.get(m) if r is not None else None
                if sh is None or r is None:
                    cells.append(("–", "", ""))
                else:
                    cells.append((pct(sh.share), interval(sh.low, sh.high, ends=pct),
                                  "" if sh.n == r.answered else f"n={sh.n}"))
            if any(c[0] != "–" for c in cells):
                rows.append((model, MEASURE_NAMES[m], cells))
    return rows


def cell_text(cell: tuple[str, str, str]) -> str:
    value, ci, note = cell
    return " ".join(x for x in (value, ci, f"({note})" if note else "") if x)


def change_cells(c: Change) -> dict[str, str]:
    """What a change's row shows; "–" for not asked, the status where nothing was estimated."""
    blank = dict.fromkeys(("diff", "interval", "mark", "p", "p_adj", "method", "n", "G",
                           "verdict"), "")
    if c.status == NOT_ASKED:
        return {**blank, "diff": "–"}
    if not c.ok:
        return {**blank, "diff": c.status}
    cut = "‡" if c.raw is not None and c.raw.clipped else ""
    low, high = cast(float, c.low), cast(float, c.high)  # an estimated change has both
    return {"diff": pct(c.diff, signed=True), "interval": interval(low, high) + cut,
            "mark": _MARK[c.mark], "p": pval(c.p), "p_adj": pval(c.p_adjusted),
            "method": c.method or "", "n": str(c.n), "G": str(c.G),
            "verdict": _VERDICT[c.equivalent]}



# --- layouts ------------------------------------------------------------------------------


def md_line(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def md_table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int) -> list[str]:
    return [md_line(headers), "|" + "---|" * left + "--:|" * (len(headers) - left),
            *(md_line(r) for r in rows)]



# --- LaTeX ----------------------------------------------------------------------------------

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
        "−": "$-$", "–": "--", "—": "---", "±": r"$\pm$", "×": r"$\times$", "∗": "$^{*}$",
        "†": r"\dag{}", "‡": r"\ddag{}", "•": r"$\bullet$", "§": r"\S{}", "“": "``", "”": "''", "‘": "`", "’": "'", "≥": r"$\geq$", "≤": r"$\leq$"}


def tex(s: str) -> str:
    """Text escaped for LaTeX (specials, and the few non-ASCII signs the tables use)."""
    return "".join(_TEX.get(ch, ch) for ch in str(s))


def tex_num(s: str) -> str:
    """A number or interval as text → math mode (a proper minus sign); "–" → "--"."""
    if s == "–":
        return "--"
    if not any(ch.isdigit() for ch in s):
        return tex(s)
    cut = s.endswith("‡")  # an interval cut at ±100 points: the mark outside math mode
    return f"${s.removesuffix('‡')}$" + (r"\ddag{}" if cut else "")


def tex_tabular(headers: Sequence[str], rows: Iterable[Sequence[str]], cols: str,
                 caption: str) -> list[str]:
    """A booktabs tabular; a row of one cell is written as it is (``\\addlinespace``)."""
    return [f"% {tex(caption)}", r"\begin{tabular}{" + cols + "}",
            r"\toprule", " & ".join(headers) + r" \\", r"\midrule",
            *(r[0] if len(r) == 1 else " & ".join(r) + r" \\" for r in rows), r"\bottomrule",
            r"\end{tabular}", ""]

