"""A Director study analysis as rich tables that fit the terminal (``tables.render``'s ``table``).

The tables fit by the rules of :mod:`...table_fit`:

- **Rates**: a row per model (its name as a heading) and measure, a column per condition
  (headers folded after ``/`` and ``+``). Where a batch's conditions do not all fit, the
  table is cut into parts of as many conditions as fit, each titled with the ones it holds.
- **Changes**: a comparison's title heads its rows (folded at spaces, no narrower than
  :data:`LEAST_TITLE` columns), a row per model beneath; at :data:`WIDE` columns and more the
  contrast (variant − base: measure) is spelled out under the title. Method, n and scenes are
  left out, in that order, where the width does not allow them, and the lines under the
  tables say so; ``--format md`` has every column and the full text.
"""

from __future__ import annotations

from typing import Any

from ...table_fit import Label, fit, fold, longest_piece, measure
from . import costs as cost_rows
from .analyze import MARGIN_GROUP, Analysis
from .shown import (
    RateTable,
    change_cells,
    group_title,
    heading,
    legend,
    rate_rows,
    rate_tables,
    what,
)

#: Console columns from which the changes tables spell out each comparison's contrast.
WIDE = 120
#: The narrowest a comparison's title folds to (columns).
LEAST_TITLE = 30


def rich(analysis: Analysis, width: int | None = None) -> Any:
    from rich.console import Group
    from rich.text import Text

    first, *rest = heading(analysis)
    parts: list[Any] = [Text(first, style="bold"),
                        *(Text(line, style="bold magenta" if line.startswith("SIMULATED")
                               else "") for line in rest)]
    if analysis.costs:
        parts += [Text(""), Text("cost per model", style="italic"), _cost_table(analysis),
                  Text(cost_rows.note(analysis.costs), style="dim")]
    # titles above the tables, not in them: a title wraps at the terminal's width, not the
    # table's
    for rt in rate_tables(analysis):
        for title, table in _rate_parts(rt, width):
            parts += [Text(""), Text(title, style="italic"), table]
    dropped: list[list[str]] = []
    for group, changes in analysis.groups():
        table, left_out = _changes_table(analysis, group, changes, width)
        dropped.append(left_out)
        parts += [Text(""), Text(group_title(analysis, group, changes), style="italic"), table]
    parts += [Text(""), *(Text(line, style="dim") for line in legend(analysis))]
    if any(dropped):
        every = all(d == dropped[0] for d in dropped)
        names = ", ".join(dict.fromkeys(x for d in dropped for x in d))
        parts.append(Text(f"left out {'' if every else 'of some tables '}at this width: {names}; "
                          "--format md has all", style="dim"))
    return Group(*parts)



def _cost_table(analysis: Analysis) -> Any:
    """US dollars per model: replies, per reply, in all (narrow: it fits any terminal)."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for j, h in enumerate(cost_rows.HEADERS):
        table.add_column(h, justify="left" if j == 0 else "right", overflow="fold")
    for c in analysis.costs:
        table.add_row(*cost_rows.cells(c))
    return table


# --- rates ----------------------------------------------------------------------------------


def _rate_cell(value: str, ci: str, note: str) -> Any:
    from rich.text import Text

    ci = ci.replace(", ", ",")  # "[31.0,62.6]": one column narrower, as the SceneFunRI table
    return Text.assemble(value, (f" ({note})" if note and ci else "", "dim italic"),
                         (f"\n{ci}" if ci else "", "dim"),
                         (f"\n{note}" if note and not ci else "", "dim"))


def _rate_parts(rt: RateTable, width: int | None) -> list[tuple[str, Any]]:
    """The rates table of one (batch, set), cut into as many tables as the width needs:
    (title, table) each."""
    rows = rate_rows(rt)
    labels: list[Label] = []
    body: list[tuple[bool, list[Any]]] = []  # (a model heading, cells per condition)
    last = None
    for model, label, cells in rows:
        if model != last:
            labels.append(Label(rt.labels[model], 0, 2))
            body.append((True, [""] * len(rt.conditions)))
            last = model
        labels.append(Label(label, 2, 4))
        body.append((False, [_rate_cell(*c) for c in cells]))

    def table_of(conds: list[int]) -> Any:
        def build(label_width: int | None, _: list[str]) -> Any:
            from rich import box
            from rich.table import Table
            from rich.text import Text

            t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
            t.add_column("model / measure", no_wrap=True, width=label_width)
            for j in conds:
                cond = rt.conditions[j]
                content = max((len(line) for is_head, cells in body if not is_head
                               for line in cells[j].plain.splitlines()), default=0)
                t.add_column("\n".join(fold(cond, max(content, longest_piece(cond)))),
                             justify="right", no_wrap=True)
            for (is_head, cells), lab in zip(body, labels, strict=True):
                if is_head and t.row_count:
                    t.add_section()
                t.add_row(Text(lab.show(label_width), style="bold" if is_head else "italic"),
                          *(cells[j] for j in conds))
            return t

        return fit(build, labels, width)[0]

    n = len(rt.conditions)
    per = n
    while width is not None and per > 1 and measure(table_of(list(range(per)))) > width:
        per -= 1
    if per == n:
        return [(rt.title, table_of(list(range(n))))]
    size = -(-n // -(-n // per))  # as many parts as needed, of sizes as even as can be
    parts = []
    for start in range(0, n, size):
        conds = list(range(start, min(n, start + size)))
        names = ", ".join(rt.conditions[j] for j in conds)
        parts.append((f"{rt.title} (conditions {start + 1}-{conds[-1] + 1} of {n}: {names})",
                      table_of(conds)))
    return parts


# --- changes --------------------------------------------------------------------------------


def _changes_table(analysis: Analysis, group: str, changes: list[Any], width: int | None
                   ) -> tuple[Any, list[str]]:
    margin = group == MARGIN_GROUP
    narrow = width is not None and width < WIDE
    lines: list[tuple[str, Label, Any]] = []  # (kind: title, contrast or model; label; change)
    last = None
    for c in changes:
        if c.index != last:
            last = c.index
            lines.append(("title", Label(c.comparison.title, 0, 2), None))
            if not narrow:
                lines.append(("contrast", Label(what(c.comparison), 0, 2), None))
        lines.append(("model", Label(analysis.label(c.model), 2, 4), c))
    tail = ["within margin"] if margin else ["", "p", "adj. p"]
    extra = ["method", "n", "scenes"]

    def build(label_width: int | None, left_out: list[str]) -> Any:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        t.add_column("comparison / model", no_wrap=True, width=label_width)
        t.add_column("Δ pts" if narrow else "change (pts)", justify="right", no_wrap=True)
        t.add_column("95% CI" if narrow else "95% interval", justify="right", no_wrap=True)
        for h in tail:
            t.add_column(h, justify="right" if h.endswith("p") else "left", no_wrap=True)
        kept = [h for h in extra if h not in left_out]
        for h in kept:
            t.add_column(h, justify="right", no_wrap=True)
        blank = [""] * (2 + len(tail) + len(kept))
        for kind, lab, c in lines:
            text = lab.show(label_width)
            if kind == "title":
                if t.row_count:
                    t.add_section()
                t.add_row(Text(text, style="bold"), *blank)
            elif kind == "contrast":
                t.add_row(Text(text, style="dim"), *blank)
            else:
                v = change_cells(c)
                diff = Text(v["diff"], style=("bold" if c.mark == "*" else "") if c.ok else "dim")
                marks = ([Text(v["verdict"], style="green" if c.equivalent else "red")] if margin
                         else [Text(v["mark"], style="bold"), v["p"], v["p_adj"]])
                more = {"method": v["method"], "n": v["n"], "scenes": v["G"]}
                t.add_row(Text(text), diff, v["interval"], *marks, *(more[h] for h in kept))
        return t

    return fit(build, [lab for _, lab, _ in lines], width, drop_last=["scenes", "n", "method"],
               least=LEAST_TITLE)
