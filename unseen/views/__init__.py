"""The views: ``show``, ``tui``, ``export`` and the tables of ``compare``, ``curve`` and
``figure``, for any benchmark.

A benchmark's sections come from its :class:`BenchmarkViews` (``protocol.py``), registered
under the entry-point group ``unseen.views`` by the benchmark's name (``registry.py``); one
without any is shown by the generic views (``generic.py``). Everything the views share
(panels, styles, terminal-safe text, HTML escaping and CSS) is in ``common.py``; no view
branches on a benchmark's name.
"""

from __future__ import annotations

from .protocol import (
    BenchmarkViews,
    CompareOptions,
    CurveOptions,
    ExportOptions,
    ExportPage,
    FigureOptions,
    Filters,
    Pane,
    Section,
    TuiRow,
    TuiRun,
)
from .registry import open_runs, register, views_for

__all__ = [
    "BenchmarkViews", "CompareOptions", "CurveOptions", "ExportOptions", "ExportPage",
    "FigureOptions", "Filters", "GenericViews", "Pane", "Section", "TuiRow", "TuiRun", "narrow",
    "open_runs", "register", "views_for",
]

# what a plug-in's views build on, imported when asked for: the listings and `--help` stay
# light (the generic views bring the tables and images)
_LAZY = {"GenericViews": ".generic", "narrow": ".select"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
