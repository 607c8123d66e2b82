"""The TUI's index: each run's ``RunDir.heads()`` (one streaming pass over the journal, steps
never parsed) turned into rows by the run's benchmark views, grouped by (run, model,
strategy). A whole record is read, by seeking to its place, only when it is selected."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ...engine.records import TrajectoryRecord
from ...engine.rundir import RunDir
from ...engine.sanitize import clean, shown_now
from ..protocol import TuiRow, TuiRun
from ..registry import views_for


@dataclass
class Index:
    dirs: list[RunDir]
    runs: list[TuiRun]
    entries: list[TuiRow]
    groups: dict[tuple[int, str, str], list[TuiRow]] = field(default_factory=dict)

    def read(self, row: TuiRow) -> TrajectoryRecord:
        """The full record of ``row`` (one seek, one line), checked in full and made safe to
        show (no control sequence, no secret)."""
        run = self.dirs[row.run]
        return cast(TrajectoryRecord, clean(run.record(row.head)))  # the same shape, cleaned


def _memo(safe: Callable[[str], str]) -> Callable[[str], str]:
    """``safe``, once per distinct text (models and strategies repeat), interned."""
    seen: dict[str, str] = {}

    def once(text: str) -> str:
        found = seen.get(text)
        if found is None:
            found = seen[text] = sys.intern(safe(text))
        return found

    return once


def build_index(run_dirs: list[str | Path]) -> Index:
    """Every run's current trajectories as rows, grouped; a path that is not a run
    directory, or a damaged journal, is one line naming it."""
    dirs: list[RunDir] = []
    runs: list[TuiRun] = []
    entries: list[TuiRow] = []
    safe = _memo(shown_now())
    for ri, path in enumerate(run_dirs):
        run = RunDir.open(path)
        tui = views_for(run.benchmark).tui(run)
        dirs.append(run)
        runs.append(tui)
        for head in run.heads():
            row = tui.row(head, ri)
            row.label, row.note = safe(row.label), safe(row.note)
            row.model = safe(row.model or head.model)
            row.strategy = safe(row.strategy or head.strategy)
            row.instance_id = safe(row.instance_id or head.instance_id)
            entries.append(row)
    groups: dict[tuple[int, str, str], list[TuiRow]] = defaultdict(list)
    for e in entries:
        groups[(e.run, e.model, e.strategy)].append(e)
    for v in groups.values():
        v.sort(key=lambda e: (e.instance_id, e.sample))
    return Index(dirs, runs, entries, dict(sorted(groups.items())))
