"""Which views show a benchmark's runs: the entry-point group ``unseen.views``, by the
benchmark's name; :func:`register` adds views in process (tests, notebooks).

:func:`views_for` never fails for a benchmark without views: it gets the generic ones
(``views.generic``). Views that leave a method of :class:`~.protocol.BenchmarkViews` out get
the generic method in its place.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..engine.rundir import RunDir, RunDirError
from .protocol import BenchmarkViews

ENTRY_POINT_GROUP = "unseen.views"
_REGISTRY: dict[str, Any] = {}
_loaded = False


def register(name: str, views: Any) -> Any:
    """Show the runs of benchmark ``name`` with ``views`` (an entry point does the same)."""
    _REGISTRY[name] = views
    return views


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plug-in names itself instead of breaking all
            raise RunDirError(f"views plug-in {ep.name!r} ({ep.value}) failed to load: "
                              f"{type(exc).__name__}: {exc}") from None
        _REGISTRY.setdefault(ep.name, obj() if isinstance(obj, type) else obj)


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

    _load()
    views = _REGISTRY.get(benchmark)
    if views is None:
        return GenericViews(benchmark)
    if isinstance(views, BenchmarkViews):
        return views
    return _Completed(views, GenericViews(benchmark, outcome=getattr(views, "outcome", None)))


def open_runs(paths: list[str | Path], what: str) -> tuple[BenchmarkViews, list[RunDir]]:
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
