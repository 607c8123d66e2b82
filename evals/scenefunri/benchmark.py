"""SceneFunRI as a benchmark (``engine.benchmark.Benchmark``): a folder of instances, every
strategy × backend × instance × sample, the paper's four metrics.

Registered under the entry-point group ``unseen.benchmarks`` as ``scenefunri``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...engine.benchmark import BenchmarkError, Plan, RunDefaults, RunRequest
from ...engine.types import BOX_INSTANCES, RunConfig
from ...strategies import build
from .data.dataset import INSTANCES_FILE, load_dataset
from .data.sample import bundled_sample
from .scoring import scorer


class SceneFunRI:
    name = "scenefunri"
    # every box strategy, and one made for SceneFunRI's instances alone
    accepts = frozenset({BOX_INSTANCES, "scenefunri"})
    summary = ("box a functional object fully hidden in an image, from a task instruction "
               "(CAcc@75, CAcc@50, mIoU, Dist)")
    # with no -s: the paper's prompting strategies (§5.2.1-5.2.2), beside what a fixed guess
    # earns on the same data, paired against direct
    defaults = RunDefaults(
        strategies=("direct", "direct:prompt=hidden", "direct:prompt=common",
                    "direct:prompt=both", "cot", "cot-sr"),
        rules=("baseline:center", "baseline:prior", "baseline:fixed"), baseline="direct")

    def claims(self, data: Path) -> bool:
        return (data / INSTANCES_FILE).is_file() if data.is_dir() else data.name == INSTANCES_FILE

    def strategies(self, request: RunRequest):
        if any(request.names):
            name = next(n for n in request.names if n)
            raise BenchmarkError(f"NAME=SPEC ({name}=...) names a study design's model; a "
                                 "SceneFunRI run takes backend SPECs only")
        if not request.strategies:
            raise BenchmarkError("name at least one strategy (-s), e.g. direct or spoe")
        return [build(s) for s in request.strategies]

    def scorer(self, request: RunRequest):
        return scorer(request.options.get("unanswered", "full"))

    def plan(self, request: RunRequest, strategies: list, backends: list,
             run_dir: Path) -> Plan:
        folder = Path(request.data) if request.data else bundled_sample()
        dataset = load_dataset(folder, allow_outside_images=bool(
            request.options.get("allow_outside_images")))
        limit = request.limit
        instances = dataset.instances[:limit] if limit else dataset.instances
        for b in backends:  # prior and fixed learn from the whole dataset, leaving one out
            b.prepare(dataset.instances)
        samples = request.samples or 1
        config = RunConfig(
            run=Path(run_dir).name, benchmark=self.name, data=str(folder.resolve()),
            dataset_fingerprint=dataset.fingerprint, instances=len(instances),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in strategies],
            backends=[b.describe() for b in backends], samples=samples, limit=limit,
            concurrency=request.options.get("concurrency", 8),
            cache=bool(request.options.get("cache", True)),
            scoring={"unanswered": request.options.get("unanswered", "full")},
            package_version=request.options.get("package_version", ""),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        return Plan(instances=instances, strategies=strategies, config=config,
                    score=self.scorer(request), samples=samples)

    def resume(self, old: RunConfig, new: RunConfig, run_dir: Path) -> RunConfig:
        """Same data; the union of strategies and backends. ``--limit N`` runs the first N
        instances, so the instances a run directory holds are the first ``max`` of its
        invocations' limits (all once any invocation had none): ``run.json`` records that
        union, never the last invocation's smaller count."""
        if old.benchmark != new.benchmark:
            raise BenchmarkError(f"{run_dir} holds a {old.benchmark} run; choose another --out")
        if old.dataset_fingerprint != new.dataset_fingerprint:
            raise BenchmarkError(
                f"{run_dir} holds a run on other data (fingerprint {old.dataset_fingerprint}, "
                f"now {new.dataset_fingerprint}); choose another --out")
        return new.model_copy(update={
            "run": old.run, "created_at": old.created_at,
            "strategies": _union(old.strategies, new.strategies),
            "backends": _union(old.backends, new.backends),
            "samples": max(old.samples, new.samples),
            "instances": max(old.instances, new.instances),
            "limit": None if old.limit is None or new.limit is None
            else max(old.limit, new.limit),
        })



#: backend description keys filled in while a run goes on (``unseen.api``)
RUNTIME_KEYS = frozenset({"server_counts", "dropped_params", "concurrency_course", "batch"})


def _union(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(x: dict[str, Any]) -> str:  # what a backend learns while it runs is no new one
        return json.dumps({k: v for k, v in x.items() if k not in RUNTIME_KEYS},
                          sort_keys=True)
    seen = {key(x) for x in a}
    return a + [x for x in b if key(x) not in seen]


BENCHMARK = SceneFunRI()
