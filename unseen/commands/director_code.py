"""Coding a Director study's reasoning traces from Python: ``run_coding`` (the simulated
coder, the ``director-code`` task of ``sim``, is ``evals.director.sim_tasks``; its error rate
is the ``dir_coder_error`` knob).

``run_coding(run_dir, coder)`` runs the ``director-coding`` benchmark
(``evals.director.coding.benchmark``: the items picked, test traces mixed in, batches cut)
through the one run pipeline into ``RUN/coding/<pass>/``: resumable like any run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import run_async
from ..engine.results import RunResult
from ..engine.rundir import RunDir
from ..evals.director.coding.coder import MAX_EFFORT
from ..evals.director.coding.items import CodingError, pass_dir

__all__ = ["CodingError", "CodingResult", "run_coding", "run_coding_async"]


@dataclass
class CodingResult:
    """What a coding call did: the engine's result, the real items of the pass, the selected
    replies without a trace, the items a ``retry_uncoded`` call asked again, and the real
    items coded a second time."""

    run: RunResult
    items: int
    untraced: int
    retried: int | None = None
    repeats: int = 0  # real items coded a second time


async def run_coding_async(run_dir: str | Path, coder: str, *, second_pass: bool = False,
                           models: Iterable[str] = (), conditions: Iterable[str] = (),
                           batches_: Iterable[str] = (), sets: Iterable[str] = (),
                           batch_size: int = 20, tests: int = 30, repeats: int = 30,
                           seed: int = 0,
                           retry_uncoded: bool = False, concurrency: int = 4, cache: bool = True,
                           cache_dir: str | Path | None = None, timeout_s: float = 600.0,
                           max_attempts: int = 6, base_url: str | list[str] | None = None,
                           reasoning_effort: str = MAX_EFFORT, structured: bool = True,
                           progress: bool = True) -> CodingResult:
    """Code the study in ``run_dir`` with ``coder`` (a backend spec): the ``director-coding``
    benchmark (``evals.director.coding.benchmark``) through the one run pipeline, into
    ``RUN/coding/<pass>/``. ``repeats`` real items are coded a second time under new ids in
    the main pass (none in the second pass). ``retry_uncoded``: once every batch has run,
    ask again, in new batches, the items no reply coded (a quote not in the trace, an item
    left out, an unreadable reply)."""
    pass_ = "second" if second_pass else "main"
    folder = pass_dir(run_dir, pass_)
    options: dict[str, Any] = {"pass": pass_, "seed": seed, "batch_size": batch_size,
                               "tests": tests, "repeats": repeats, "retry_uncoded": retry_uncoded}
    result = await run_async(
        run_dir, (), [coder], benchmark="director-coding", out=folder, concurrency=concurrency,
        cache=cache, cache_dir=cache_dir, timeout_s=timeout_s, max_attempts=max_attempts,
        base_url=base_url, progress=progress, run_label="unseen director code",
        reasoning_effort=reasoning_effort, structured=structured, models=tuple(models),
        conditions=tuple(conditions), batches=tuple(batches_), sets=tuple(sets), **options)
    assert isinstance(result, RunResult)  # no dry run here
    config = RunDir(folder).config
    assert config is not None  # the run wrote it
    scoring = config.scoring
    return CodingResult(result, scoring["items"], scoring["untraced"], scoring.get("retried"),
                        repeats=min(scoring["repeats"], scoring["items"]))


def run_coding(run_dir: str | Path, coder: str, **kwargs: Any) -> CodingResult:
    """Synchronous :func:`run_coding_async`."""
    return asyncio.run(run_coding_async(run_dir, coder, **kwargs))
