"""A SceneFunRI comparison as a rich table that fits the terminal (the quoted paper rows are
``paper_layout``'s)."""

from __future__ import annotations

from typing import Any

from ...table_fit import Label, fit
from .cells import (
    HEADERS,
    LOWER_IS_BETTER,
    METRIC_COLUMNS,
    ci_note,
    cost_cells,
    cost_note,
    delta_note,
    fmt_num,
    has_costs,
    has_deltas,
    interval_text,
    model_label,
    n_cell,
    pool_note,
    serving_notes,
    split_paper,
    usd_text,
)


def usd_cell(r: dict[str, Any]) -> Any:
    """US dollars per instance, and under it (dim) in all; ``no price`` for a model without
    one, empty for the simulator, rules and people."""
    from rich.text import Text

    cell = Text(usd_text(r))
    if r.get("costed") and r.get("cost_total_usd") is not None:
        cell.append("\nΣ" + usd_text(r, "cost_total_usd"), style="dim")
    return cell


def rich_table(rows: list[dict[str, Any]], width: int | None) -> Any:
    """The measured rows (``source`` other than ``paper``) as a rich table and its notes.

    Within ``width`` columns (:func:`...table_fit.fit`) the costs are left out first (the
    seconds, tokens, calls, US dollars, answered %), then ``n`` where every row has the
    same; then the labels fold at their parameters; then mIoU and CAcc@50 go. The notes
    under the table say what was left out.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    run, _ = split_paper(rows)
    deltas = has_deltas(run)
    stars = {m: any(r.get(f"delta_{m}_sig") for r in run) for m in METRIC_COLUMNS}
    dwidth = {m: max((len(fmt_num(r[f"delta_{m}"], sign=True)) for r in run
                      if r.get(f"delta_{m}") is not None), default=0) for m in METRIC_COLUMNS}

    def metric(r: dict[str, Any], m: str) -> Text:
        cell = Text(fmt_num(r[m]))
        d = r.get(f"delta_{m}")
        if d is not None:
            sig = r.get(f"delta_{m}_sig")
            better = d < 0 if m in LOWER_IS_BETTER else d > 0
            style = ("bold green" if better else "bold red") if sig else (
                "green" if better and d else "red" if d else "dim")
            cell.append(" ")
            cell.append(fmt_num(d, sign=True).rjust(dwidth[m]) + ("*" if sig else " " if stars[m]
                                                               else ""), style=style)
        if r.get(f"{m}_low") is not None:
            cell.append("\n" + interval_text(r, m, 1, ","), style="dim")
        return cell

    # the cells first; then the columns the width allows (see table_fit.fit)
    costed = has_costs(run)
    cols = ["model / strategy", "n", "ans%", *(HEADERS[m] for m in METRIC_COLUMNS), "calls",
            "tok i/o", "s/inst", *(["$/inst"] if costed else [])]
    body: list[tuple[Label, str, list[Any], bool]] = []  # label, its style, cells, new section
    prev_kind, prev_model = None, None
    for r in run:
        if (r["model"], r["kind"]) != (prev_model, prev_kind):
            body.append((Label(model_label(r), 0, 2), "bold", [""] * (len(cols) - 1),
                         prev_kind is not None and r["kind"] != prev_kind))
        prev_kind, prev_model = r["kind"], r["model"]
        cost = cost_cells(r)
        body.append((Label(r["strategy"], 2, 4), "", [n_cell(r), cost[0],
                     *(metric(r, m) for m in METRIC_COLUMNS), cost[1],
                     f"{cost[2]}/{cost[3]}", cost[4], *([usd_cell(r)] if costed else [])],
                     False))

    sim = any(r.get("kind") == "sim" for r in run)
    title = "SceneFunRI (metrics ×100, 95 % intervals)"
    if sim:
        title += " · SIMULATED rows marked (sim)"
    notes = [n for n in (ci_note(run), delta_note(run), pool_note(run)) if n]
    if deltas:
        notes.append("green better, red worse (Dist: lower is better)")
    if any(r.get("kind") == "rule" for r in run):
        notes.append("(rule): a fixed reference rule (baseline:...), no model")
    notes += serving_notes(run)

    ns = {n_cell(r) for r in run}

    def build(label_width: int | None, left_out: list[str]) -> Table:
        keep = [j for j, c in enumerate(cols) if c not in left_out]
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for j in keep:
            if j == 0:
                table.add_column(cols[j], no_wrap=True, width=label_width)
            else:
                table.add_column(cols[j], justify="right", no_wrap=True)
        for label, style, cells, section in body:
            if section:
                table.add_section()
            row = [Text(label.show(label_width), style=style), *cells]
            table.add_row(*(row[j] for j in keep))
        return table

    # before a label folds: the costs (seconds, tokens, calls, US dollars, answered %) and n
    # where every row has the same n; after: the metrics the paper puts after the others
    table, left_out = fit(build, [b[0] for b in body], width,
                          ["s/inst", "tok i/o", "calls", *(["$/inst"] if costed else []), "ans%",
                           *(["n"] if len(ns) == 1 else [])],
                          [HEADERS["miou"], HEADERS["cacc50"]])
    if {"calls", "tok i/o", "s/inst"} - set(left_out):
        notes.append("per instance: calls, tokens in/out (tok i/o), seconds (s/inst)")
    if costed and "$/inst" not in left_out:
        notes.append(cost_note(run))
    if "n" in left_out:
        notes.append(f"every row: n = {next(iter(ns))}")
    shown_out = [c for c in left_out if c != "n"]
    if shown_out:
        notes.append(f"left out at this width: {', '.join(shown_out)}; --format md has all")
    return Group(table, *(Text(n, style="dim") for n in notes))
