"""The layouts of ``paper_layout`` as a rich table, markdown and LaTeX (``compare --paper``)."""

from __future__ import annotations

from typing import Any

from ...table_fit import Label, fit
from .cells import LOWER_IS_BETTER, METRIC_COLUMNS, fmt_num
from .paper_layout import PANELS, TITLE2, Line, headers, notes2, notes3, table2, table3


def _layouts(run: list[dict[str, Any]], quoted: list[dict[str, Any]]
             ) -> list[tuple[str, list[Line], list[str], bool]]:
    """(title, lines, notes, with changes) of Table 2 and the two panels of Table 3."""
    return [(TITLE2, table2(run, quoted), notes2(), False),
            *((title, table3(run, quoted, prompts), notes3(), True) for title, prompts in PANELS)]


# --- rich ---------------------------------------------------------------------------------

BELOW = "changes below their values"


def rich(run: list[dict[str, Any]], quoted: list[dict[str, Any]], width: int | None) -> Any:
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    for title, lines, notes, changes in _layouts(run, quoted):
        parts += [Text(""), _rich_table(title, lines, changes, width),
                  *(Text(n, style="dim") for n in notes)]
    return Group(*parts)


def _rich_cell(line: Line, m: str, changes: bool, below: bool) -> Any:
    """A value and (Table 3) its change, beside it or ``below`` it."""
    from rich.text import Text

    if line.note:
        return Text(line.note, style="dim")
    v = line.values.get(m)
    style = " ".join(s for s, on in (("bold underline", m in line.series_best),
                                     ("black on yellow", m in line.overall_best)) if on)
    cell = Text(fmt_num(v), style=style)
    if m in line.overall_best:
        cell.append("★")
    d = line.changes.get(m) if changes else None
    if d is not None:
        better = d < 0 if m in LOWER_IS_BETTER else d > 0
        cell.append(("\n" if below else " ") + fmt_num(d, sign=True),
                    style=("green" if better else "red") if d else "dim")
    return cell


def _rich_table(title: str, lines: list[Line], changes: bool, width: int | None) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    labels = [Label(x.label, 0 if x.heading else 2, 2 if x.heading else 4) for x in lines]

    def build(label_width: int | None, left_out: list[str]) -> Table:
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  title_justify="left", title_style="bold")
        t.add_column("model / prompt" if changes else "model", no_wrap=True, width=label_width)
        t.add_column("", no_wrap=True)
        for h in headers():
            t.add_column(h, justify="right", no_wrap=True)
        for x, lab in zip(lines, labels, strict=True):
            if x.heading and t.row_count:
                t.add_section()
            label = Text(lab.show(label_width), style="bold" if x.heading else "")
            source = Text(x.source, style="magenta" if x.source == "paper" else "")
            below = BELOW in left_out
            t.add_row(label, source, *("" if x.heading else _rich_cell(x, m, changes, below)
                                       for m in METRIC_COLUMNS))
        return t

    # too narrow for a change beside its value: under it
    return fit(build, labels, width, drop_last=[BELOW] if changes else [])[0]


# --- markdown ------------------------------------------------------------------------------


def _md_cell(line: Line, m: str, changes: bool) -> str:
    text = fmt_num(line.values.get(m))
    if text and m in line.series_best:
        text = f"**{text}**"
    if m in line.overall_best:
        text += " ★"
    d = line.changes.get(m) if changes else None
    return text + (f" ({fmt_num(d, sign=True)})" if d is not None else "")


def md(run: list[dict[str, Any]], quoted: list[dict[str, Any]]) -> str:
    out = []
    for title, lines, notes, changes in _layouts(run, quoted):
        head = ["model / prompt" if changes else "model", "", *headers()]
        out += ["", f"**{title}**", "", "| " + " | ".join(head) + " |",
                "|---|---|" + "--:|" * len(METRIC_COLUMNS)]
        for x in lines:
            if x.heading:
                cells = [f"*{x.label}*", "", *[""] * len(METRIC_COLUMNS)]
            elif x.note:
                cells = [x.label, x.source, *[x.note] * len(METRIC_COLUMNS)]
            else:
                cells = [x.label, x.source, *(_md_cell(x, m, changes) for m in METRIC_COLUMNS)]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out += ["", *(f"_{n}_" for n in notes)]
    return "\n".join(out)


# --- LaTeX ---------------------------------------------------------------------------------


def _tex_cell(line: Line, m: str, changes: bool, tex: Any) -> str:
    text = fmt_num(line.values.get(m))
    if not text:
        return ""
    if m in line.series_best:
        text = rf"\textbf{{\underline{{{text}}}}}"
    if m in line.overall_best:
        text = rf"\colorbox{{yellow}}{{{text}}}$^{{\star}}$"
    d = line.changes.get(m) if changes else None
    if d is not None:
        better = d < 0 if m in LOWER_IS_BETTER else d > 0
        colour = "green!50!black" if better else "red" if d else "black"
        text += rf" {{\scriptsize\textcolor{{{colour}}}{{${fmt_num(d, sign=True)}$}}}}"
    return text


def latex(run: list[dict[str, Any]], quoted: list[dict[str, Any]], tex: Any) -> str:
    """``tex`` escapes text (the report's own escaper)."""
    out = ["", "% The paper's layouts, its quoted rows beside ours. Needs booktabs and xcolor."]
    ncol = 2 + len(METRIC_COLUMNS)
    arrows = [rf"{tex(h[:-1])}$\{'downarrow' if h.endswith('↓') else 'uparrow'}$"
              for h in headers()]
    for title, lines, notes, changes in _layouts(run, quoted):
        out += [f"% {tex(title)}", *(f"% {tex(n)}" for n in notes),
                r"\begin{tabular}{ll" + "r" * len(METRIC_COLUMNS) + "}", r"\toprule",
                " & ".join(["Model / prompt" if changes else "Model", "", *arrows]) + r" \\"]
        for x in lines:
            if x.heading:
                out += [r"\midrule", rf"\multicolumn{{{ncol}}}{{l}}{{\emph{{{tex(x.label)}}}}} \\"]
            elif x.note:
                missing = "--" if x.note == "–" else tex(x.note)
                out.append(" & ".join([tex(x.label), x.source, *[missing] * len(METRIC_COLUMNS)])
                           + r" \\")
            else:
                cells = [tex(x.label), x.source,
                         *(_tex_cell(x, m, changes, tex) for m in METRIC_COLUMNS)]
                out.append(" & ".join(cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(out)
