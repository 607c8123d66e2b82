"""``baseline:fixed``: the best constant box, learned leave-one-scene-out.

**The search** is a grid: every box whose corners lie on multiples of 5 % of the image's width
and height (x1 < x2 and y1 < y2 in {0, 0.05, ..., 1}: 210 × 210 = 44,100 boxes), scaled to each
instance's image and rounded to 0.01 px, as the rule answers it. **Leave-one-scene-out**: for
each scene (an instance's ``meta`` ``visit``, else its ``scene``; an instance with neither is a
scene of its own, so a dataset without scenes, or with only one, is left out one instance at
a time), the box
with the most CAcc@50 hits on the instances of the *other* scenes wins, ties broken by the
lower mean Dist on them, then by grid order (x1, x2, y1, y2 ascending); it is the rule's
answer for every instance of the held-out scene. CAcc@50 and Dist are ``metrics.py``'s
(:func:`~.metrics.cacc_many` and :func:`~.metrics.dist_many`, checked against the paper's
definitions box by box).

The rule answers in ``backends/baseline.py``, which cannot import the metrics; this module
teaches it (``engine.rules``; it is listed under the entry-point group ``unseen.sim_tasks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ...engine.rules import LearnerError, NormBox, rule_learner
from ...engine.types import Instance
from .metrics import cacc_many, dist_many

if TYPE_CHECKING:  # numpy loads when the rule learns, not when `unseen backends` lists it
    import numpy as np

STEPS = 20  # the grid: multiples of 1/20 = 5 % of the width and the height
FRACS = tuple(k / STEPS for k in range(STEPS + 1))
SEARCH = ("the best constant box by CAcc@50 (ties: mean Dist, then grid order) over a grid of "
          "boxes with corners on multiples of 5 % of the width and height, learned on the "
          "other scenes (leave-one-scene-out; one instance at a time without two scenes)")


@lru_cache(maxsize=1)
def _grid() -> np.ndarray:
    """Every grid box as indices into FRACS, ``[x1, y1, x2, y2]``; box k is x pair k // n,
    y pair k % n."""
    import numpy as np

    pairs = np.array([(a, b) for a in range(STEPS + 1) for b in range(a + 1, STEPS + 1)])
    n = len(pairs)
    return np.stack([np.repeat(pairs[:, 0], n), np.tile(pairs[:, 0], n),
                     np.repeat(pairs[:, 1], n), np.tile(pairs[:, 1], n)], axis=1)


@dataclass(frozen=True)
class Fold:
    """One held-out scene: its instances and the box learned on the other scenes."""

    scene: str
    instances: tuple[str, ...]
    box: NormBox
    train_hits: int  # CAcc@50 hits of the box on the other scenes' instances
    train_n: int


def scene_of(inst: Instance) -> str:
    """The group an instance is held out with: its visit, else its scene, else itself."""
    for key in ("visit", "scene"):
        if inst.meta.get(key) is not None:
            return f"{key} {inst.meta[key]}"
    return f"instance {inst.id}"


def grid_box(k: int) -> NormBox:
    """Box ``k`` of the grid, as shares of the image."""
    a, c, b, d = _grid()[k]
    return FRACS[a], FRACS[c], FRACS[b], FRACS[d]


@lru_cache(maxsize=64)
def _pixels(width: float, height: float) -> np.ndarray:
    """Every grid box in pixels of a ``width`` x ``height`` image, as the rule answers it."""
    import numpy as np

    xs = np.array([round(f * width, 2) for f in FRACS])
    ys = np.array([round(f * height, 2) for f in FRACS])
    index = _grid()
    return np.stack([xs[index[:, 0]], ys[index[:, 1]], xs[index[:, 2]], ys[index[:, 3]]],
                    axis=1)


def _scores(inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """CAcc@50 (0/1) and Dist of every grid box on one instance."""
    import numpy as np

    boxes = _pixels(inst.width, inst.height)
    gt = inst.truth["box"]
    return (cacc_many(boxes, gt, inst.width, inst.height, 0.5).astype(np.int64),
            dist_many(boxes, gt, inst.width, inst.height))


def folds(instances: list[Instance]) -> list[Fold]:
    """The leave-one-scene-out folds of the instances with a box (module docstring)."""
    boxed = [i for i in instances if i.truth.get("box")]
    groups: dict[str, list[Instance]] = {}
    for inst in boxed:
        groups.setdefault(scene_of(inst), []).append(inst)
    if len(groups) < 2:  # one scene: leave one instance out
        groups = {f"instance {i.id}": [i] for i in boxed}
    if len(groups) < 2:
        raise LearnerError("baseline:fixed learns on the other scenes or instances: it needs "
                           f"at least two instances with a box, got {len(groups)}")
    import numpy as np

    hits = np.zeros(len(_grid()), dtype=np.int64)
    dist = np.zeros(len(_grid()))
    for members in groups.values():
        for inst in members:
            h, d = _scores(inst)
            hits += h
            dist += d
    n = sum(len(m) for m in groups.values())
    out = []
    for scene, members in groups.items():  # the others' sums: all minus the scene's own
        own_h = np.zeros_like(hits)
        own_d = np.zeros_like(dist)
        for inst in members:
            h, d = _scores(inst)
            own_h += h
            own_d += d
        train_h, train_d = hits - own_h, dist - own_d
        best = train_h.max()
        k = int(np.argmin(np.where(train_h == best, train_d, np.inf)))
        out.append(Fold(scene, tuple(i.id for i in members), grid_box(k), int(best),
                        n - len(members)))
    return out


@rule_learner("fixed")
def learn(instances: list[Instance]) -> dict[str, NormBox]:
    """Instance id → the box ``baseline:fixed`` answers for it (learned without its scene)."""
    return {iid: f.box for f in folds(instances) for iid in f.instances}


def pixel_box(box: NormBox, width: float, height: float) -> list[float]:
    """A learned box in an image's pixels, as the rule answers it (rounded to 0.01 px)."""
    return [round(box[0] * width, 2), round(box[1] * height, 2), round(box[2] * width, 2),
            round(box[3] * height, 2)]
