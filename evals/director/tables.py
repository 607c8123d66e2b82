"""A Director study analysis as the reader sees it: numbers, tables, four formats.

``render(analysis, fmt)``: ``table`` (rich), ``json`` (every field), ``md`` (GitHub tables)
or ``latex`` (booktabs). Rates and changes are shown in percent and points to one decimal,
an exact half away from zero; an interval end of a change that rounds to zero at one decimal
is given to two places (the rule of the paper's Table 2). ``rate_tables``, ``rate_rows`` and
``change_cells`` give the cells every format (and the HTML export) shares.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from .analyze import (
    MARGIN_GROUP,
    MEASURE_DESCRIPTIONS,
    MEASURE_NAMES,
    MEASURES,
    NO_FAMILY,
    NOT_ASKED,
    PLACES,
    Analysis,
    Change,
    Rate,
)
from .study import Comparison as DesignComparison

FORMATS = ("table", "json", "md", "latex")


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
    k = sum(c.ok for c in changes)
    return f"Family {group}: Benjamini-Hochberg at q = {analysis.q:g} over {k} comparisons"


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
        "Interval ends that round to zero are given to two places; –: not asked.",
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
        # rows by the model as shown (a person marked), so every renderer shows the same
        models = list(dict.fromkeys(analysis.label(r.model) for r in rates))
        out.append(RateTable(title, conds, models, _measures_of(rates),
                              {(analysis.label(r.model), r.condition): r for r in rates}))
    return out


def rate_rows(t: RateTable) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """(model, row label, cells) for each row of a rates table; a cell is (value, interval,
    note), ("–", "", "") where the measure does not apply or the condition was not asked."""
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
                if sh is None:
                    cells.append(("–", "", ""))
                else:
                    cells.append((pct(sh.share), interval(sh.low, sh.high, ends=pct),
                                  "" if sh.n == r.answered else f"n={sh.n}"))
            if any(c[0] != "–" for c in cells):
                rows.append((model, MEASURE_NAMES[m], cells))
    return rows


def _cell_text(cell: tuple[str, str, str]) -> str:
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
    return {"diff": pct(c.diff, signed=True), "interval": interval(c.low, c.high),
            "mark": _MARK[c.mark], "p": pval(c.p), "p_adj": pval(c.p_adjusted),
            "method": c.method or "", "n": str(c.n), "G": str(c.G),
            "verdict": _VERDICT[c.equivalent]}


# --- rendering --------------------------------------------------------------------------------


#: Console columns from which the changes tables show every column.
WIDE = 120


def render(analysis: Analysis, fmt: str = "table", width: int | None = None) -> Any:
    """``analysis`` as ``json``, ``md`` or ``latex`` text, or a rich renderable for ``table``
    (narrower than :data:`WIDE` columns, the changes tables leave out method, n and scenes)."""
    if fmt == "json":
        return json.dumps(to_dict(analysis), indent=2, ensure_ascii=False)
    if fmt == "md":
        return _md(analysis)
    if fmt == "latex":
        return _latex(analysis)
    if fmt == "table":
        return _rich(analysis, compact=width is not None and width < WIDE)
    raise ValueError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")


def _num(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) else x
    return x


def to_dict(analysis: Analysis) -> dict[str, Any]:
    """Every field, machine-readable: rates and differences as fractions (floats)."""
    d = analysis.design
    rates = [{"model": r.model, "batch": r.batch, "set": r.set, "condition": r.condition,
              "n": r.n, "answered": r.answered, "answer_rate": float(r.answer_rate),
              "measures": {m: {"n": s.n, "share": float(s.share), "low": float(s.low),
                               "high": float(s.high)} for m, s in r.shares.items()}}
             for r in analysis.rates]
    changes = []
    for c in analysis.changes:
        k = c.comparison
        raw = c.raw
        changes.append({
            "comparison": c.index, "title": k.title, "label": k.label, "batch": k.batch,
            "base": k.base, "variant": k.variant, "measure": k.measure, "where": k.where,
            "set": k.set, "family": k.family, "margin_test": k.margin, "group": c.group,
            "model": c.model, "status": c.status, "note": c.note,
            "diff": _num(c.diff), "low": _num(c.low), "high": _num(c.high),
            "share_base": _num(c.share0), "share_variant": _num(c.share1),
            "p": _num(c.p), "p_adjusted": _num(c.p_adjusted), "mark": c.mark,
            "method": c.method, "n": c.n, "G": c.G,
            "se": _num(raw.se) if raw and raw.se is not None else None,
            "df": raw.df if raw else None,
            "excludes_zero": raw.excludes_zero if raw else None,
            "equivalent": c.equivalent,
        })
    return {
        "design": {"name": d.name, "q": float(d.q), "margin": float(d.margin),
                   "samples": d.samples, "seed": d.seed},
        "n_replies": analysis.n_replies, "n_boot": analysis.n_boot, "seed": analysis.seed,
        "interval": 0.95, "places": PLACES, "models": analysis.models,
        "humans": sorted(analysis.humans),
        "families": {g: sum(c.ok for c in cs) for g, cs in analysis.groups()
                     if g not in (MARGIN_GROUP, NO_FAMILY)},
        "rates": rates, "changes": changes,
    }


# --- markdown -------------------------------------------------------------------------------


def _md_line(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int) -> list[str]:
    return [_md_line(headers), "|" + "---|" * left + "--:|" * (len(headers) - left),
            *(_md_line(r) for r in rows)]


def _comparison_text(c: DesignComparison) -> str:
    return f"{c.label} ({what(c)})" if c.label else what(c)


def _md(analysis: Analysis) -> str:
    d = analysis.design
    out = [f"## Director study `{d.name}`: {analysis.n_replies} replies, "
           f"{len(analysis.models)} model(s)", ""]
    for t in rate_tables(analysis):
        body, last = [], None
        for model, label, cells in rate_rows(t):
            body.append([model if model != last else "", label, *map(_cell_text, cells)])
            last = model
        out += [f"### {t.title}", "", *_md_table(["model", "", *t.conditions], body, 2), ""]
    for group, changes in analysis.groups():
        margin = group == MARGIN_GROUP
        headers = ["comparison", "model", "change (points)", "95% interval",
                   *(["within margin"] if margin else ["mark", "p", "adj. p"]),
                   "method", "n", "scenes"]
        body = []
        last = None
        for c in changes:
            v = change_cells(c)
            text = _comparison_text(c.comparison) if c.index != last else ""
            last = c.index
            body.append([text, analysis.label(c.model), v["diff"], v["interval"],
                         *([v["verdict"]] if margin else [v["mark"], v["p"], v["p_adj"]]),
                         v["method"], v["n"], v["G"]])
        out += [f"### {group_title(analysis, group, changes)}", "",
                *_md_table(headers, body, 2), ""]
    out += [f"_{line}_" for line in legend(analysis)]
    return "\n".join(out) + "\n"


# --- LaTeX ----------------------------------------------------------------------------------

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
        "−": "$-$", "–": "--", "—": "---", "±": r"$\pm$", "×": r"$\times$", "∗": "$^{*}$",
        "†": r"\dag{}", "§": r"\S{}", "“": "``", "”": "''", "‘": "`", "’": "'", "≥": r"$\geq$", "≤": r"$\leq$"}


def tex(s: str) -> str:
    """Text escaped for LaTeX (specials, and the few non-ASCII signs the tables use)."""
    return "".join(_TEX.get(ch, ch) for ch in str(s))


def _tex_num(s: str) -> str:
    """A number or interval as text → math mode (a proper minus sign); "–" → "--"."""
    if s == "–":
        return "--"
    if not any(ch.isdigit() for ch in s):
        return tex(s)
    return f"${s}$"


def _tex_tabular(headers: Sequence[str], rows: Iterable[Sequence[str]], cols: str,
                 caption: str) -> list[str]:
    """A booktabs tabular; a row of one cell is written as it is (``\\addlinespace``)."""
    return [f"% {tex(caption)}", r"\begin{tabular}{" + cols + "}",
            r"\toprule", " & ".join(headers) + r" \\", r"\midrule",
            *(r[0] if len(r) == 1 else " & ".join(r) + r" \\" for r in rows), r"\bottomrule",
            r"\end{tabular}", ""]


def _latex(analysis: Analysis) -> str:
    d = analysis.design
    out = [f"% Director study {d.name}: {analysis.n_replies} replies. Needs \\usepackage{{booktabs}}.",
           *(f"% {line}" for line in legend(analysis)), ""]
    for t in rate_tables(analysis):
        body, last = [], None
        for model, label, cells in rate_rows(t):
            if model != last and last is not None:
                body.append([r"\midrule"])
            tcells = []
            for value, ci, note in cells:
                if value == "–":
                    tcells.append("--")
                    continue
                cell = f"${value}$"
                if ci:
                    cell += f" {{\\scriptsize${ci}$}}"
                if note:
                    cell += f" {{\\scriptsize ({tex(note)})}}"
                tcells.append(cell)
            body.append([tex(model) if model != last else "", tex(label), *tcells])
            last = model
        out += _tex_tabular(["Model", "", *map(tex, t.conditions)], body,
                            "ll" + "r" * len(t.conditions), t.title)
    for group, changes in analysis.groups():
        margin = group == MARGIN_GROUP
        headers = ["Comparison", "Model", "Change (pts)", r"95\,\% interval",
                   *(["Within margin"] if margin else ["$p$", "Adj.\\ $p$"]),
                   "Method", "$n$", "$G$"]
        body = []
        last = None
        for c in changes:
            v = change_cells(c)
            if c.ok:
                sup = {"*": "^{*}", "†": r"^{\dagger}"}.get(c.mark, "")
                change = f"${v['diff']}{sup}$"
            else:
                change = _tex_num(v["diff"])
            first = c.index != last
            if first and last is not None:
                body.append([r"\addlinespace"])
            last = c.index
            text = tex(_comparison_text(c.comparison)) if first else ""
            body.append([text, tex(analysis.label(c.model)), change,
                         _tex_num(v["interval"]),
                         *([tex(v["verdict"])] if margin else [_tex_num(v["p"]), _tex_num(v["p_adj"])]),
                         tex(v["method"]), v["n"], v["G"]])
        out += _tex_tabular(headers, body, "p{5.5cm}l" + "r" * (len(headers) - 2),
                            group_title(analysis, group, changes))
    return "\n".join(out)


# --- rich -----------------------------------------------------------------------------------


def _rich(analysis: Analysis, compact: bool = False) -> Any:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(f"Director study {analysis.design.name}: {analysis.n_replies} "
                             f"replies, {len(analysis.models)} model(s)", style="bold")]
    for rt in rate_tables(analysis):
        t = Table(title=rt.title, box=box.SIMPLE_HEAD, title_justify="left")
        t.add_column("model", no_wrap=True)
        t.add_column("", no_wrap=True)
        for cond in rt.conditions:
            t.add_column(cond, justify="right", min_width=8)
        last = None
        for model, label, cells in rate_rows(rt):
            if last is not None and model != last:
                t.add_section()
            t.add_row(model if model != last else "", Text(label, style="italic"),
                      *(Text.assemble(v, (f" ({note})" if note and ci else "", "dim italic"),
                                      (f"\n{ci}" if ci else "", "dim"),
                                      (f"\n{note}" if note and not ci else "", "dim"))
                        for v, ci, note in cells))
            last = model
        parts += [Text(""), t]
    for group, changes in analysis.groups():
        margin = group == MARGIN_GROUP
        t = Table(title=group_title(analysis, group, changes), box=box.SIMPLE_HEAD,
                  title_justify="left")
        t.add_column("comparison", min_width=16, max_width=48)
        t.add_column("model", no_wrap=True,
                     min_width=min(20, max(len(analysis.label(c.model)) for c in changes)))
        t.add_column("Δ pts" if compact else "change (pts)", justify="right", no_wrap=True,
                     min_width=6)
        t.add_column("95% CI" if compact else "95% interval", justify="right", no_wrap=True,
                     min_width=14)
        if margin:
            t.add_column("within margin", no_wrap=True)
        else:
            t.add_column("", justify="left")
            t.add_column("p", justify="right", no_wrap=True, min_width=6)
            t.add_column("adj. p", justify="right", no_wrap=True, min_width=6)
        extra = () if compact else ("method", "n", "scenes")
        for h in extra:
            t.add_column(h, justify="right")
        last = None
        for c in changes:
            first = c.index != last
            if first and last is not None:
                t.add_section()
            last = c.index
            k = c.comparison
            sub = "" if compact else "\n" + what(k)  # the contrast, when there is room
            title = Text.assemble((k.title, "bold"), (sub, "dim")) if first else Text("")
            v = change_cells(c)
            style = "bold" if c.mark == "*" else ""
            diff = Text(v["diff"], style=style if c.ok else "dim")
            tail = ([Text(v["verdict"], style="green" if c.equivalent else "red")] if margin
                    else [Text(v["mark"], style="bold"), v["p"], v["p_adj"]])
            more = () if compact else (v["method"], v["n"], v["G"])
            t.add_row(title, analysis.label(c.model), diff, v["interval"], *tail, *more)
        parts += [Text(""), t]
    parts += [Text(""), *(Text(line, style="dim") for line in legend(analysis))]
    if compact:
        parts.append(Text("left out at this width: method, n, scenes; --format md has all",
                          style="dim"))
    return Group(*parts)
