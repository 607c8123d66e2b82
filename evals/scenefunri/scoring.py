"""Per-trajectory scoring for SceneFunRI: the runner calls it on every finished trajectory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...engine.types import Instance
from .metrics import Unanswered, score


def scorer(unanswered: Unanswered = "full") -> Callable[[Instance, Any], dict[str, float]]:
    """A function (instance, prediction or None) → the four metrics, unscaled."""

    def _score(instance: Instance, prediction: Any) -> dict[str, float]:
        return score(prediction, instance.truth["box"], instance.width, instance.height,
                     unanswered=unanswered)

    return _score
