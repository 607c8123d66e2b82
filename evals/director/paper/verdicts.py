"""Which verdicts change when a subset of the scenes is analysed again (the appendix's
"Apparent size from the director's side": "Recomputed without these scenes, the intervals in
Table 5 ... exclude zero on the same models as on all scenes, with one addition").

A comparison's verdict on one model (:func:`verdict`) is what the tables claim of it: an
increase or a decrease with its mark (∗ survives the correction, † does not), an interval
that includes zero, for a margin test within or not within the margin, or the status where
nothing was estimated. :func:`changed` lists each (comparison, model) whose verdict differs
between the full analysis and the other one, with both estimates.
"""

from __future__ import annotations

import json
from typing import Any

from ..analysis.analyze import NOT_ASKED, Analysis, Change
from ..analysis.shown import md_table, pct, tex, tex_tabular, what
from .picks import ch


def verdict(c: Change, margin: float) -> str:
    """What the tables claim of a change: "increase ∗", "decrease †", "includes zero",
    "within ±10.0" / "not within ±10.0" (margin tests), or the status."""
    if not c.ok:
        return c.status
    if c.comparison.margin:
        return f"{'' if c.equivalent else 'not '}within ±{pct(margin)}"
    if c.raw is None or not c.raw.excludes_zero:
        return "includes zero"
    direction = "increase" if (c.diff or 0) > 0 else "decrease"
    return f"{direction} {'∗' if c.mark == '*' else '†'}" if c.mark else direction


def changed(full: Analysis, part: Analysis) -> list[dict[str, str]]:
    """Every (comparison, model) asked in both analyses whose verdict differs, in design
    order: its title, the model, and each analysis's estimate with its verdict."""
    before = {(c.index, c.model): c for c in full.changes}
    out = []
    for c in part.changes:
        b = before.get((c.index, c.model))
        if b is None or NOT_ASKED in (b.status, c.status):
            continue
        v0, v1 = verdict(b, full.margin), verdict(c, part.margin)
        if v0 != v1:
            k = c.comparison
            out.append({"comparison": k.title, "contrast": what(k), "model": part.label(c.model),
                        "all scenes": f"{ch(b)} ({v0})" if b.ok else v0,
                        "subset": f"{ch(c)} ({v1})" if c.ok else v1})
    return out


TITLE = "Verdicts that change without the apparent-size scenes (against all scenes)"
NONE = "No verdict changes: every comparison keeps its verdict on every model."


def render(rows: list[dict[str, str]], fmt: str) -> Any:
    """The list in ``md``, ``latex``, ``json`` (a list) or ``table`` (rich)."""
    cols = ["comparison", "model", "all scenes", "subset"]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False)
    if fmt == "md":
        body = [[r[c] for c in cols] for r in rows]
        return "\n".join([f"### {TITLE}", "", *(md_table(cols, body, 2) if rows else [f"_{NONE}_"])])
    if fmt == "latex":
        if not rows:
            return f"% {TITLE}: {NONE}"
        return "\n".join(tex_tabular(cols, [[tex(r[c]) for c in cols] for r in rows], "llll",
                                     TITLE))
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return Text(f"{TITLE}: {NONE}", style="bold")
    t = Table(title=TITLE, title_justify="left", box=box.SIMPLE_HEAD)
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(Text(r[c]) for c in cols))
    return t
