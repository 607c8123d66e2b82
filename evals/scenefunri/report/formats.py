"""A SceneFunRI comparison as text: ``json``, ``csv``, ``md`` and ``latex``; ``table`` is the
rich table of ``report_table``."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from .cells import (
    HEADERS,
    LOWER_IS_BETTER,
    METRIC_COLUMNS,
    ci_note,
    cost_cells,
    cost_note,
    delta_note,
    delta_star,
    fmt_num,
    has_costs,
    has_deltas,
    interval_text,
    model_label,
    n_cell,
    nan_to_none,
    pool_note,
    serving_notes,
    split_paper,
    usd_text,
)
from .paper import CITATION, NOTE


def render(rows: list[dict[str, Any]], fmt: str = "table", width: int | None = None) -> str | Any:
    """Rows as ``json``, ``csv``, ``md`` or ``latex`` text, or a rich renderable for ``table``.

    Rows whose ``source`` is ``paper`` (see ``paper.paper_rows``) are laid out as the paper's
    Tables 2 and 3, beside ours (``paper_layout``), labelled "quoted from the paper, not
    measured"; ``json`` and ``csv`` list them as rows. A table wider than ``width`` leaves
    columns out and folds labels (``report_table``) and says so under it.
    """
    if fmt == "json":
        return json.dumps([{k: nan_to_none(v) for k, v in r.items()} for r in rows], indent=2)
    if fmt == "csv":
        return _csv(rows)
    if fmt == "md":
        return _md(rows)
    if fmt == "latex":
        return _latex(rows)
    if fmt == "table":
        from .table import rich_table

        run, quoted = split_paper(rows)
        if not quoted:
            return rich_table(run, width)
        from rich.console import Group
        from rich.text import Text

        from .paper_tables import rich as paper_rich

        return Group(rich_table(run, width), Text(""),
                     Text(f"{NOTE.capitalize()}: {CITATION}, beside ours", style="bold magenta"),
                     paper_rich(run, quoted, width))
    raise ValueError(f"unknown format {fmt!r}; choose table, json, csv, md or latex")


def _csv(rows: list[dict[str, Any]]) -> str:
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(keys) or ["model", "strategy", "n", "answered",
                                                      *METRIC_COLUMNS])
    w.writeheader()
    # the price a cost used: its fields as one JSON cell
    w.writerows([{**r, "price": json.dumps(r["price"])} if isinstance(r.get("price"), dict)
                 else r for r in rows])
    return buf.getvalue()


# --- markdown -----------------------------------------------------------------------------


def _md(rows: list[dict[str, Any]]) -> str:
    run, quoted = split_paper(rows)
    deltas = has_deltas(run)
    headers = ["model", "strategy", "n", *(HEADERS[m] for m in METRIC_COLUMNS)]
    if deltas:
        headers += [f"Δ {HEADERS[m]}" for m in METRIC_COLUMNS]
    headers += [HEADERS[c] for c in ("answered", "calls", "input_tokens", "output_tokens",
                                     "seconds")]
    costed = has_costs(run)
    if costed:
        headers += [HEADERS["cost_usd"], HEADERS["cost_total_usd"]]

    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    def cells(r: dict[str, Any]) -> list[str]:
        out = [model_label(r), r["strategy"], n_cell(r)]
        out += [f"{fmt_num(r[m])} {interval_text(r, m)}".strip() for m in METRIC_COLUMNS]
        if deltas:
            out += [f"{fmt_num(r.get(f'delta_{m}'), sign=True)}{delta_star(r, m)} "
                    f"{interval_text(r, f'delta_{m}')}".strip() for m in METRIC_COLUMNS]
        return out + cost_cells(r) + ([usd_text(r), usd_text(r, "cost_total_usd")] if costed else [])

    lines = [line(headers), "|" + "---|" * 3 + "--:|" * (len(headers) - 3)]
    lines += [line(cells(r)) for r in run]
    if pooled := pool_note(run):
        lines += ["", f"_{pooled}_"]
    if notes := serving_notes(run):
        lines += ["", *(f"_{note}_" for note in notes)]
    if costed:
        lines += ["", f"_{cost_note(run)}_"]
    if quoted:
        from .paper_tables import md as paper_md

        lines += ["", f"### {NOTE.capitalize()}: {CITATION}, beside ours", paper_md(run, quoted)]
    return "\n".join(lines)


# --- LaTeX --------------------------------------------------------------------------------


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(c, c) for c in s)


def _latex(rows: list[dict[str, Any]]) -> str:
    run, quoted = split_paper(rows)
    arrows = {m: r"$\downarrow$" if m in LOWER_IS_BETTER else r"$\uparrow$" for m in METRIC_COLUMNS}
    costed = has_costs(run)
    headers = ["Model", "Strategy", "$n$", *(_tex(HEADERS[m]) + arrows[m] for m in METRIC_COLUMNS),
               r"Ans.\,\%", "Calls", "In tok.", "Out tok.", "s",
               *([r"USD/inst.", r"USD total"] if costed else [])]
    ncol = len(headers)

    def metric(r: dict[str, Any], m: str) -> str:
        cell = fmt_num(r[m])
        if r.get(f"{m}_low") is not None:
            cell += r" {\scriptsize$" + interval_text(r, m, 1, ",\\,") + "$}"
        d = r.get(f"delta_{m}")
        if d is not None:
            star = "^{*}" if r.get(f"delta_{m}_sig") else ""
            cell += r" {\scriptsize$" + fmt_num(d, sign=True) + star + "$}"
        return cell

    def row(r: dict[str, Any]) -> str:
        cost = ["--" if c == "" else c for c in
                cost_cells(r) + ([usd_text(r), usd_text(r, "cost_total_usd")] if costed else [])]
        cells = [_tex(model_label(r)), _tex(r["strategy"]), n_cell(r).replace("×", r"$\times$") or "--",
                 *(metric(r, m) for m in METRIC_COLUMNS), *cost]
        return " & ".join(cells) + r" \\"

    notes = [n.replace("Δ", "Delta").replace("Σ", "total") for n in
             (ci_note(run), delta_note(run), pool_note(run), *serving_notes(run),
              cost_note(run) if costed else "") if n]
    lines = [f"% SceneFunRI, metrics x100. {'; '.join(notes)}." if notes else
             "% SceneFunRI, metrics x100.",
             "% Needs \\usepackage{booktabs}. Costs are per instance (USD total: in all).",
             r"\begin{tabular}{ll" + "r" * (ncol - 2) + "}", r"\toprule",
             " & ".join(headers) + r" \\", r"\midrule"]
    lines += [row(r) for r in run]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if quoted:
        from .paper_tables import latex as paper_latex

        lines += ["", rf"% \emph{{{NOTE.capitalize()}}}: {_tex(CITATION)}, beside ours",
                  rf"\noindent\emph{{{NOTE.capitalize()}}} ({_tex(CITATION)}), beside ours\par",
                  paper_latex(run, quoted, _tex)]
    return "\n".join(lines)
