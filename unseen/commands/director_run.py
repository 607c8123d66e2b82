"""Director Task studies from Python: ``run_study``, and the simulated respondent's wiring.

``run_study(design, backends, out)`` runs the ``director`` benchmark
(``evals.director.benchmark``: scene sets rendered where missing, every call planned in the
study's seeded order) through the one run pipeline into a resumable run directory. The
``sim`` backend learns the Director Task through the entry-point group ``unseen.sim_tasks``
(``evals.director.sim_tasks``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api import run_async
from ..engine.results import RunResult
from ..evals.director.study.design import Design
from ..evals.director.study.runner import StudyError

if TYPE_CHECKING:
    from ..dryrun import DryRunEstimate

__all__ = ["StudyError", "run_study", "run_study_async", "sim_in_every_place"]


def sim_in_every_place(design: Design, backends: Sequence[str]) -> list[str]:
    """A bare ``sim[:PROFILE][,knob=value...]`` whose model the design does not ask runs in
    the place of every model the design names and no other backend plays, each with its own
    seed (the spec's ``seed``, default 0, plus the model's position in the design): ``-b sim``
    for the paper design offline, instead of ten ``-b NAME=sim:default,seed=i``."""
    from ..api import parse_backend

    parsed = [parse_backend(b) for b in backends]
    models = list(dict.fromkeys(m for b in design.batches for m in b.models if m != "*"))
    taken = {name for _, name in parsed if name}
    out: list[str] = []
    for arg, (spec, name) in zip(backends, parsed, strict=True):
        provider, _, target = spec.partition(",")[0].partition(":")
        if name or provider != "sim" or any(
                b.asks(f"sim-{target or 'default'}") for b in design.batches):
            out.append(arg)
            continue
        head, *knobs = spec.split(",")
        seeds = [k for k in knobs if k.strip().startswith("seed=")]
        base = int(seeds[-1].partition("=")[2]) if seeds else 0
        rest = [k for k in knobs if k not in seeds]
        out += [f"{m}=" + ",".join([head, *rest, f"seed={base + i}"])
                for i, m in enumerate(models) if m not in taken]
    return out

async def run_study_async(design: Design, backends: Sequence[str], out: str | Path | None, *,
                          source: str = "", scenes: str | Path | None = None,
                          concurrency: int = 8, cache: bool = True,
                          cache_dir: str | Path | None = None, timeout_s: float = 600.0,
                          max_attempts: int = 6, backoff_base_s: float = 1.0,
                          base_url: str | list[str] | None = None, reasoning_effort: str = "medium",
                          temperature: float | None = None, max_tokens: int | None = None,
                          progress: bool = True, profiles: str | Path | None = None,
                          cache_tag: str | None = None,
                          max_image_side: int | None = None, max_cost: float | None = None,
                          prices: str | Path | None = None,
                          adaptive: bool = True, batch: bool = False,
                          batch_window_s: float = 2.0, batch_poll_s: float = 30.0,
                          dry_run: bool = False) -> RunResult | DryRunEstimate:
    """Run ``design`` against each backend (``SPEC`` or ``NAME=SPEC``) into ``out``: the
    ``director`` benchmark through the one run pipeline (``unseen.api.run_async``);
    ``max_cost`` (US dollars) stops it cleanly once the run directory's replies have spent
    it (those of earlier calls into ``out`` included).
    ``dry_run`` returns the study's plan (``unseen.dryrun.DryRunEstimate``: calls, tokens
    and cost per backend, each condition's one or two turns counted by running it against
    ``sim:director-oracle``) without a call to any provider and without writing to
    ``out``. A bare ``sim`` backend plays every model of the design (``sim_in_every_place``)."""
    return await run_async(
        None, (), sim_in_every_place(design, backends), benchmark="director", out=out, concurrency=concurrency,
        cache=cache, cache_dir=cache_dir, timeout_s=timeout_s, max_attempts=max_attempts,
        backoff_base_s=backoff_base_s, base_url=base_url, progress=progress,
        profiles=profiles, cache_tag=cache_tag, max_image_side=max_image_side,
        adaptive=adaptive, max_cost=max_cost, prices=prices, batch=batch,
        batch_window_s=batch_window_s, batch_poll_s=batch_poll_s, dry_run=dry_run,
        run_label="unseen director run", design=design, source=source, scenes=scenes,
        reasoning_effort=reasoning_effort, temperature=temperature, max_tokens=max_tokens)


def run_study(design: Design, backends: Sequence[str], out: str | Path | None,
              **kwargs: Any) -> RunResult | DryRunEstimate:
    """Synchronous :func:`run_study_async`."""
    return asyncio.run(run_study_async(design, backends, out, **kwargs))
