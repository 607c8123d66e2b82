"""Coding a Director study's reasoning traces from Python: ``run_coding``, and the simulated
coder's wiring (the ``director-code`` task of ``sim``; its error rate is the ``dir_coder_error``
knob).

``run_coding(run_dir, coder)`` picks the items (``evals.director.coding.items.select``), mixes in
the test traces, cuts batches and runs the ``director-code`` strategy over them through the
engine into ``RUN/coding/<pass>/``: resumable like any run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import director as _director  # noqa: F401 - registers the dir_ knobs with sim
from .backends import connect, sim
from .engine.cache import ReplyCache
from .engine.journal import JOURNAL, RUN_FILE, iter_records, read_run_json
from .engine.lock import hold
from .engine.runner import Runner, RunResult
from .engine.types import RunConfig
from .evals.director.coding import coder as _coder  # noqa: F401 - registers `director-code`
from .evals.director.coding.coder import MAX_EFFORT, sim_code
from .evals.director.coding.items import (
    CodingError,
    add_retry_round,
    all_batches,
    pass_dir,
    save_items,
    select,
    with_tests,
)
from .settings import package_version
from .strategies import build

__all__ = ["CodingError", "CodingResult", "run_coding", "run_coding_async"]


@sim.task("director-code")
def _code(backend: sim.Sim, oracle: dict[str, Any], rng: Any) -> str:
    """A batch coded by reading the simulator's own traces back (``dir_coder_error``: the
    share of items given a wrong reading)."""
    return sim_code(oracle["items"], oracle["second_pass"], backend.extra("dir_").coder_error, rng)


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
    """Code the study in ``run_dir`` with ``coder`` (a backend spec). ``repeats`` real items
    are coded a second time under new ids in the main pass (none in the second pass).
    ``retry_uncoded``: once every batch has run, ask again, in new batches, the items no
    reply coded (a quote not in the trace, an item left out, an unreadable reply)."""
    pass_ = "second" if second_pass else "main"
    items, untraced = select(run_dir, pass_=pass_, models=models, conditions=conditions,
                             batches=batches_, sets=sets, seed=seed)
    if not items:
        raise CodingError(f"no reasoning traces to code in {run_dir} for this selection "
                          f"({untraced} selected replies carry none)")
    repeats = repeats if pass_ == "main" else 0
    ordered = with_tests(items, tests, pass_=pass_, seed=seed, repeats=repeats)
    folder = pass_dir(run_dir, pass_)
    with hold(folder, "unseen director code"):  # before the items file: one coder per pass
        old = _earlier(folder, coder, batch_size)
        save_items(folder, ordered)
        retried = None
        if retry_uncoded:
            finished = {rec["instance_id"] for rec in iter_records(folder / JOURNAL)}
            planned = [b.id for b in all_batches(folder, ordered, batch_size, pass_)]
            retried = len(add_retry_round(folder, ordered, finished, planned))
        instances = all_batches(folder, ordered, batch_size, pass_)
        spec = build(("director-code", {"reasoning_effort": reasoning_effort, "structured": structured}))
        reply_cache = ReplyCache(cache_dir) if cache else None
        client = connect(coder, concurrency=concurrency, cache=reply_cache, timeout_s=timeout_s,
                         max_attempts=max_attempts, base_url=base_url)
        try:
            config = RunConfig(
                run=folder.name, benchmark="director-coding", data=str(Path(run_dir).resolve()),
                dataset_fingerprint="", instances=len(instances),
                strategies=[{"name": spec.name, "label": spec.label, "params": spec.params.model_dump()}],
                backends=[{**client.describe(), "spec": client.spec}], concurrency=concurrency,
                cache=cache, scoring={"items": len(items), "tests": tests, "repeats": repeats,
                                      "batch_size": batch_size, "seed": seed, "pass": pass_},
                package_version=package_version(),
                created_at=old.created_at if old else datetime.now(UTC).isoformat(timespec="seconds"))
            runner = Runner(instances, [spec], [client], folder, config, samples=1, score=None,
                            progress=progress)
            result = await runner.run()
        finally:
            await client.aclose()
            if reply_cache is not None:
                reply_cache.close()
        return CodingResult(result, len(items), untraced, retried, repeats=min(repeats, len(items)))


def _earlier(folder: Path, coder: str, batch_size: int) -> RunConfig | None:
    """The config of an earlier call into ``folder``, checked: the same coder, and the same
    batch size (a batch's id must keep naming the same items)."""
    run_file = folder / RUN_FILE
    if not run_file.is_file():
        return None
    old = RunConfig.model_validate(read_run_json(folder))
    if old.backends and old.backends[0].get("spec") != coder:
        raise CodingError(f"{folder} was coded by {old.backends[0].get('spec')}; remove that "
                          "folder to code again with another coder")
    size = old.scoring.get("batch_size")
    if size is not None and size != batch_size:
        raise CodingError(f"{folder} was coded in batches of {size}: resume with "
                          f"--batch-size {size}, or remove that folder to start again")
    return old


def run_coding(run_dir: str | Path, coder: str, **kwargs: Any) -> CodingResult:
    """Synchronous :func:`run_coding_async`."""
    return asyncio.run(run_coding_async(run_dir, coder, **kwargs))
