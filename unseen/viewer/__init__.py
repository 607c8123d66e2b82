"""``unseen view``: a live viewer of runs in the browser (``server``: the page and its JSON;
``index``: the runs and their rows; ``pages``: a trajectory as the page shows it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from .index import Catalog, ViewError
from .server import ViewServer

__all__ = ["Catalog", "ViewError", "ViewServer", "serve"]


async def serve(paths: list[str | Path], *, port: int = 0,
                announce: Callable[[str], None] = print,
                stop: asyncio.Event | None = None) -> None:
    """Serve the viewer of ``paths`` until ``stop`` is set (or the task is cancelled)."""
    catalog = Catalog(paths)
    # the index is built before the address is printed, so the first screen only sends it
    await asyncio.to_thread(catalog.listing)
    server = ViewServer(catalog, port)
    url = await server.start()
    n = len(catalog.runs)
    announce(f"unseen view: {n} run{'s' * (n != 1)} at {url} (Ctrl-C stops)")
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await server.stop()
