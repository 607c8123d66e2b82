"""``unseen view``: a live viewer of runs in the browser (``server``: the page and its JSON;
``index``: the runs and their rows; ``pages``: a trajectory as the page shows it)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence
from pathlib import Path

from .index import Catalog, ViewError
from .server import ViewServer

__all__ = ["Catalog", "ViewError", "ViewServer", "serve"]


async def serve(paths: Sequence[str | Path], *, port: int = 0,
                announce: Callable[[str], None] = print,
                stop: asyncio.Event | None = None, signals: bool = False) -> None:
    """Serve the viewer of ``paths`` until ``stop`` is set (or the task is cancelled); with
    ``signals``, SIGINT (Ctrl-C) and SIGTERM set it, so the server ends cleanly."""
    stop = stop or asyncio.Event()
    if signals:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this OS
                loop.add_signal_handler(sig, stop.set)
    catalog = Catalog(list(paths))
    # the index is built before the address is printed, so the first screen only sends it
    await asyncio.to_thread(catalog.listing)
    server = ViewServer(catalog, port)
    url = await server.start()
    n = len(catalog.runs)
    announce(f"unseen view: {n} run{'s' * (n != 1)} at {url} (Ctrl-C stops)")
    try:
        await stop.wait()
    finally:
        await server.stop()
