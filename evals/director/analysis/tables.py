"""A Director study analysis as the reader sees it: four formats.

``render(analysis, fmt)``: ``table`` (rich), ``json`` (every field), ``md`` (GitHub tables)
or ``latex`` (booktabs). The numbers and cells come from :mod:`.shown`;
every format opens with :func:`.shown.heading`: the study, which replies are simulated, and
each Benjamini-Hochberg family's size; a simulated model is shown as ``NAME (sim)``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..study.design import Comparison as DesignComparison
from . import costs as cost_rows
from .analyze import MARGIN_GROUP, PLACES, Analysis
from .shown import (
    cell_text,
    change_cells,
    group_title,
    heading,
    legend,
    md_table,
    rate_rows,
    rate_tables,
    tex,
    tex_num,
    tex_tabular,
    what,
)

FORMATS = ("table", "json", "md", "latex")



# --- rendering --------------------------------------------------------------------------------


def render(analysis: Analysis, fmt: str = "table", width: int | None = None) -> Any:
    """``analysis`` as ``json``, ``md`` or ``latex`` text, or a rich renderable for ``table``
    that fits in ``width`` columns (:mod:`.rich_tables`)."""
    if fmt == "json":
        return json.dumps(to_dict(analysis), indent=2, ensure_ascii=False)
    if fmt == "md":
        return _md(analysis)
    if fmt == "latex":
        return _latex(analysis)
    if fmt == "table":
        from .rich_tables import rich

        return rich(analysis, width)
    raise ValueError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")


def _num(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) else x
    return x


def to_dict(analysis: Analysis) -> dict[str, Any]:
    """Every field, machine-readable: rates and differences as fractions (floats)."""
    d = analysis.design
    rates = [{"model": r.model, "simulated": r.model in analysis.simulated, "batch": r.batch,
              "set": r.set, "condition": r.condition, "n": r.n, "answered": r.answered, "answer_rate": float(r.answer_rate),
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
            "model": c.model, "simulated": c.model in analysis.simulated, "status": c.status,
            "note": c.note,
            "diff": _num(c.diff), "low": _num(c.low), "high": _num(c.high),
            "share_base": _num(c.share0), "share_variant": _num(c.share1),
            "p": _num(c.p), "p_adjusted": _num(c.p_adjusted), "mark": c.mark,
            "method": c.method, "n": c.n, "G": c.G,
            "se": _num(raw.se) if raw and raw.se is not None else None,
            "df": raw.df if raw else None,
            "excludes_zero": raw.excludes_zero if raw else None,
            "clipped": raw.clipped if raw else None,
            "equivalent": c.equivalent,
        })
    return {
        "design": {"name": d.name, "q": float(d.q), "margin": float(d.margin),
                   "samples": d.samples, "seed": d.seed},
        "n_replies": analysis.n_replies, "length_stops": analysis.length_stops,
        "serving": analysis.serving, "dropped_params": analysis.dropped,
        "n_boot": analysis.n_boot, "seed": analysis.seed,
        "interval": 0.95, "places": PLACES, "models": analysis.models,
        "simulated": analysis.simulated, "humans": sorted(analysis.humans),
        "dropped_apparent": analysis.dropped_apparent,
        "notice": heading(analysis)[1] if analysis.simulated else None,
        "families": {g: {"estimated": done, "asked": asked}
                     for g, (done, asked) in analysis.family_sizes().items()},
        "rates": rates, "changes": changes,
        "costs": [{k: v for k, v in c.items() if k != "costed"} for c in analysis.costs],
    }


# --- markdown -------------------------------------------------------------------------------


def _comparison_text(c: DesignComparison) -> str:
    return f"{c.label} ({what(c)})" if c.label else what(c)


def _md(analysis: Analysis) -> str:
    first, *rest = heading(analysis)
    out = [f"## {first}", "", *(f"**{line}**" for line in rest), ""]
    if analysis.costs:
        out += ["### cost per model", "",
                *md_table(cost_rows.HEADERS, map(cost_rows.cells, analysis.costs), 1), "",
                f"_{cost_rows.note(analysis.costs)}_", ""]
    for t in rate_tables(analysis):
        body, last = [], None
        for model, label, cells in rate_rows(t):
            body.append([t.labels[model] if model != last else "", label,
                         *map(cell_text, cells)])
            last = model
        out += [f"### {t.title}", "", *md_table(["model", "", *t.conditions], body, 2), ""]
    for group, changes in analysis.groups():
        margin = group == MARGIN_GROUP
        headers = ["comparison", "model", "change (points)", "95% interval",
                   *(["within margin"] if margin else ["mark", "p", "adj. p"]),
                   "method", "n", "scenes"]
        body = []
        last_i: int | None = None
        for c in changes:
            v = change_cells(c)
            text = _comparison_text(c.comparison) if c.index != last_i else ""
            last_i = c.index
            body.append([text, analysis.label(c.model), v["diff"], v["interval"],
                         *([v["verdict"]] if margin else [v["mark"], v["p"], v["p_adj"]]),
                         v["method"], v["n"], v["G"]])
        out += [f"### {group_title(analysis, group, changes)}", "",
                *md_table(headers, body, 2), ""]
    out += [f"_{line}_" for line in legend(analysis)]
    return "\n".join(out) + "\n"


# --- LaTeX ----------------------------------------------------------------------------------


def _latex(analysis: Analysis) -> str:
    first, *rest = heading(analysis)
    out = [f"% {tex(first)}. Needs \\usepackage{{booktabs}}.",
           *(f"% {tex(line)}" for line in rest), *(f"% {line}" for line in legend(analysis)), ""]
    if analysis.simulated:  # visible in the document, not only in a comment
        out += [r"\noindent\textbf{" + tex(rest[0].split(":", 1)[0]) + "}:"
                + tex(rest[0].split(":", 1)[1]) + r"\par", ""]
    if analysis.costs:
        out += [f"% {cost_rows.note(analysis.costs)}".replace("Σ", "total"),
                *tex_tabular([tex(h) for h in cost_rows.HEADERS],
                             ([tex(x) for x in cost_rows.cells(c)] for c in analysis.costs),
                             "lrrr", "cost per model")]
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
            body.append([tex(t.labels[model]) if model != last else "", tex(label), *tcells])
            last = model
        out += tex_tabular(["Model", "", *map(tex, t.conditions)], body,
                            "ll" + "r" * len(t.conditions), t.title)
    for group, changes in analysis.groups():
        margin = group == MARGIN_GROUP
        headers = ["Comparison", "Model", "Change (pts)", r"95\,\% interval",
                   *(["Within margin"] if margin else ["$p$", "Adj.\\ $p$"]),
                   "Method", "$n$", "$G$"]
        body = []
        last_i: int | None = None
        for c in changes:
            v = change_cells(c)
            if c.ok:
                sup = {"*": "^{*}", "†": r"^{\dagger}"}.get(c.mark, "")
                change = f"${v['diff']}{sup}$"
            else:
                change = tex_num(v["diff"])
            is_first = c.index != last_i
            if is_first and last_i is not None:
                body.append([r"\addlinespace"])
            last_i = c.index
            text = tex(_comparison_text(c.comparison)) if is_first else ""
            body.append([text, tex(analysis.label(c.model)), change,
                         tex_num(v["interval"]),
                         *([tex(v["verdict"])] if margin else [tex_num(v["p"]), tex_num(v["p_adj"])]),
                         tex(v["method"]), v["n"], v["G"]])
        out += tex_tabular(headers, body, "p{5.5cm}l" + "r" * (len(headers) - 2),
                            group_title(analysis, group, changes))
    return "\n".join(out)
