"""The Director paper's numbered tables and figures, laid out from a study's analysis.

``layouts(analysis, coding)`` gives one :class:`.picks.Layout` per table and figure that
the paper's text describes (Tables 2-13 with 10a-d, Figures 3-7), under its number, with the
caption the text gives and a note on the layout: the text states what each one shows but, for
most, not how it is laid out, so the layout (a row per model unless said otherwise) is ours
and each note says so. ``render(analysis, layouts, fmt)`` prints them (``table``, ``md``,
``latex``, ``json``); :mod:`.figures` lays out and draws the figures. How a cell is
picked: :mod:`.picks`.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from typing import Any

from ...table_fit import fold, longest_piece
from ..analysis.analyze import Analysis
from ..analysis.shown import SIMULATED, md_table, pct, tex, tex_tabular
from .figures import figures
from .picks import (
    COMBINED,
    OURS,
    VIS_MEAN,
    VIS_MOVE,
    Layout,
    Pick,
    ch,
    each_model,
    find,
    models_of,
    per_model,
    rate,
    rates_per_model,
    rt,
    with_batches,
)

FORMATS = ("table", "json", "md", "latex")

T2 = ("move/stated", "move/after", "move/twoturn")  # the conditions of Table 2's batches
TABLE2 = {
    "with − without the question, move": Pick("move/novis", "move", asks=T2),
    "with − without, mean": Pick("mean/novis", "mean", asks=T2),
    "with − without, “want you to move”": Pick("move-want/novis", "move-want", asks=T2),
    "with − without, “the block that you will move”": Pick("move-will/novis", "move-will", asks=T2),
    "visible blocks stated − without": Pick("move/novis", "move/stated", asks=T2),
    "question − statement": Pick("move/stated", "move", asks=T2),
    "question after Question B − without": Pick("move/novis", "move/after", asks=T2),
    "question in a first turn − without": Pick("move/novis", "move/twoturn", asks=T2),
    "block-count question − without": Pick("move/novis", "move/count", asks=T2),
}


def table2(a: Analysis) -> Layout:
    models = [m for m in models_of(a) if any(find(a, p, m) for p in TABLE2.values())]
    rows = [[name, *(ch(find(a, p, m)) for m in models)] for name, p in TABLE2.items()]
    rows = [r for r in rows if any(x != "–" for x in r[1:])]
    return Layout("Table 2", "Changes in the hidden-block choice rate under move, or under the "
                  "second question named, in points with 95% intervals, each model's conditions "
                  "in one batch.", ["change", *map(a.label, models)], rows if models else [],
                  [OURS.format(what="table") + " A row per change, a column per model.",
                   "∗: an increase or a decrease by the rule of §3; †: the interval excludes zero "
                   "but falls short of the correction; ‡: cut at ±100 points; –: not asked."])


def table3(a: Analysis) -> Layout:
    models = models_of(a, lambda m: any(b.asks(m) for b in a.design.batches))
    batches = a.design.batches
    rows = []
    for m in models:
        cells = []
        for b in batches:
            asked = b.conditions_for(m)
            cells.append("" if not asked else "•" if len(asked) == len(b.conditions) else "(•)")
        rows.append([a.label(m), *cells])
    rows_said = [f"{i} {b.name} ({', '.join(b.sets)}): {', '.join(b.conditions)}"
                 + (f"; {b.note}" if b.note else "") for i, b in enumerate(batches, 1)]
    return Layout("Table 3", "The batches and the sections that compare their conditions. "
                  "•: the model answers them.", ["model", *(str(i) for i in
                                                            range(1, len(batches) + 1))], rows,
                  ["Layout ours: the paper's batches are its rows; here they are the columns, "
                   "numbered as its rows, so that the grid fits a terminal.",
                   "(•): the model answers only some of the batch's conditions (the paper's "
                   "notes a and b; the design file says which).", "Batches: " + " | ".join(rows_said)])


def table4(a: Analysis) -> Layout:
    return rates_per_model(
        a, "Table 4", "Under the combined constraint: choices of the director-view block, and "
        "the share of the other choices that take the largest-digit visible block.", COMBINED,
        {"DV choices, base (%)": ("move", "dv"), "DV choices, constraint (%)": ("move+combined", "dv"),
         "LDV of the other choices, constraint (%)": ("move+combined", "ldv_other")},
        ["LDV of the other choices counts the scenes where the largest-digit visible block is "
         "not the director-view block."])


def table5(a: Analysis) -> Layout:
    return per_model(a, "Table 5", "Changes with the visibility question under move and mean, "
                      "with the combined constraint, and visibility accuracy under mean minus "
                      "under move against the ±10-point margin (main and rotated sets).", {
                          "visibility question, move": VIS_MOVE,
                          "visibility question, mean": VIS_MEAN,
                          "combined constraint, hidden": COMBINED,
                          "accuracy mean − move, main": Pick("move", "mean", "accuracy",
                                                             on="main", margin=True),
                          "accuracy mean − move, rotated": Pick("move", "mean", "accuracy",
                                                                on="rotated", margin=True)},
                      notes=["Each cell: the first batch of the design that asks it."])


def table6(a: Analysis) -> Layout:
    count = Pick("move/novis", "move/count")
    rows, batches = [], []
    for m, c, b in each_model(a, count):
        rows.append([a.label(m), ch(c), ch(find(a, VIS_MOVE, m, b))])
        batches.append(b)
    return with_batches(Layout(
        "Table 6", "The block-count question in the place of the visibility question: changes "
        "in the hidden-block choice rate under move, and the visibility question's change in "
        "the same batch.", ["model", "block-count question", "visibility question"], rows,
        [OURS.format(what="table")]), batches)


def table7(a: Analysis) -> Layout:
    return per_model(a, "Table 7", "The visibility question's change under move in the scenes "
                      "where the hidden block carries the largest digit and where it does not.", {
                          "hidden block carries the largest digit":
                              Pick("move/novis", "move", where="hidden-top-digit"),
                          "hidden block does not": Pick("move/novis", "move",
                                                        where="hidden-not-top-digit")})


def table8(a: Analysis) -> Layout:
    want = Pick("move", "move-want")
    return rates_per_model(
        a, "Table 8", "The two rewordings of move's second line: hidden-block choice rates and "
        "changes against move.", want,
        {"move (%)": ("move", "hidden"), "“want you to move” (%)": ("move-want", "hidden"),
         "“the block that you will move” (%)": ("move-will", "hidden")},
        changes={"want − move": want, "will − move": Pick("move", "move-will")})


def table9(a: Analysis) -> Layout:
    rows, batches = [], []
    for m, _, b in each_model(a, COMBINED):
        h, hl = (rate(a, m, b, "move+combined", x) for x in ("hidden", "hidden_listed"))
        k = "–" if h is None or hl is None else (
            f"{round(hl.share * hl.n)} of {round(h.share * h.n)}")
        rows.append([a.label(m), rt(h), rt(hl), k])
        batches.append(b)
    return with_batches(Layout(
        "Table 9", "Under the combined constraint: hidden-block choices, and those whose "
        "visibility report lists the hidden block as visible (Muse Glimmer-30B's 18.1% in the "
        "paper).", ["model", "hidden-block choices (%)", "with the hidden block listed (%)",
                    "listed, of the choices"], rows, [OURS.format(what="table")]), batches)


def table10(a: Analysis) -> list[Layout]:
    joint = "joint rate (%)"
    pad = Pick("move", "move+padding", "joint")
    know, ref = Pick("move", "move+knowledge", "joint"), Pick("move", "move+reference", "joint")
    out = [
        rates_per_model(a, "Table 10a", "Each clause alone, padded to the constraint's length: "
                         "joint rates and changes against the base prompt.", know,
                         {f"base, {joint}": ("move", "joint"),
                          f"knowledge clause, {joint}": ("move+knowledge", "joint"),
                          f"reference clause, {joint}": ("move+reference", "joint")},
                         changes={"knowledge − base": know, "reference − base": ref}),
        rates_per_model(a, "Table 10b", "The padding sentence alone where the constraint "
                         "stands: joint rates and the change against the base prompt.", pad,
                         {f"base, {joint}": ("move", "joint"),
                          f"constraint, {joint}": ("move+combined", "joint"),
                          f"padding, {joint}": ("move+padding", "joint")},
                         changes={"padding − base": pad}),
    ]
    main, rearr = (Pick("move", "move+combined", "joint", set=s) for s in ("main", "rearranged"))
    rows, batches = [], []
    for m, _, b in each_model(a, main):
        cells = []
        for set_, pick in (("main", main), ("rearranged", rearr)):
            cells += [rt(rate(a, m, b, cond, "joint", set_)) for cond in ("move", "move+combined")]
            cells.append(ch(find(a, pick, m, b)))
        rows.append([a.label(m), *cells])
        batches.append(b)
    c = with_batches(Layout(
        "Table 10c", "The main set as drawn and a copy with the digits rearranged: joint rates "
        "under the base prompt and the combined constraint, and the constraint's change.",
        ["model", *(f"{s}, {x}" for s in ("as drawn", "rearranged")
                    for x in (f"base, {joint}", f"constraint, {joint}", "constraint − base"))],
        rows, [OURS.format(what="table")]), batches)
    vis_c = Pick("move/novis+combined", "move+combined")
    d = rates_per_model(a, "Table 10d", "The visibility question under the base prompt and "
                         "under the combined constraint: hidden-block choice rates and changes.",
                         vis_c, {"without (%)": ("move/novis", "hidden"),
                                 "with (%)": ("move", "hidden"),
                                 "constraint, without (%)": ("move/novis+combined", "hidden"),
                                 "constraint, with (%)": ("move+combined", "hidden")},
                         changes={"question, base": VIS_MOVE, "question, constraint": vis_c})
    return [*out, c, d]


def table11(a: Analysis, coding: dict[str, Any] | None) -> Layout:
    caption = ("Coded reasoning traces: the traces that work out which blocks the director "
               "can see, and the hidden-block choices by whether the trace takes the director "
               "to see the chosen block.")
    cols = ["model", "batch", "condition", "coded traces", "work out (%)", "hidden-block choices",
            "seen", "unseen", "not stated"]
    if not coding:
        return Layout("Table 11", caption, cols, [], ["not coded: run `unseen director code RUN "
                                                      "--coder SPEC` first."])
    hidden = {(h["model"], h["batch"], h["condition"]): h for h in coding["hidden"]}
    rows = []
    for r in coding["readings"]:
        h = hidden.get((r["model"], r["batch"], r["condition"]), {})
        rows.append([a.label(r["model"]), r["batch"], r["condition"], str(r["coded"]),
                     "–" if r["works_out"] is None else pct(r["works_out"]),
                     str(h.get("hidden_choices", 0)),
                     *(str(h.get(s, 0)) for s in ("seen", "unseen", "not_stated"))])
    return Layout("Table 11", caption, cols, rows, [OURS.format(what="table") + " Counts of "
                                                    "the main coding pass."])


def table12(a: Analysis) -> Layout:
    know = Pick("move", "move/know")
    left = Pick("move", "move/know", where="report-excludes-hidden")
    return rates_per_model(
        a, "Table 12", "The knowledge question in the place of the visibility question: "
        "hidden-block choice rates among all replies and among those whose report leaves the "
        "hidden block out.", know,
        {"visibility question (%)": ("move", "hidden"), "knowledge question (%)": ("move/know", "hidden"),
         "report leaves it out: visibility q. (%)": ("move", "hidden_left_out"),
         "report leaves it out: knowledge q. (%)": ("move/know", "hidden_left_out")},
        changes={"knowledge − visibility": know,
                 "knowledge − visibility, report leaves it out": left})


def table13(a: Analysis) -> Layout:
    batches = [(i, b.name) for i, b in enumerate(a.design.batches, 1)
               if "move" in b.conditions and "main" in b.sets]
    rows = []
    for m in models_of(a):
        shares = [rate(a, m, b, "move", "hidden") for _, b in batches]
        have = [s.share for s in shares if s is not None]
        if have:
            rows.append([a.label(m), *(pct(s.share) if s else "–" for s in shares),
                         pct(max(have) - min(have)) if len(have) > 1 else "–"])
    return Layout("Table 13", "The base prompt with move across the batches: hidden-block "
                  "choice rate (%) in each batch, and its spread (points).",
                  ["model", *(str(i) for i, _ in batches), "spread"], rows,
                  [OURS.format(what="table") + " Main set; a column per batch, numbered as in "
                   "Table 3: " + ", ".join(f"{i} {b}" for i, b in batches) + "; spread: the "
                   "largest minus the smallest, in points."])


def layouts(a: Analysis, coding: dict[str, Any] | None = None) -> list[Layout]:
    """Every numbered table and figure the paper's text describes, in the paper's order."""
    tables = [table2(a), table3(a), table4(a), table5(a), table6(a), table7(a), table8(a),
              table9(a), *table10(a), table11(a, coding), table12(a), table13(a)]
    return tables + figures(a)


# --- rendering -------------------------------------------------------------------------------


def _heading(a: Analysis) -> list[str]:
    first = (f"Director study {a.design.name}: the paper's tables and figures by number, "
             f"{a.n_replies} replies")
    if a.dropped_apparent:
        first += "; scenes with the apparent-size flag left out"
    return [first, *([SIMULATED.format(models=", ".join(a.simulated))] if a.simulated else [])]


def render(a: Analysis, lays: list[Layout], fmt: str = "table", width: int | None = None) -> Any:
    """``lays`` as ``json``, ``md`` or ``latex`` text, or a rich renderable (``table``, for a
    console ``width`` wide: a table too wide goes on in a continued one)."""
    head = _heading(a)
    empty = "nothing of this in the run (its design does not ask it)"
    if fmt == "json":
        return json.dumps({"heading": head, "simulated": a.simulated,
                           "layouts": [{k: v for k, v in asdict(x).items() if k != "figure"}
                                       for x in lays]}, indent=2, ensure_ascii=False)
    if fmt == "md":
        out = [f"## {head[0]}", "", *(f"**{h}**" for h in head[1:]), ""]
        for x in lays:
            out += [f"### {x.number}. {x.caption}", ""]
            out += md_table(x.columns, x.rows, 1) if x.rows else [f"_{empty}_"]
            out += ["", *(f"_{n}_" for n in x.notes), ""]
        return "\n".join(out)
    if fmt == "latex":
        out = [f"% {tex(h)}" for h in head] + [""]
        if a.simulated:
            out += [r"\noindent\textbf{SIMULATED}:" + tex(head[1].split(":", 1)[1]) + r"\par", ""]
        for x in lays:
            if not x.rows:
                out += [f"% {tex(x.number)}: {tex(empty)}", ""]
                continue
            out += tex_tabular([tex(c) for c in x.columns], [[tex(c) for c in r] for r in x.rows],
                               "l" * len(x.columns), f"{x.number}. {x.caption}")
            # the notes under the table, visible in the document
            out += [r"\par{\footnotesize " + " ".join(tex(n) for n in x.notes) + r"}\par", ""]
        return "\n".join(out)
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(head[0], style="bold"),
                        *(Text(h, style="bold magenta") for h in head[1:])]
    for x in lays:
        # columns that do not fit ``width`` beside the first go on in a continued table; a
        # cell breaks only between its estimate, interval and verdict (an interval never),
        # the first column's labels only between their pieces (``table_fit``)
        need, level, chunks = plan(x, width)
        # the number, caption and notes as paragraphs of the console's width, not the table's
        parts += [Text(""), Text(f"{x.number}. {x.caption}", style="bold")]
        if not x.rows:
            parts.append(Text(empty, style="dim"))
            continue
        for k, cols in enumerate(chunks):
            t = Table(box=box.SIMPLE_HEAD,
                      title=f"{x.number} (continued)" if k else None, title_justify="left")
            for i in cols:  # a heading folds at its spaces to its column's width
                title = "\n".join(textwrap.wrap(x.columns[i], max(need[i], 1))) or x.columns[i]
                t.add_column(title, justify="left" if i == 0 else "right",
                             no_wrap=i != 0, min_width=need[i])
            for r in x.rows:
                first = "\n".join(fold(r[0], max(need[0], 1)))
                t.add_row(*(Text(first if i == 0 else "\n".join(_apart(r[i], level)))
                            for i in cols))
            parts.append(t)
        parts += [Text(n, style="dim") for n in x.notes]
    return Group(*parts)


def plan(x: Layout, width: int | None) -> tuple[list[int], int, list[list[int]]]:
    """How ``x`` is drawn ``width`` wide: each column's width, the fold level of its cells
    (:func:`_apart`: broken further only where that saves a part) and the columns of each
    part (:func:`_chunks`)."""
    need, level = _needs(x, 0), 0
    if not width:
        return need, level, _chunks(need, 10**6)
    for deeper in (1, 2):
        if len(_chunks(need, width)) > 1:
            narrow = _needs(x, deeper)
            if len(_chunks(narrow, width)) < len(_chunks(need, width)):
                need, level = narrow, deeper
    if level == 2:  # the labels as wide as the widest part leaves room for
        rest = max(sum(need[i] + 3 for i in c[1:]) for c in _chunks(need, width))
        need[0] = max(need[0], min(_needs(x, 1)[0], width - rest - 3))
    return need, level, _chunks(need, width)


_VERDICTS = (" not within", " within")


def _apart(cell: str, level: int) -> list[str]:
    """A cell's lines at a fold ``level``: 0 whole; 1 the margin verdict on its own line
    (``+16.7 [-68.7, 100.0]‡`` / ``not within``); 2 the estimate above its interval too
    (``+16.7`` / ``[-68.7, 100.0]‡``). An interval never breaks."""
    if level == 0:
        return [cell]
    tail = next((t for t in _VERDICTS if cell.endswith(t)), None)
    lines = [cell[: -len(tail)], tail.strip()] if tail else [cell]
    if level >= 2 and " [" in lines[0]:
        estimate, interval = lines[0].split(" [", 1)
        lines[:1] = [estimate, "[" + interval]
    return lines


def _needs(x: Layout, level: int) -> list[int]:
    """Each column's width: its longest cell line at the fold ``level`` (:func:`_apart`) and
    its heading's longest word; the first column's labels fold between their pieces, at
    level 2 down to their longest piece."""
    need = [max([max(len(p) for p in _apart(r[i], level)) for r in x.rows] +
                [len(w) for w in x.columns[i].split()])
            for i in range(len(x.columns))]
    pieces = max((longest_piece(r[0]) for r in x.rows), default=1)
    need[0] = pieces if level >= 2 else \
        max(min(max((len(r[0]) for r in x.rows), default=1), 22), pieces)
    return need


def _chunks(need: list[int], width: int) -> list[list[int]]:
    """The column indices of each part of a table too wide for ``width``: the first column
    in every part, the others in order (3 characters of padding each), spread evenly over
    as few parts as fit, so the last is no lone column where another spread fits."""
    def greedy(cap: int) -> list[list[int]]:
        out: list[list[int]] = [[0]]
        used = need[0] + 3
        for i in range(1, len(need)):
            full = len(out[-1]) > cap or used + need[i] + 3 > width
            if full and len(out[-1]) > 1:
                out.append([0])
                used = need[0] + 3
            out[-1].append(i)
            used += need[i] + 3
        return out

    fewest = greedy(len(need))
    parts = len(fewest)
    even = greedy(-(-(len(need) - 1) // parts))  # ceil: columns per part, spread evenly
    return even if len(even) == parts else fewest
