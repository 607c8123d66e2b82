"""Reference rules that learn from a run's data, taught by the benchmark whose metric they use.

A fixed rule of ``backends/baseline.py`` that chooses its box by a benchmark's metric
(``baseline:fixed``: the constant box that scores best on the other scenes) cannot import that
metric: backends import the engine only, and a benchmark's metrics live with the benchmark.
The benchmark registers a *learner* here instead, from a module listed under the entry-point
group ``unseen.sim_tasks`` (the modules that teach respondents without a model), and the rule
looks it up by name, whichever module was imported first::

    @rule_learner("fixed")
    def learn(instances: list[Instance]) -> dict[str, NormBox]:
        ...  # instance id -> the box the rule answers for it, as shares of width and height

A learner raises :class:`LearnerError` (one line) when the data cannot teach it, for example a
single instance to learn from.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import UnseenError
from .oracle import SIM_TASKS_GROUP
from .plugins import Registry
from .types import Instance

#: [x1, y1, x2, y2] as shares of the image's width and height
NormBox = tuple[float, float, float, float]
Learner = Callable[[list[Instance]], dict[str, NormBox]]
LEARNERS: Registry[Learner] = Registry(SIM_TASKS_GROUP, "rule learner")


class LearnerError(UnseenError, ValueError):
    """Data a rule cannot learn from; one line saying why."""


def rule_learner(name: str) -> Callable[[Learner], Learner]:
    """Register ``fn(instances) -> {instance id: NormBox}`` as the learner of rule ``name``."""
    return LEARNERS.register(name)
