"""Which views show a benchmark's runs: the entry-point group ``unseen.views``, by the
benchmark's name; :func:`register` adds views in process (tests, notebooks).

:func:`views_for` never fails for a benchmark without views: it gets the generic ones
(``views.generic``). Views that leave a method of :class:`~.protocol.BenchmarkViews` out get
the generic method in its place.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..engine.plugins import Registry
from ..engine.rundir import RunDir, RunDirError
from .protocol import BenchmarkViews

ENTRY_POINT_GROUP = "unseen.views"
#: Views by benchmark name, through the registry every plug-in kind shares (an entry names
#: the views object, or its class: ``package.views:VIEWS``).
VIEWS: Registry[Any] = Registry(ENTRY_POINT_GROUP, "views")


def register(name: str, views: Any) -> Any:
    """Show the runs of benchmark ``name`` with ``views`` (an entry point does the same)."""
    VIEWS[name] = views
    return views


class _Completed:
    """A benchmark's views with the generic ones behind them."""

    def __init__(self, views: Any, generic: Any) -> None:
        self._views, self._generic = views, generic

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._views, name, None)
        return found if found is not None else getattr(self._generic, name)


def views_for(benchmark: str) -> BenchmarkViews:
    """The views of ``benchmark``'s runs: its own (completed by the generic ones), or the
    generic ones."""
    from .generic import GenericViews

    views = VIEWS.get(benchmark)
    if views is None:
        return GenericViews(benchmark)
    if isinstance(views, type):  # an entry point may name the class
        views = VIEWS[benchmark] = views()
    if isinstance(views, BenchmarkViews):
        return views
    # the generic sections (an export page's heading, the TUI's run node) take its title
    return _Completed(views, GenericViews(benchmark, title=getattr(views, "title", None),
                                          outcome=getattr(views, "outcome", None)))


def open_runs(paths: Sequence[str | Path], what: str) -> tuple[BenchmarkViews, list[RunDir]]:
    """The run directories (each checked to be one) and the views of their benchmark; runs
    of several benchmarks are refused, one line naming each kind."""
    runs = [RunDir.open(p) for p in paths]
    if not runs:
        raise RunDirError(f"{what}: give at least one run directory")
    kinds: dict[str, list[RunDir]] = {}
    for run in runs:
        kinds.setdefault(run.benchmark, []).append(run)
    if len(kinds) > 1:  # named in the order of their names, whatever the order given
        *rest, last = sorted(kinds)
        raise RunDirError(
            f"cannot {what} {', '.join(views_for(k).title for k in rest)} runs ("
            + ", ".join(str(r.path) for k in rest for r in kinds[k])
            + f") together with {views_for(last).title} runs ("
            + ", ".join(str(r.path) for r in kinds[last])
            + f"): {what} each kind on its own")
    return views_for(runs[0].benchmark), runs
