"""A Director study analysis as the reader sees it: four formats.

``render(analysis, fmt)``: ``table`` (rich), ``json`` (every field), ``md`` (GitHub tables)
or ``latex`` (booktabs). The numbers and cells come from :mod:`.shown` (re-exported here);
every format opens with :func:`.shown.heading`: the study, which replies are simulated, and
each Benjamini-Hochberg family's size; a simulated model is shown as ``NAME (sim)``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .analyze import MARGIN_GROUP, PLACES, Analysis
from .shown import (  # noqa: F401 - re-exported: the shared cells live in .shown
    RateTable,
    cell_text,
    change_cells,
    end,
    group_title,
    heading,
    interval,
    legend,
    md_table,
    pct,
    pval,
    rate_rows,
    rate_tables,
    tex,
    tex_num,
    tex_tabular,
    what,
)
from .study import Comparison as DesignComparison

FORMATS = ("table", "json", "md", "latex")



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
        "n_replies": analysis.n_replies, "n_boot": analysis.n_boot, "seed": analysis.seed,
        "interval": 0.95, "places": PLACES, "models": analysis.models,
        "simulated": analysis.simulated, "humans": sorted(analysis.humans),
        "dropped_apparent": analysis.dropped_apparent,
        "notice": heading(analysis)[1] if analysis.simulated else None,
        "families": {g: {"estimated": done, "asked": asked}
                     for g, (done, asked) in analysis.family_sizes().items()},
        "rates": rates, "changes": changes,
    }


# --- markdown -------------------------------------------------------------------------------


def _comparison_text(c: DesignComparison) -> str:
    return f"{c.label} ({what(c)})" if c.label else what(c)


def _md(analysis: Analysis) -> str:
    first, *rest = heading(analysis)
    out = [f"## {first}", "", *(f"**{line}**" for line in rest), ""]
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
        last = None
        for c in changes:
            v = change_cells(c)
            text = _comparison_text(c.comparison) if c.index != last else ""
            last = c.index
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
        last = None
        for c in changes:
            v = change_cells(c)
            if c.ok:
                sup = {"*": "^{*}", "†": r"^{\dagger}"}.get(c.mark, "")
                change = f"${v['diff']}{sup}$"
            else:
                change = tex_num(v["diff"])
            first = c.index != last
            if first and last is not None:
                body.append([r"\addlinespace"])
            last = c.index
            text = tex(_comparison_text(c.comparison)) if first else ""
            body.append([text, tex(analysis.label(c.model)), change,
                         tex_num(v["interval"]),
                         *([tex(v["verdict"])] if margin else [tex_num(v["p"]), tex_num(v["p_adj"])]),
                         tex(v["method"]), v["n"], v["G"]])
        out += tex_tabular(headers, body, "p{5.5cm}l" + "r" * (len(headers) - 2),
                            group_title(analysis, group, changes))
    return "\n".join(out)


# --- rich -----------------------------------------------------------------------------------


def _rich(analysis: Analysis, compact: bool = False) -> Any:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    first, *rest = heading(analysis)
    parts: list[Any] = [Text(first, style="bold"),
                        *(Text(line, style="bold magenta" if line.startswith("SIMULATED")
                               else "") for line in rest)]
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
            t.add_row(rt.labels[model] if model != last else "", Text(label, style="italic"),
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
