"""The Director Task's views: ``show`` (``show.py``: rates per condition, a scene turn by
turn; ``png.py``: a trajectory as one PNG), the TUI (``tui.py``) and the HTML page
(``export.py``). Registered under the entry-point group ``unseen.views`` as ``director``;
coding runs (``director-coding``) are shown through their study, as :class:`CodingViews`
says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from ...engine.journal import RESUMABLE_ERRORS
from ...engine.rundir import Head, RunDir, RunDirError
from ..common import ExportResult
from ..protocol import (
    CompareOptions,
    CurveOptions,
    ExportOptions,
    ExportPage,
    FigureOptions,
    Filters,
)


def _study_tables(run: RunDir) -> RunDirError:
    return RunDirError(f"{run.path} is a Director Task study run: SceneFunRI tables, curves "
                       f"and figures do not apply; use `unseen director analyze {run.path}`")


class DirectorViews:
    title = "Director"

    def outcome(self, head: Head) -> str:
        """correct: the director-view block (a right report where no block is asked)."""
        if head.status == "answered":
            m = head.metrics
            verdict = m.get("accuracy") if m.get("dv") is None else m.get("dv")
            return "correct" if (verdict or 0) >= 1 else "wrong"
        return "error" if head.error_kind in RESUMABLE_ERRORS else "unanswered"

    def summary(self, run: RunDir, console: Console, filters: Filters) -> None:
        from .show import summary

        summary(run, console, filters)

    def instance(self, run: RunDir, instance_id: str, console: Console,
                 filters: Filters) -> None:
        from .show import scene_view

        scene_view(run, instance_id, console, filters)

    def strip_png(self, run: RunDir, instance_id: str, out: Path, filters: Filters):
        from .png import write_png

        return write_png(run, instance_id, out, strategy=filters.strategy, model=filters.model,
                         sample=filters.sample)

    def compare(self, runs: list[RunDir], options: CompareOptions, fmt: str,
                width: int | None) -> Any:
        raise _study_tables(runs[0])

    def curve(self, runs: list[RunDir], options: CurveOptions, notes: list[str]) -> Any:
        raise _study_tables(runs[0])

    def figure(self, runs: list[RunDir], options: FigureOptions) -> Any:
        raise _study_tables(runs[0])

    def tui(self, run: RunDir):
        from .tui import DirectorTui

        return DirectorTui(run, self)

    def export(self, runs: list[RunDir], out_dir: Path, options: ExportOptions,
               result: ExportResult) -> ExportPage:
        from .export import export

        return export(runs, out_dir, options, result)


class CodingViews:
    """A coding run (``STUDY/coding/PASS``) is shown through its study: every view says
    where to look."""

    title = "Director coding"

    def _refuse(self, run: RunDir) -> RunDirError:
        study = run.path.resolve().parent.parent
        return RunDirError(f"{run.path}: the coded traces of a Director study; see them with "
                           f"`unseen director codes {study}` or `unseen show {study} SCENE`")

    def outcome(self, head: Head) -> str:
        return "answered" if head.status == "answered" else "unanswered"

    def summary(self, run, console, filters):
        raise self._refuse(run)

    def instance(self, run, instance_id, console, filters):
        raise self._refuse(run)

    def strip_png(self, run, instance_id, out, filters):
        raise self._refuse(run)

    def compare(self, runs, options, fmt, width):
        raise self._refuse(runs[0])

    def curve(self, runs, options, notes):
        raise self._refuse(runs[0])

    def figure(self, runs, options):
        raise self._refuse(runs[0])

    def tui(self, run):
        raise self._refuse(run)

    def export(self, runs, out_dir, options, result):
        raise self._refuse(runs[0])


VIEWS = DirectorViews()
CODING_VIEWS = CodingViews()
