"""Picking a study's numbers for the paper's numbered tables and figures.

A cell is picked by content, not by a design's labels, so any design that asks a comparison
fills it: for a model, the first comparison in design order with the wanted base, variant,
measure and stratum (:class:`Pick`), as the paper takes grok-4.6's change with the
visibility question from the count batch because row 1 does not ask it. A change is shown as
"+12.3 [4.5, 20.1]∗", a rate as "45.0 [38.1, 52.2]" (percent, 95% intervals); "–" is not
asked. :class:`Layout` is one numbered table or figure as shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.analyze import NOT_ASKED, Analysis, Change, Share
from ..analysis.shown import change_cells, interval, pct

OURS = "Layout ours: the text gives what the {what} shows, not its layout."


@dataclass
class Layout:
    """One numbered table or figure: its cells as shown, and what to say under it."""

    number: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    figure: dict[str, Any] | None = None  # what paper_figures draws (figures only)

    @property
    def empty(self) -> bool:
        return not self.rows


@dataclass(frozen=True)
class Pick:
    """The comparison a cell shows: ``variant`` minus ``base`` in ``measure`` over ``where``;
    ``set`` the comparison's own set; ``asks`` a condition its batch must ask; ``on``: a
    scene set its batch must ask."""

    base: str
    variant: str
    measure: str = "hidden"
    where: str = "all"
    set: str | None = None
    asks: tuple[str, ...] = ()
    on: str | None = None
    margin: bool = False

    def fits(self, a: Analysis, c: Change, batch: str | None = None) -> bool:
        k = c.comparison
        if (k.base, k.variant, k.measure, k.where, k.set, k.margin) != (
                self.base, self.variant, self.measure, self.where, self.set, self.margin):
            return False
        b = a.design.batch(k.batch)
        return ((batch is None or k.batch == batch)
                and (not self.asks or any(x in b.conditions for x in self.asks))
                and (self.on is None or self.on in b.sets))


def find(a: Analysis, pick: Pick, model: str, batch: str | None = None) -> Change | None:
    """The first change in design order that ``pick`` fits for ``model``: an estimated one
    where there is one, else the first asked one (its status says why no estimate)."""
    fits = [c for c in a.changes if c.model == model and pick.fits(a, c, batch)]
    fits.sort(key=lambda c: c.index)
    return (next((c for c in fits if c.ok), None)
            or next((c for c in fits if c.status != NOT_ASKED), None))


def rate(a: Analysis, model: str, batch: str, cond: str, measure: str,
         set_: str = "main") -> Share | None:
    r = a.rate(model, batch, set_, cond)
    return r.shares.get(measure) if r is not None else None


def ch(c: Change | None) -> str:
    """A change as shown: points, interval, mark (or the margin verdict); "–" not asked."""
    if c is None or c.status == NOT_ASKED:
        return "–"
    v = change_cells(c)
    if not c.ok:
        return v["diff"]
    tail = f" {v['verdict']}" if c.comparison.margin else v["mark"]
    return f"{v['diff']} {v['interval']}{tail}"


def each_model(a: Analysis, pick: Pick) -> Iterator[tuple[str, Change, str]]:
    """(model, its change, the change's batch) for each model ``pick`` finds, in order."""
    for m in models_of(a):
        c = find(a, pick, m)
        if c is not None:
            yield m, c, c.comparison.batch


def rt(s: Share | None) -> str:
    return "–" if s is None else f"{pct(s.share)} {interval(s.low, s.high, ends=pct)}"


def models_of(a: Analysis, keep: Callable[[str], bool] = lambda m: True) -> list[str]:
    """The run's models in the design's order (the order of the paper's tables), kept."""
    named = [m for m in a.design.named_models() if m in a.models]
    return [m for m in named + [m for m in a.models if m not in named] if keep(m)]


def per_model(a: Analysis, number: str, caption: str, cols: dict[str, Pick], what: str = "table",
               notes: Sequence[str] = ()) -> Layout:
    """A row per model asked any of ``cols``, a column of changes per pick."""
    rows = []
    for m in models_of(a):
        cells = [find(a, p, m) for p in cols.values()]
        if any(c is not None for c in cells):
            rows.append([a.label(m), *map(ch, cells)])
    return Layout(number, caption, ["model", *cols], rows, [OURS.format(what=what), *notes])



VIS_MOVE = Pick("move/novis", "move")
VIS_MEAN = Pick("mean/novis", "mean")
COMBINED = Pick("move", "move+combined")


def rates_per_model(a: Analysis, number: str, caption: str, pick: Pick,
                    cols: dict[str, tuple[str, str]], notes: Sequence[str] = (),
                    set_: str = "main", changes: dict[str, Pick] | None = None,
                    figure: str | None = None) -> Layout:
    """A row per model: rates (condition, measure) in the batch of ``pick``'s change, then
    the changes of ``changes`` in that batch. ``figure``: what the rates are, to draw them
    as bars (a group per model, a bar per column)."""
    rows, batches, labels = [], [], []
    series: dict[str, list[Share | None]] = {k.removesuffix(" (%)"): [] for k in cols}
    for m, _, b in each_model(a, pick):
        shares = [rate(a, m, b, cond, meas, set_) for cond, meas in cols.values()]
        for name, s in zip(series, shares, strict=True):
            series[name].append(s)
        cells = [*map(rt, shares), *(ch(find(a, p, m, b)) for p in (changes or {}).values())]
        rows.append([a.label(m), *cells])
        batches.append(b)
        labels.append(a.label(m))
    what = "figure" if figure else "table"
    lay = with_batches(Layout(number, caption, ["model", *cols, *(changes or {})], rows,
                              [OURS.format(what=what) + (" Bars per model, 95% intervals."
                                                         if figure else ""), *notes]), batches)
    if figure:
        lay.figure = {"kind": "bars", "labels": labels, "series": series,
                      "ylabel": f"{figure} (% of answered replies)"}
    return lay


def with_batches(lay: Layout, batches: list[str]) -> Layout:
    """The batch each row comes from: one note where all rows share it, else a column."""
    if len(set(batches)) == 1:
        lay.notes.append(f"Batch: {batches[0]}.")
    elif batches:
        lay.columns.append("batch")
        for row, b in zip(lay.rows, batches, strict=True):
            row.append(b)
    return lay
