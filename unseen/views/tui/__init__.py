"""``unseen tui``: the index (``index.py``, from ``RunDir.heads()``) and the app (``app.py``)."""

from __future__ import annotations

from .app import TuiApp, run_tui
from .index import Index, build_index

__all__ = ["Index", "TuiApp", "build_index", "run_tui"]
