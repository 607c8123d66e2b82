"""``baseline:center|prior|fixed|random|full``: no model, fixed rules, for reference rows.

- ``center``: the centred box with half the image's width and height (a quarter of its area);
- ``prior``: the mean ground-truth box of the dataset's *other* instances (leave-one-out);
- ``fixed``: the best constant box, learned leave-one-scene-out: of the boxes with corners on
  a grid of 5 % of the image's width and height, the one with the most CAcc@50 hits on the
  *other* scenes' instances (ties: the lower mean Dist there, then grid order), answered for
  every instance of the held-out scene (scenes: ``meta`` ``visit`` or ``scene``; one instance
  at a time in a dataset without them). The benchmark teaches it the search with its own
  metrics (``engine.rules``; SceneFunRI's: ``evals/scenefunri/fixed.py``);
- ``random``: a seeded random box covering 5–50 % of the image;
- ``full``: the whole image.
They answer through the same prompt-and-parse path as a model, in pixel boxes.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from ..engine.backend import Capabilities, ProviderError
from ..engine.box import Box
from ..engine.oracle import BoxTruth
from ..engine.rules import LEARNERS, LearnerError, NormBox
from ..engine.types import Instance, Reply, Request
from .base import BackendConfigError, BaseBackend, provider

RULES = ("center", "prior", "fixed", "random", "full")


class Baseline(BaseBackend):
    provider = "baseline"
    simulated = True
    cacheable = False
    capabilities = Capabilities(json_schema=True)
    answers = frozenset({"box"})  # a fixed rule draws boxes; it cannot choose or converse

    def __init__(self, rule: str, spec: str):
        if rule not in RULES:
            raise BackendConfigError(f"unknown baseline {rule!r}; known: {', '.join(RULES)}")
        self.rule = rule
        super().__init__(f"baseline-{rule}", box_format="pixel", spec=spec)
        self._sum: list[float] | None = None
        self._n = 0
        self._norm: dict[str, list[float]] = {}
        self._fixed: dict[str, NormBox] | None = None
        self._fixed_error = "baseline:fixed needs the dataset (prepare() not called)"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "rule": self.rule, "note": "reference rule, no model"}

    def prepare(self, instances: list[Instance]) -> None:
        # boxes normalised by image size, so images of different sizes can share a prior
        self._norm = {}
        for inst in instances:
            b = inst.truth.get("box")
            if b:
                self._norm[inst.id] = [b[0] / inst.width, b[1] / inst.height,
                                       b[2] / inst.width, b[3] / inst.height]
        self._n = len(self._norm)
        self._sum = [sum(v[i] for v in self._norm.values()) for i in range(4)]
        if self.rule == "fixed":
            self._learn_fixed(instances)

    def _learn_fixed(self, instances: list[Instance]) -> None:
        learner = LEARNERS.get("fixed")
        if learner is None:
            self._fixed_error = ("baseline:fixed: no benchmark teaches a fixed box for this "
                                 "data (engine.rules)")
            return
        try:
            self._fixed = learner(instances)
        except LearnerError as exc:
            self._fixed_error = str(exc)

    def box(self, truth: BoxTruth, sample: int) -> Box:
        """The rule's box in the truth's frame (only its size and instance are read)."""
        w, h = truth.width, truth.height
        if self.rule == "full":
            return Box.full(w, h)
        if self.rule == "center":
            return Box(x1=w / 4, y1=h / 4, x2=3 * w / 4, y2=3 * h / 4)
        if self.rule == "random":
            seed = hashlib.sha256(f"{truth.instance}|{sample}".encode()).digest()
            rng = random.Random(int.from_bytes(seed[:8], "big"))
            area = rng.uniform(0.05, 0.5)
            aspect = rng.uniform(0.5, 2.0)
            bw = min(1.0, (area * aspect) ** 0.5)
            bh = min(1.0, area / bw)
            x1, y1 = rng.uniform(0, 1 - bw), rng.uniform(0, 1 - bh)
            return Box(x1=x1 * w, y1=y1 * h, x2=(x1 + bw) * w, y2=(y1 + bh) * h)
        if self.rule == "fixed":
            if self._fixed is None:
                raise ProviderError("config", self._fixed_error)
            learned = self._fixed.get(truth.instance or "")
            if learned is None:
                raise ProviderError("config", f"baseline:fixed learned no box for instance "
                                    f"{truth.instance!r} (not among the prepared instances)")
            return Box(x1=learned[0] * w, y1=learned[1] * h, x2=learned[2] * w,
                       y2=learned[3] * h)
        # prior: leave this instance out
        if self._sum is None:
            raise ProviderError("config", "baseline:prior needs the dataset (prepare() not called)")
        mine = self._norm.get(truth.instance or "")
        n = self._n - (1 if mine else 0)
        if n <= 0:
            raise ProviderError("config", "baseline:prior needs at least two instances")
        m = [(self._sum[i] - (mine[i] if mine else 0.0)) / n for i in range(4)]
        return Box(x1=m[0] * w, y1=m[1] * h, x2=m[2] * w, y2=m[3] * h)

    async def complete(self, request: Request) -> Reply:
        truth = request.oracle
        if not isinstance(truth, BoxTruth):
            raise ProviderError("client", "baselines answer box tasks only")
        values = [round(v, 2) for v in self.box(truth, request.sample).to_list()]
        return Reply(text=json.dumps({"box": values}), finish_reason="stop")


@provider("baseline", "baseline:center|prior|fixed|random|full  (reference rules, no model)")
def _baseline(target: str, *, spec: str, **_: Any) -> Baseline:
    return Baseline(target or "center", spec=spec)
