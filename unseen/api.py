"""The public entry points: ``run`` a comparison, ``connect`` a backend, ``load_dataset``."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import settings
from .backends import connect
from .engine.cache import ReplyCache
from .engine.images import register_overlay_renderer
from .engine.journal import RUN_FILE, read_run_json
from .engine.lock import hold
from .engine.runner import Runner, RunResult
from .engine.types import RunConfig
from .evals.scenefunri import load_dataset, scorer
from .evals.scenefunri.sample import bundled_sample
from .renderers.overlay import render_overlay  # noqa: E402
from .strategies import build as build_strategy

# the engine draws a step's overlay through whatever renderer the wiring registers
register_overlay_renderer(render_overlay)


class RunError(ValueError):
    """A run that cannot start (for example a run directory made from other data)."""


def _merge_config(run_dir: Path, config: RunConfig) -> RunConfig:
    """Resume into an existing run directory: same data, union of strategies and backends.

    ``--limit N`` runs the first N instances, so the instances a run directory holds are the
    first ``max`` of its invocations' limits (all of them once any invocation had none):
    ``run.json`` records that union, never the last invocation's smaller count."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        return config
    old = RunConfig.model_validate(read_run_json(run_dir))
    if old.dataset_fingerprint != config.dataset_fingerprint:
        raise RunError(
            f"{run_dir} holds a run on other data (fingerprint {old.dataset_fingerprint}, "
            f"now {config.dataset_fingerprint}); choose another --out"
        )
    def union(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def key(x: dict[str, Any]) -> str:  # a backend's server counts change run to run
            return json.dumps({k: v for k, v in x.items() if k != "server_counts"}, sort_keys=True)
        seen = {key(x) for x in a}
        return a + [x for x in b if key(x) not in seen]
    return config.model_copy(update={
        "run": old.run, "created_at": old.created_at,
        "strategies": union(old.strategies, config.strategies),
        "backends": union(old.backends, config.backends),
        "samples": max(old.samples, config.samples),
        "instances": max(old.instances, config.instances),
        "limit": None if old.limit is None or config.limit is None
        else max(old.limit, config.limit),
    })


def _setup(
    concurrency: int, *, strategies: Sequence[str], backends: Sequence[str],
    instances: list, cache_dir: str | Path | None, use_cache: bool, unanswered: str,
    options: dict[str, Any],
) -> tuple[list, list, Any]:
    """Strategies, connected backends and the scorer: the same in the parent and in every
    shard process (a module-level function, so ``functools.partial`` of it pickles)."""
    specs = [build_strategy(s) for s in strategies]
    reply_cache = ReplyCache(cache_dir) if use_cache else None
    clients = [connect(b, concurrency=concurrency, cache=reply_cache, **options) for b in backends]
    for c in clients:
        c.prepare(instances)
    return specs, clients, scorer(unanswered)


def _record_server_counts(run_dir: Path, config: RunConfig, clients: list) -> None:
    """Per-server counts of backends spread over several servers, into run.json's backend
    descriptions (replacing those of an earlier session of the same run)."""
    counts = {c.spec: fn() for c in clients if (fn := getattr(c, "server_counts", None))}
    if not counts:
        return
    for desc in config.backends:
        if desc.get("spec") in counts:
            desc["server_counts"] = counts[desc["spec"]]
    (run_dir / RUN_FILE).write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")


async def run_async(
    data: str | Path | None = None,
    strategies: Sequence[str] = (settings.DEFAULT_STRATEGY,),
    backends: Sequence[str] = (settings.DEFAULT_BACKEND,),
    *,
    samples: int = 1,
    limit: int | None = None,
    out: str | Path | None = None,
    concurrency: int = settings.DEFAULT_CONCURRENCY,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    box_format: str | None = None,
    base_url: str | Sequence[str] | None = None,
    timeout_s: float = settings.DEFAULT_TIMEOUT_S,
    max_attempts: int = 6,
    backoff_base_s: float = 1.0,
    unanswered: str = "full",
    progress: bool = True,
    processes: int = 1,
    allow_outside_images: bool = False,
) -> RunResult:
    """Run every strategy with every backend over a SceneFunRI dataset; see ``run``."""
    if samples < 1:
        raise RunError("--samples must be at least 1")
    if processes < 1:
        raise RunError("--processes must be at least 1")
    folder = Path(data) if data else bundled_sample()
    dataset = load_dataset(folder, allow_outside_images=allow_outside_images)
    instances = dataset.instances[:limit] if limit else dataset.instances
    setup = functools.partial(
        _setup, strategies=list(strategies), backends=list(backends),
        instances=dataset.instances, cache_dir=cache_dir, use_cache=cache, unanswered=unanswered,
        options={"timeout_s": timeout_s, "max_attempts": max_attempts,
                 "backoff_base_s": backoff_base_s, "box_format": box_format, "base_url": base_url},
    )
    specs, clients, score = setup(concurrency)
    people = [c.spec for c in clients if getattr(c, "interactive", False)]
    twice = [p for p in people if people.count(p) > 1]  # one person, one page, one key space
    if twice or (people and processes > 1):
        for c in clients:
            await c.aclose()
        raise RunError(f"{twice[0]} is given twice: one person, one backend" if twice else
                       f"{people[0]} is a person answering on one page: run it without "
                       "--processes")
    try:
        run_dir = Path(out) if out else settings.new_run_dir(list(strategies), list(backends))
        config = RunConfig(
            run=run_dir.name, data=str(folder.resolve()),
            dataset_fingerprint=dataset.fingerprint, instances=len(instances),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in specs],
            backends=[c.describe() for c in clients], samples=samples, limit=limit,
            concurrency=concurrency, cache=cache, scoring={"unanswered": unanswered},
            package_version=settings.package_version(),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with hold(run_dir, "unseen run"):  # before run.json: one process per run directory
            config = _merge_config(run_dir, config)
            runner = Runner(instances, specs, clients, run_dir, config, samples=samples,
                            score=score, progress=progress, processes=processes, setup=setup)
            result = await runner.run()
            if processes == 1:  # shard processes keep their own counts
                _record_server_counts(run_dir, config, clients)
            return result
    finally:
        for c in clients:
            await c.aclose()
        caches = {id(c.cache): c.cache for c in clients if c.cache is not None}
        for reply_cache in caches.values():
            reply_cache.close()


def run(data: str | Path | None = None, strategies: Sequence[str] = ("direct",),
        backends: Sequence[str] = ("sim",), **kwargs: Any) -> RunResult:
    """Run strategies × backends over a dataset and journal every trajectory.

    ``data`` is a SceneFunRI folder (default: the bundled sample set); strategies are
    ``name[:k=v,...]`` and backends ``provider:target`` specs. Rerunning with the same
    ``out`` resumes: finished trajectories are skipped. Returns counts and the run directory.
    """
    return asyncio.run(run_async(data, strategies, backends, **kwargs))
