"""A third benchmark, registered in process by the tests that need one (engine: the run
pipeline; views: the generic views). The example package ``examples/pointing`` is the one
installed by entry point."""

from __future__ import annotations

import json
from pathlib import Path

import unseen
from unseen.engine.benchmark import Plan
from unseen.engine.types import BOX_INSTANCES, RunConfig


class Pointing:
    """A third benchmark, registered in process: the SceneFunRI instances' shape (an image,
    an instruction, a box), so every box strategy runs on it, scored by whether the box's
    centre lies in the target."""

    name = "pointing-test"
    accepts = frozenset({BOX_INSTANCES})
    summary = "is the centre of the box inside the hidden target?"

    def __init__(self, data: Path):
        self.data = data

    def claims(self, data):
        return False

    def strategies(self, request):
        from unseen.strategies import build

        return [build(s) for s in request.strategies]

    def scorer(self, request):
        def score(instance, prediction):
            if not prediction:
                return {"hit": 0.0}
            x, y = (prediction[0] + prediction[2]) / 2, (prediction[1] + prediction[3]) / 2
            b = instance.truth["box"]
            return {"hit": float(b[0] <= x <= b[2] and b[1] <= y <= b[3])}
        return score

    def plan(self, request, strategies, backends, run_dir):
        ds = unseen.load_dataset(self.data)
        config = RunConfig(run=run_dir.name, benchmark=self.name, data=str(self.data),
                           dataset_fingerprint=ds.fingerprint, instances=len(ds),
                           strategies=[{"name": s.name, "label": s.label} for s in strategies],
                           backends=[b.describe() for b in backends],
                           package_version="test", created_at="now")
        return Plan(instances=ds.instances[: request.limit], strategies=strategies,
                    config=config, score=self.scorer(request), samples=1,
                    files={"pointing.json": json.dumps({"note": "kept beside the journal"})})

    def resume(self, old, new, run_dir):
        return new
