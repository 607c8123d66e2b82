"""Director Task studies from Python: ``run_study``, and the simulated respondent's wiring.

``run_study(design, backends, out)`` connects the backends, renders any missing scene set,
plans every call (``evals.director.runner``) and runs them through the engine into a
resumable run directory. Importing this module also teaches the ``sim`` backend the Director
Task: the ``director`` task and its ``dir_`` knobs and ``director-*`` profiles
(``evals.director.respondent``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .backends import connect, sim
from .engine.cache import ReplyCache
from .engine.journal import RUN_FILE, read_run_json
from .engine.lock import hold
from .engine.redact import scrub
from .engine.runner import RunResult, check_pairing
from .engine.types import RunConfig
from .evals.director import strategy as _strategy  # noqa: F401 - registers `director`
from .evals.director.measures import STUDY_FILE, score
from .evals.director.respondent import DirectorKnobs, respond_with_trace
from .evals.director.runner import (
    StudyError,
    StudyRunner,
    check_same_design,
    fingerprint,
    parse_backend,
    plan_calls,
    scene_sets,
    study_record,
)
from .evals.director.study import Design
from .settings import package_version
from .strategies import build

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
    """Run ``design`` against each backend (``SPEC`` or ``NAME=SPEC``) into ``out``."""
    if not backends:
        raise StudyError("name at least one --backend")
    out = Path(out)
    parsed = [parse_backend(b) for b in backends]
    specs_given = [spec for spec, _ in parsed]
    twice = sorted({s for s in specs_given if specs_given.count(s) > 1})
    if twice:
        # the spec is part of every trajectory key: two models on one spec would share keys
        raise StudyError(f"backend {twice[0]} is given twice; give each model its own spec "
                         "(for the simulator, e.g. sim:default,seed=1 and sim:default,seed=2)")
    reply_cache = ReplyCache(cache_dir) if cache else None
    clients = [connect(spec, concurrency=concurrency, cache=reply_cache, timeout_s=timeout_s,
                       max_attempts=max_attempts, backoff_base_s=backoff_base_s,
                       base_url=base_url) for spec, _ in parsed]
    lock = contextlib.ExitStack()
    try:
        same = [c.spec for c in clients if [d.spec for d in clients].count(c.spec) > 1]
        if same:  # two spellings of one backend (a person on two ports)
            raise StudyError(f"backend {same[0]} is given twice; give each model its own spec")
        names = [alias or c.model for (_, alias), c in zip(parsed, clients, strict=True)]
        for name, (spec, _) in zip(names, parsed, strict=True):
            if not any(b.asks(name) for b in design.batches):
                asked = sorted({m for b in design.batches for m in b.models})
                raise StudyError(
                    f"no batch of design {design.name!r} asks model {name!r} ({spec}); the "
                    f"design names {', '.join(asked)}: run it in one's place with "
                    f"--backend NAME={spec}")
        decoding = {"reasoning_effort": reasoning_effort, "temperature": temperature,
                    "max_tokens": max_tokens}
        specs = {(b.name, c): build(("director", {"condition": c, "batch": b.name, **decoding}))
                 for b in design.batches for c in b.conditions}
        check_pairing(list(specs.values()), clients, "director")  # before scenes are rendered
        lock.enter_context(hold(out, "unseen director run"))  # before study.json and scenes
        earlier = check_same_design(out, design)
        needed = [s for s in design.sets if any(
            s in b.sets and any(b.asks(n) for n in names) for b in design.batches)]
        scenes_root = Path(scenes) if scenes else recorded_scenes(earlier) or out / "scenes"
        sets = scene_sets(design, needed, scenes_root, progress=progress)
        plan = plan_calls(design, clients, names, specs, sets)
        described = [{**c.describe(), "spec": c.spec, "model": n}
                     for c, n in zip(clients, names, strict=True)]
        out.mkdir(parents=True, exist_ok=True)
        study = study_record(out, design, source, described, sets, scenes_root)
        config = RunConfig(
            run=out.name, benchmark="director", data=str(scenes_root.resolve()),
            dataset_fingerprint=fingerprint(sets),
            instances=sum(len(v[0]) for v in sets.values()),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in specs.values()],
            backends=study["backends"], samples=design.samples, concurrency=concurrency, cache=cache,
            scoring={"measures": "evals.director.measures"}, package_version=package_version(),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        run_file = out / RUN_FILE
        if run_file.is_file():
            old = RunConfig.model_validate(read_run_json(out))
            config = config.model_copy(update={"run": old.run, "created_at": old.created_at})
        (out / STUDY_FILE).write_text(scrub(json.dumps(study, indent=2)) + "\n", encoding="utf-8")
        runner = StudyRunner(plan, instances=[], strategies=list(specs.values()),
                             backends=clients, run_dir=out, config=config,
                             samples=design.samples, score=score, progress=progress)
        return await runner.run()
    finally:
        for c in clients:
            await c.aclose()
        if reply_cache is not None:
            reply_cache.close()
        lock.close()


def recorded_scenes(study: dict | None) -> Path | None:
    """The scene folder an earlier invocation used, so a resume without ``--scenes`` reads
    the same scenes instead of rendering new ones into the run directory."""
    parents = {str(Path(v["path"]).parent) for v in ((study or {}).get("scenes") or {}).values()}
    return Path(parents.pop()) if len(parents) == 1 else None


def run_study(design: Design, backends: Sequence[str], out: str | Path, **kwargs: Any) -> RunResult:
    """Synchronous :func:`run_study_async`."""
    return asyncio.run(run_study_async(design, backends, out, **kwargs))
