"""Tables that fit the terminal: labels folded where they break well, columns left out by rule.

A strategy label folds after the ``:`` and ``,`` that separate its parameters, a model name
after ``/`` and at spaces, a Director condition after ``/`` and ``+``: ``direct:prompt=both``
becomes ``direct:`` / ``prompt=both``, never ``direct:prom`` / ``pt=both``. A label is broken
inside a piece (after a ``-`` or ``_``, then anywhere) only when a piece alone is wider than
the column.

:func:`fit` picks a table's columns by the width it gets, by one rule for every table: the
columns a table names to go first are left out, in order, until it fits; then its label
column folds, as little as the width allows, down to its longest piece; then the columns it
names to go last are left out. It returns the names left out, for the notes to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_PIECE = re.compile(r"[^:,/+ ]+[:,/+]*|[:,/+]+| +")


def pieces(label: str) -> list[str]:
    """``label`` cut after each ``:``, ``,``, ``/`` and ``+`` and at spaces (a piece keeps its
    separator; spaces are pieces of their own)."""
    return [p for p in _PIECE.findall(label) if p]


def longest_piece(label: str) -> int:
    """The narrowest column ``label`` folds into without breaking inside a piece."""
    return max((len(p) for p in pieces(label) if p.strip()), default=0)


def _split_long(piece: str, width: int) -> list[str]:
    """A piece wider than ``width``: after ``-`` or ``_`` where it can, else every ``width``."""
    out, rest = [], piece
    while len(rest) > width:
        cut = max(rest.rfind("-", 0, width), rest.rfind("_", 0, width))
        cut = cut + 1 if cut > 0 else width
        out.append(rest[:cut])
        rest = rest[cut:]
    return [*out, rest] if rest else out


def fold(label: str, width: int) -> list[str]:
    """``label`` as lines of at most ``width`` characters, broken only between pieces (see
    :func:`pieces`) unless one piece alone is wider; spaces at a break are dropped."""
    width = max(1, width)
    lines: list[str] = []
    line = ""
    for piece in pieces(label):
        if len(line) + len(piece.rstrip()) <= width:
            line += piece
            continue
        if line.strip():
            lines.append(line.rstrip())
        line = "" if piece.isspace() else piece
        if len(line) > width:
            *full, line = _split_long(line, width)
            lines += full
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


def least_width(cell: str) -> int:
    """The narrowest column ``cell`` folds into without breaking a word: its pieces (see
    :func:`pieces`) broken after their hyphens, never inside a word."""
    return max((len(w) for p in pieces(cell) if p.strip() for w in re.split(r"(?<=-)", p)),
               default=0)


def share(full: Sequence[int], least: Sequence[int], room: int) -> list[int]:
    """Column widths in ``room``: each column's ``full`` width, the widest narrowed first, one
    character at a time, none below its ``least`` (the sum may stay above ``room``)."""
    widths = list(full)
    while sum(widths) > room:
        wide = [i for i in range(len(widths)) if widths[i] > least[i]]
        if not wide:
            break
        widths[max(wide, key=lambda i: widths[i])] -= 1
    return widths


@dataclass(frozen=True)
class Label:
    """A cell of a table's label column: ``text`` after ``indent`` spaces, its further lines
    (when folded) after ``hang`` spaces."""

    text: str
    indent: int = 0
    hang: int = 0

    @property
    def widest(self) -> int:
        return len(self.text) + self.indent

    @property
    def narrowest(self) -> int:
        return longest_piece(self.text) + max(self.indent, self.hang)

    def show(self, width: int | None) -> str:
        """The cell folded to ``width`` columns (``None``: on one line)."""
        if width is None or self.widest <= width:
            return " " * self.indent + self.text
        lines = fold(self.text, width - max(self.indent, self.hang))
        return "\n".join([" " * self.indent + lines[0], *(" " * self.hang + x for x in lines[1:])])


def measure(table: Any) -> int:
    """The width ``table`` (any rich renderable) takes when nothing limits it."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=10_000)
    return Measurement.get(console, console.options, table).maximum


def fit(build: Callable[[int | None, list[str]], Any], labels: Sequence[Label], width: int | None,
        drop_first: Sequence[str] = (), drop_last: Sequence[str] = (), *, least: int = 0,
        ) -> tuple[Any, list[str]]:
    """The widest table ``build(label_width, left_out)`` that fits in ``width`` columns.

    ``build`` makes the table with its label column's cells shown at ``label_width``
    (:meth:`Label.show`; ``None``: unfolded) and without the columns named in ``left_out``.
    ``labels`` are the label column's cells. The columns of ``drop_first`` are left out, in
    their order, before any label is folded; those of ``drop_last`` only when folding the
    labels down to their longest piece (or to ``least`` columns, for prose that should not
    fold into a narrow column) is not enough. Returns the table and the names left out, in the
    order they went.
    """
    if width is None:
        return build(None, []), []
    widest = max((lab.widest for lab in labels), default=0)
    narrowest = max((lab.narrowest for lab in labels), default=0)
    narrowest = max(narrowest, min(least, widest))
    left_out: list[str] = []
    for name in [None, *drop_first, *drop_last]:
        if name is not None:
            left_out.append(name)
        table = build(None, left_out)
        if measure(table) <= width:
            return table, left_out
        if not labels or len(left_out) < len(drop_first):
            continue
        rest = measure(build(narrowest, left_out)) - narrowest
        if width - rest >= narrowest:
            return build(min(widest, width - rest), left_out), left_out
    # nothing left to leave out: the narrowest fold, the terminal does the rest
    return build(narrowest if labels else None, left_out), left_out
