"""A SceneFunRI comparison as a rich table that fits the terminal."""

from __future__ import annotations

import textwrap
from typing import Any

from .cells import (
    HEADERS,
    LOWER_IS_BETTER,
    METRIC_COLUMNS,
    _ci_note,
    _cost,
    _delta_note,
    _fmt,
    _has_deltas,
    _interval,
    _label,
    _n,
    _split,
)
from .paper import CITATION, NOTE


def rich_table(rows: list[dict[str, Any]], width: int | None) -> Any:
    from rich import box
    from rich.console import Console, Group
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    run, quoted = _split(rows)
    deltas = _has_deltas(run)
    stars = {m: any(r.get(f"delta_{m}_sig") for r in run) for m in METRIC_COLUMNS}
    dwidth = {m: max((len(_fmt(r[f"delta_{m}"], sign=True)) for r in run
                      if r.get(f"delta_{m}") is not None), default=0) for m in METRIC_COLUMNS}

    def metric(r: dict[str, Any], m: str) -> Text:
        cell = Text(_fmt(r[m]))
        d = r.get(f"delta_{m}")
        if d is not None:
            sig = r.get(f"delta_{m}_sig")
            better = d < 0 if m in LOWER_IS_BETTER else d > 0
            style = ("bold green" if better else "bold red") if sig else (
                "green" if better and d else "red" if d else "dim")
            cell.append(" ")
            cell.append(_fmt(d, sign=True).rjust(dwidth[m]) + ("*" if sig else " " if stars[m]
                                                               else ""), style=style)
        if r.get(f"{m}_low") is not None:
            cell.append("\n" + _interval(r, m, 1, ","), style="dim")
        return cell

    # every cell first, then leave out cost columns (last first) until the table fits
    cols = ["model / strategy", "n", "ans%", *(HEADERS[m] for m in METRIC_COLUMNS), "calls",
            "tok i/o", "s/inst"]
    body: list[list[Any]] = []
    prev_kind, prev_model = None, None
    for r in run:
        if (r["model"], r["kind"]) != (prev_model, prev_kind):
            body.append([Text(_label(r), style="bold"), *[""] * (len(cols) - 1),
                         prev_kind is not None and r["kind"] != prev_kind])
        prev_kind, prev_model = r["kind"], r["model"]
        cost = _cost(r)
        body.append([Text("  " + r["strategy"]), _n(r), cost[0],
                     *(metric(r, m) for m in METRIC_COLUMNS), cost[1],
                     f"{cost[2]}/{cost[3]}", cost[4], False])

    sim = any(r.get("kind") == "sim" for r in run)
    title = "SceneFunRI (metrics ×100, 95 % intervals)"
    if sim:
        title += " · SIMULATED rows marked (sim)"
    notes = [n for n in (_ci_note(run), _delta_note(run)) if n]
    if deltas:
        notes.append("green better, red worse (Dist: lower is better)")
    if any(r.get("kind") == "rule" for r in run):
        notes.append("(rule): a fixed reference rule (baseline:...), no model")
    notes.append("per instance: calls, tokens in/out (tok i/o), seconds (s/inst)")

    ns = {_n(r) for r in run}

    def build(keep: list[int], dropped: list[str]) -> Table:
        left_out = [c for c in reversed(dropped) if c != "n"]
        cost_kept = {"calls", "tok i/o", "s/inst"} - set(dropped)
        caption = [n for n in notes if cost_kept or not n.startswith("per instance")] + (
            [f"every row: n = {next(iter(ns))}"] if "n" in dropped else []) + (
            [f"left out at this width: {', '.join(left_out)}; --format md has all"]
            if left_out else [])
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                      caption=Text("\n".join(caption)) if caption else None,
                      caption_justify="left")
        for j in keep:
            if j == 0:
                table.add_column(cols[j], overflow="fold")
            else:
                table.add_column(cols[j], justify="right", no_wrap=True)
        for row in body:
            if row[-1]:
                table.add_section()
            table.add_row(*(row[j] for j in keep))
        return table

    keep, dropped = list(range(len(cols))), []
    table = build(keep, dropped)
    if width is not None:
        console = Console(width=10_000)
        # s/inst, tok, calls, ans%, then n where every row has the same n
        for j in (len(cols) - 1, len(cols) - 2, len(cols) - 3, 2, *([1] if len(ns) == 1 else [])):
            if Measurement.get(console, console.options, table).maximum <= width:
                break
            keep.remove(j)
            dropped.append(cols[j])
            table = build(keep, dropped)
    if not quoted:
        return table

    paper = Table(title=f"{NOTE.capitalize()}: {CITATION} (×100)", box=box.SIMPLE_HEAD,
                  pad_edge=False, title_style="bold magenta",
                  caption="in parentheses: change against the basic prompt, as printed; "
                          "no intervals were published", caption_justify="left")
    paper.add_column("model (paper)")
    paper.add_column("prompt")
    paper.add_column("as strategy", style="dim")
    for m in METRIC_COLUMNS:
        paper.add_column(HEADERS[m], justify="right", no_wrap=True)
    prev_table = None
    for r in quoted:
        if prev_table is not None and r["table"] != prev_table:
            paper.add_section()
        prev_table = r["table"]
        cells = []
        for m in METRIC_COLUMNS:
            cell = Text(_fmt(r[m]))
            d = r.get(f"delta_{m}")
            if d is not None:
                better = d < 0 if m in LOWER_IS_BETTER else d > 0
                cell.append(f" ({_fmt(d, sign=True)})",
                            style=("green" if better else "red") if d else "dim")
            cells.append(cell)
        paper.add_row(textwrap.shorten(r["model"], 24), r["paper_setting"], r["strategy"], *cells)
    return Group(table, paper)
