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
    "FigureOptions", "Filters", "Pane", "Section", "TuiRow", "TuiRun", "open_runs", "register",
    "views_for",
]
