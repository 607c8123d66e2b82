"""SceneFunRI's metrics, exactly as the paper's §4.2 defines them.

- CAcc@θ = 1 if b_gt ⊂ b_p and 1 − A_p / A_img > θ, else 0. CAcc@75 asks for a prediction
  that contains the ground truth while covering less than 25 % of the image.
- IoU = |b_p ∩ b_gt| / |b_p ∪ b_gt|; mIoU is its mean.
- Dist = ¼ Σ_{i=1,2} Σ_{j=1,2} sqrt(((x_i^p − x_i^g)/w)² + ((y_j^p − y_j^g)/h)²): the mean
  over the four corner pairings of the normalized corner distance (lower is better).

Tables report every aggregate ×100 (a Dist of 28.65 is 0.2865 unscaled). An unanswered
instance scores CAcc 0 and IoU 0, and its Dist is that of the full-image box by default
(``unanswered="full"``); ``unanswered="skip"`` leaves it out of Dist instead.

:func:`cacc_many` and :func:`dist_many` are the same definitions for many predictions against
one truth at once (numpy arrays), for searches over boxes (``baseline:fixed``); the tests
check them against :func:`cacc` and :func:`dist` box by box.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy loads only for the searches that use it, not for every score
    import numpy as np

from ...engine.box import Box

BoxLike = Box | Sequence[float]
Unanswered = Literal["full", "skip"]
METRICS = ("cacc75", "cacc50", "iou", "dist")


def _box(b: BoxLike) -> Box:
    return b if isinstance(b, Box) else Box.of(list(b))


def cacc(pred: BoxLike, gt: BoxLike, width: float, height: float, theta: float) -> bool:
    """CAcc@θ for one prediction: contains the truth and leaves more than θ of the image."""
    p, g = _box(pred), _box(gt)
    return p.contains(g) and 1 - p.area / (width * height) > theta


def iou(pred: BoxLike, gt: BoxLike) -> float:
    """Intersection over union."""
    return _box(pred).iou(_box(gt))


def dist(pred: BoxLike, gt: BoxLike, width: float, height: float) -> float:
    """Mean normalized distance over the four corner pairings (unscaled)."""
    p, g = _box(pred), _box(gt)
    xs = ((p.x1 - g.x1) / width, (p.x2 - g.x2) / width)
    ys = ((p.y1 - g.y1) / height, (p.y2 - g.y2) / height)
    return sum(math.hypot(dx, dy) for dx in xs for dy in ys) / 4


def cacc_many(preds: np.ndarray, gt: BoxLike, width: float, height: float,
              theta: float) -> np.ndarray:
    """:func:`cacc` of each row of ``preds`` ((P, 4) pixel boxes) against ``gt``: (P,) bools."""
    g = _box(gt)
    import numpy as np

    p = np.asarray(preds, dtype=float)
    contains = (p[:, 0] <= g.x1) & (p[:, 1] <= g.y1) & (g.x2 <= p[:, 2]) & (g.y2 <= p[:, 3])
    area = (p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1])
    return contains & (1 - area / (width * height) > theta)


def dist_many(preds: np.ndarray, gt: BoxLike, width: float, height: float) -> np.ndarray:
    """:func:`dist` of each row of ``preds`` ((P, 4) pixel boxes) against ``gt``: (P,)."""
    g = _box(gt)
    import numpy as np

    p = np.asarray(preds, dtype=float)
    xs = ((p[:, 0] - g.x1) / width, (p[:, 2] - g.x2) / width)
    ys = ((p[:, 1] - g.y1) / height, (p[:, 3] - g.y2) / height)
    return np.asarray(sum(np.hypot(dx, dy) for dx in xs for dy in ys) / 4)


def score(
    pred: BoxLike | None, gt: BoxLike, width: float, height: float,
    unanswered: Unanswered = "full",
) -> dict[str, float]:
    """The four per-instance metrics, unscaled; ``pred=None`` for an unanswered instance."""
    if pred is None:
        out = {"cacc75": 0.0, "cacc50": 0.0, "iou": 0.0}
        if unanswered == "full":
            out["dist"] = dist(Box.full(width, height), gt, width, height)
        return out
    pred, gt = _box(pred), _box(gt)  # once, not once per metric
    return {
        "cacc75": float(cacc(pred, gt, width, height, 0.75)),
        "cacc50": float(cacc(pred, gt, width, height, 0.50)),
        "iou": iou(pred, gt),
        "dist": dist(pred, gt, width, height),
    }


def aggregate(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    """Means ×100, as in the paper's tables: ``cacc75``, ``cacc50``, ``miou``, ``dist``."""
    rows = list(rows)
    out: dict[str, float] = {}
    for key, name in (("cacc75", "cacc75"), ("cacc50", "cacc50"), ("iou", "miou"), ("dist", "dist")):
        vals = [r[key] for r in rows if key in r]
        out[name] = 100 * sum(vals) / len(vals) if vals else math.nan
    return out
