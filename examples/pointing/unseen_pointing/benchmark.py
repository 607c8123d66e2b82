"""The ``pointing`` benchmark: where is the block hidden behind one of the screens?

It implements ``unseen.engine.benchmark.Benchmark``, member by member: ``claims`` (which
data is its), ``strategies`` (built and checked before anything connects), ``scorer``,
``plan`` (the instances, ``run.json``) and ``resume`` (when a rerun may go on in the same run
directory). Its instances hold an image, an instruction and a box, as SceneFunRI's do, so it
``accepts`` every box strategy (``direct``, ``spoe``, ``cot``, ...), and ``sim`` answers
them offline from the truth those strategies put on every request.

The score of one trajectory, for a predicted box ``p`` and the hidden block's box ``t`` in a
``w`` x ``h`` image, with ``c(b)`` a box's centre:

- ``hit`` = 1 if ``c(p)`` lies in ``t`` (its edges included), else 0;
- ``dist`` = |c(p) - c(t)| / sqrt(w² + h²): how far the centres lie apart, as a fraction of
  the image's diagonal (0 is dead on; 1 is corner to corner).

An unanswered trajectory scores ``hit`` 0 and no ``dist``, so a mean ``dist`` is over the
answered ones.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unseen.engine.benchmark import BenchmarkError, Plan, RunRequest
from unseen.engine.box import Box
from unseen.engine.types import BOX_INSTANCES, Instance, RunConfig
from unseen.strategies import build

from .data import FILE, load

# what run.json records of the scoring; a rerun scored by another rule is refused (resume),
# so change it whenever score() changes
SCORING = {"hit": "centre of the box inside the block", "dist": "centre distance / diagonal",
           "unanswered": "hit 0, no dist"}


def score(instance: Instance, prediction: Any) -> dict[str, float]:
    """``hit`` and ``dist`` of one trajectory (see the module's docstring)."""
    if prediction is None:
        return {"hit": 0.0}
    (px, py), t = Box.of(prediction).center, Box.of(instance.truth["box"])
    tx, ty = t.center
    return {"hit": float(t.x1 <= px <= t.x2 and t.y1 <= py <= t.y2),
            "dist": math.hypot(px - tx, py - ty) / math.hypot(instance.width, instance.height)}


class Pointing:
    name = "pointing"  # run.json's "benchmark", the entry point's name, the views' name
    summary = "point at a block hidden behind one of two or three screens (hit, dist)"
    # instances with an image, an instruction and a box: every box strategy reads them
    # (StrategySpec.benchmark BOX_INSTANCES), as would one made for this benchmark alone
    accepts = frozenset({BOX_INSTANCES, "pointing"})

    def claims(self, data: Path) -> bool:
        """A folder holding ``pointing.jsonl``, or that file: ``--data`` alone then names
        this benchmark."""
        return (data / FILE).is_file() if data.is_dir() else data.name == FILE

    def strategies(self, request: RunRequest) -> list:
        if not request.strategies:
            raise BenchmarkError("name at least one strategy (-s), e.g. direct or spoe")
        if any(request.names):
            raise BenchmarkError("NAME=SPEC names a study design's model; a pointing run "
                                 "takes backend SPECs only")
        return [build(s) for s in request.strategies]

    def scorer(self, request: RunRequest):
        return score

    def plan(self, request: RunRequest, strategies: list, backends: list,
             run_dir: Path) -> Plan:
        if request.data is None:
            raise BenchmarkError("a pointing run needs --data DIR (make one with: "
                                 "python -m unseen_pointing DIR)")
        folder = Path(request.data)
        instances, fingerprint = load(folder)
        for b in backends:  # baseline:prior learns its mean box from the data set
            b.prepare(instances)
        if request.limit:
            instances = instances[: request.limit]
        samples = request.samples or 1
        config = RunConfig(
            run=run_dir.name, benchmark=self.name, data=str(folder.resolve()),
            dataset_fingerprint=fingerprint, instances=len(instances),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in strategies],
            backends=[b.describe() for b in backends], samples=samples, limit=request.limit,
            concurrency=request.options.get("concurrency", 8),
            cache=bool(request.options.get("cache", True)), scoring=SCORING,
            package_version=request.options.get("package_version", ""),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        return Plan(instances=instances, strategies=strategies, config=config, score=score,
                    samples=samples)

    def resume(self, old: RunConfig, new: RunConfig, run_dir: Path) -> RunConfig:
        """A rerun goes on only on the same data, scored by the same rule, so every number
        in the run means one thing; its strategies and backends join the run's, and the run
        holds the most instances and samples any invocation asked for."""
        if old.benchmark != self.name:
            raise BenchmarkError(f"{run_dir} holds a {old.benchmark} run; choose another --out")
        if old.dataset_fingerprint != new.dataset_fingerprint:
            raise BenchmarkError(f"{run_dir} holds a run on other data (fingerprint "
                                 f"{old.dataset_fingerprint}, now {new.dataset_fingerprint}); "
                                 "choose another --out")
        if old.scoring != new.scoring:
            raise BenchmarkError(f"{run_dir} was scored by another rule ({old.scoring}); "
                                 "choose another --out")
        return new.model_copy(update={
            "run": old.run, "created_at": old.created_at,
            "strategies": _union(old.strategies, new.strategies, "label"),
            "backends": _union(old.backends, new.backends, "spec"),
            "instances": max(old.instances, new.instances),
            "samples": max(old.samples, new.samples),
            "limit": None if old.limit is None or new.limit is None
            else max(old.limit, new.limit)})


def _union(old: list[dict], new: list[dict], key: str) -> list[dict]:
    seen = {x.get(key) for x in old}
    return old + [x for x in new if x.get(key) not in seen]


BENCHMARK = Pointing()
