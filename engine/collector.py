"""The cyclic garbage collector during a run: lighter, and as it was once the run ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: the youngest generation's threshold during a run: a run allocates and frees many small
#: objects per call, most gone before a collection at this size (Python's default, 700,
#: collected 650 times in a 1,008-call run)
RUN_GC_THRESHOLD = 10_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The youngest generation collected at :data:`RUN_GC_THRESHOLD` objects or more inside
    the block (imports and runs keep most of what they allocate, or free it at once), as it
    was after it."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], RUN_GC_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


@contextmanager
def lighter_gc() -> Iterator[None]:
    """The cyclic garbage collector, lighter while a run goes on: what existed before it
    (the imported libraries' hundreds of thousands of objects) is left out of its passes
    (``gc.freeze``; each full pass walked all of it), and :func:`fewer_collections`.
    Together they were about a tenth of a short run's CPU. Both are given back when the run
    ends, so nothing stays uncollected; a heap the process froze itself stays as it was."""
    froze = not gc.get_freeze_count()
    if froze:
        gc.freeze()
    try:
        with fewer_collections():
            yield
    finally:
        if froze:
            gc.unfreeze()
