"""What ``unseen view`` shows, as plain JSON: the runs it was given and, per run, one row per
trajectory as the run's benchmark lays it out (``TuiRun.row``: the outcome, a label, a note),
built from ``RunDir.heads()`` by the TUI's index (steps never parsed). A run is read again
only when its journal changed (size or time), so a finished run is read once and a running
one is followed as it grows; a whole record is read, by seeking, only when it is opened.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..engine.errors import UnseenError
from ..engine.journal import JOURNAL
from ..engine.lock import running
from ..engine.rundir import RunDir, kind_of, run_serving_lines, who
from ..engine.sanitize import shown_now
from ..views.protocol import TuiRow
from ..views.registry import views_for
from ..views.tui.index import Index, build_index

#: worst first: what failed, then what was wrong, then the rest
RANK = {"error": 0, "unanswered": 1, "wrong": 2, "answered": 3, "correct": 4}
MAX_METRICS = 8  # metric columns a table shows (the first the scorer wrote)


class ViewError(UnseenError, ValueError):
    """A path that holds no run directory, or an unknown run, instance or trajectory."""


def find_runs(paths: list[str | Path]) -> list[RunDir]:
    """Each path that is a run directory, and the run directories directly inside each one
    that is not (a folder of runs), in name order."""
    found: list[RunDir] = []
    for raw in paths:
        path = Path(raw)
        if (path / JOURNAL).is_file():
            found.append(RunDir.open(path))
        elif path.is_dir():
            inner = [RunDir.open(p) for p in sorted(path.iterdir())
                     if (p / JOURNAL).is_file()]
            if not inner:
                raise ViewError(f"{path}: neither a run directory nor a folder holding any")
            found += inner
        else:
            raise ViewError(f"{path}: no such run directory")
    if not found:
        raise ViewError("unseen view: give at least one run directory (or a folder of runs)")
    return found


def _grouped(labels: list[str], most: int = 4) -> list[str]:
    """The runs list's strategies: a strategy run in more than ``most`` settings as one
    entry (a Director study's 54 ``director:batch=...,condition=...`` as ``director (54
    settings)``), the others by their labels."""
    by: dict[str, list[str]] = {}
    for label in labels:
        by.setdefault(label.split(":", 1)[0], []).append(label)
    return [x for name, group in by.items()
            for x in ([f"{name} ({len(group)} settings)"] if len(group) > most else group)]


def _stamp(run: RunDir) -> tuple[int, int]:
    try:
        st = run.journal.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


@dataclass
class RunView:
    """One run: its rows (rebuilt when the journal changed) and its summary."""

    number: int
    run: RunDir
    stamp: tuple[int, int] = (-2, -2)
    index: Index | None = None
    rows: list[TuiRow] = field(default_factory=list)
    by_key: dict[str, TuiRow] = field(default_factory=dict)
    running: bool = False
    version: int = 0
    error: str = ""  # why the journal could not be read again (its last rows kept)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> None:
        """Read the journal's heads again if it changed since the last read. A journal
        damaged since the viewer started keeps the rows last read, and says why."""
        with self.lock:
            self.running = running(self.run.path)
            stamp = _stamp(self.run)
            if stamp == self.stamp and (self.index is not None or self.error):
                return
            try:
                self.index = build_index([self.run.path])
            except (UnseenError, ValueError, OSError) as exc:
                if self.index is None and self.version == 0:
                    raise  # at start: the command says it, one line
                self.error, self.stamp = str(exc), stamp
                return
            self.error = ""
            self.rows = self.index.entries
            self.by_key = {r.head.key: r for r in self.rows}
            self.stamp, self.version = stamp, self.version + 1

    @property
    def tui(self):
        """The run as its benchmark's views browse it (``TuiRun``)."""
        return self.index.runs[0] if self.index is not None else None

    @property
    def views(self):
        return views_for(self.run.benchmark)

    def summary(self) -> dict[str, Any]:
        cfg = self.run.config
        safe = shown_now()
        rows = self.rows
        simulated = any(r.head.simulated for r in rows) or bool(
            cfg and any(b.get("simulated") for b in cfg.backends))
        models = dict.fromkeys(who(r.model, r.head.kind) for r in rows)
        if cfg is not None and not models:
            models = dict.fromkeys(safe(who(str(b.get("model", "?")), kind_of(
                str(b.get("spec", "")), bool(b.get("simulated"))))) for b in cfg.backends)
        strategies = _grouped(list(dict.fromkeys(r.strategy for r in rows)))
        planned = cfg.planned_total() if cfg is not None else None
        return {
            "number": self.number, "name": safe(cfg.run if cfg else self.run.path.name),
            "path": safe(str(self.run.path)), "benchmark": safe(self.views.title),
            "models": list(models), "strategies": list(strategies),
            "done": len(rows), "planned": planned if planned and planned >= len(rows) else None,
            "started": safe(cfg.created_at) if cfg else "", "simulated": simulated,
            "running": self.running, "version": self.version,
            "outcomes": dict(Counter(r.outcome for r in rows)), "error": safe(self.error),
            "serving": [safe(line) for line in run_serving_lines(cfg)],
        }

    def table(self) -> dict[str, Any]:
        """The run's rows, worst first, with the columns its metrics fill."""
        metrics: dict[str, None] = {}
        for r in self.rows:
            for k, v in r.metrics.items():
                if isinstance(v, int | float) and len(metrics) < MAX_METRICS:
                    metrics.setdefault(k)
        names = list(metrics)
        ordered = sorted(self.rows, key=lambda r: (RANK.get(r.outcome, 3), r.instance_id,
                                                   r.model, r.strategy, r.sample))
        rows = [[r.head.key, r.instance_id, r.label, who(r.model, r.head.kind), r.strategy, r.sample, r.outcome,
                 r.note, *[_num(r.metrics.get(m)) for m in names]] for r in ordered]
        return {"summary": self.summary(), "metrics": names, "rows": rows}

    def row(self, key: str) -> TuiRow:
        found = self.by_key.get(key)
        if found is None:
            raise ViewError(f"run {self.number}: no trajectory {key!r}")
        return found

    def read(self, key: str) -> dict[str, Any]:
        """The whole record of trajectory ``key``, checked and made safe to show."""
        assert self.index is not None
        return cast(dict[str, Any], self.index.read(self.row(key)))  # the page reads it as JSON


def _num(v: Any) -> float | int | None:
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, int | float) else None


class Catalog:
    """The runs a viewer serves, by number (their place on the command line); a folder of
    runs is looked in again as the list is asked for, so a run started there since appears."""

    def __init__(self, paths: list[str | Path]) -> None:
        self.runs = [RunView(i, run) for i, run in enumerate(find_runs(paths))]
        self.folders = [Path(p) for p in paths if not (Path(p) / JOURNAL).is_file()]

    def _look_again(self) -> None:
        known = {v.run.path for v in self.runs}
        for folder in self.folders:
            try:
                found = sorted(p for p in folder.iterdir() if (p / JOURNAL).is_file())
            except OSError:  # the folder is gone: what was found stays
                continue
            for path in found:
                if path in known:
                    continue
                view = RunView(len(self.runs), RunDir(path))
                try:  # a run just started may not be readable yet: asked again next time
                    view.refresh()
                    view.summary()
                except (UnseenError, ValueError, OSError):
                    continue
                self.runs.append(view)
                known.add(path)

    def get(self, number: int) -> RunView:
        if not 0 <= number < len(self.runs):
            raise ViewError(f"no run {number}")
        view = self.runs[number]
        view.refresh()
        return view

    def listing(self) -> list[dict[str, Any]]:
        self._look_again()
        for view in self.runs:
            view.refresh()
        return [v.summary() for v in self.runs]
