"""Director Task studies from Python: ``run_study``, and the simulated respondent's wiring.

``run_study(design, backends, out)`` runs the ``director`` benchmark
(``evals.director.benchmark``: scene sets rendered where missing, every call planned in the
study's seeded order) through the one run pipeline into a resumable run directory. Importing this module also teaches the ``sim`` backend the Director
Task: the ``director`` task and its ``dir_`` knobs and ``director-*`` profiles
(``evals.director.respondent``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .api import run_async
from .backends import sim
from .engine.runner import RunResult
from .evals.director import strategy as _strategy  # noqa: F401 - registers `director`
from .evals.director.respondent import DirectorKnobs, respond_with_trace
from .evals.director.runner import StudyError
from .evals.director.study import Design

__all__ = ["StudyError", "run_study", "run_study_async"]

#: Simulated Director respondents (knobs: ``evals.director.respondent.DirectorKnobs``).
SIM_PROFILES = {
    "director-flat": {"dir_uplift": 0.0, "dir_uplift_mean": 0.0, "dir_follow_report": 0.0},
    "director-strong": {"dir_uplift": 0.8, "dir_uplift_mean": 0.03, "dir_want_factor": 0.5,
                        "dir_will_factor": 1.1, "dir_combined_factor": 0.05},
    "director-oracle": {"dir_vis_acc": 1.0, "dir_hidden_novis": 0.0, "dir_uplift": 0.0,
                        "dir_hidden_mean": 0.0, "dir_uplift_mean": 0.0, "dir_miss": 0.0,
                        "dir_answer_rate": 1.0, "dir_format_noise": 0.0, "dir_count_acc": 1.0,
                        "dir_top_digit_pull": 0.0, "dir_scene_sd": 0.0, "dir_acc_scene_sd": 0.0},
}
sim.register_knobs("dir_", DirectorKnobs, SIM_PROFILES)


@sim.task("director")
def _answer(backend: sim.Sim, oracle: dict[str, Any], rng: Any) -> sim.SimAnswer:
    """One turn of a Director condition: the JSON fields of ``oracle["fields"]`` only, drawn
    from the respondent model with the ``dir_`` knobs; scene offsets from the scene id and
    ``seed``. A turn that chooses a block carries a reasoning trace (``dir_traces``)."""
    text, trace = respond_with_trace(backend.extra("dir_"), oracle, rng, seed=backend.knobs.seed)
    return sim.SimAnswer(text, reasoning=trace)


async def run_study_async(design: Design, backends: Sequence[str], out: str | Path, *,
                          source: str = "", scenes: str | Path | None = None,
                          concurrency: int = 8, cache: bool = True,
                          cache_dir: str | Path | None = None, timeout_s: float = 600.0,
                          max_attempts: int = 6, backoff_base_s: float = 1.0,
                          base_url: str | list[str] | None = None, reasoning_effort: str = "medium",
                          temperature: float | None = None, max_tokens: int | None = None,
                          progress: bool = True) -> RunResult:
    """Run ``design`` against each backend (``SPEC`` or ``NAME=SPEC``) into ``out``: the
    ``director`` benchmark through the one run pipeline (``unseen.api.run_async``)."""
    return await run_async(
        None, (), backends, benchmark="director", out=out, concurrency=concurrency,
        cache=cache, cache_dir=cache_dir, timeout_s=timeout_s, max_attempts=max_attempts,
        backoff_base_s=backoff_base_s, base_url=base_url, progress=progress,
        run_label="unseen director run", design=design, source=source, scenes=scenes,
        reasoning_effort=reasoning_effort, temperature=temperature, max_tokens=max_tokens)


def run_study(design: Design, backends: Sequence[str], out: str | Path, **kwargs: Any) -> RunResult:
    """Synchronous :func:`run_study_async`."""
    return asyncio.run(run_study_async(design, backends, out, **kwargs))
