"""The cost cap's account (``--max-cost``): what a run directory has spent and what is
committed, so that no new trajectory starts once the cap is reached.

The runner keeps one :class:`Budget` per run and puts it in :data:`BUDGET` for the calls of
its trajectories. It counts, in US dollars:

- ``before``: what the run directory's journal had already spent when this invocation
  began (a resume spends the same cap, not a fresh one);
- ``spent``: the trajectories this invocation finished and journaled;
- ``live``: replies a batch delivered to trajectories still running (their cost is paid:
  a later step of theirs must not open room for a new trajectory);
- ``committed``: the estimated cost of batch lines submitted whose results are not read.

A batch collector asks :meth:`Budget.admit` before it submits a line: a call of a trajectory
already started always goes (it finishes, as a trajectory in flight does without
``--batch``); the first call of a new one goes only while the total is under the cap, and
is refused otherwise with :class:`CostCapped`, which ends that trajectory unjournaled (it
never started: nothing was paid for it).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field


class CostCapped(Exception):  # noqa: N818 - a stop, not a failure
    """A trajectory's first call refused at the cost cap: the trajectory does not start and
    is not journaled (the runner catches it; Reliable lets it through, never retried)."""


@dataclass
class Budget:
    cap: float
    before: float = 0.0
    spent: float = 0.0
    live: dict[str, float] = field(default_factory=dict)
    live_total: float = 0.0  # the sum of ``live``, kept as it changes (asked per item)
    committed: float = 0.0
    started: set[str] = field(default_factory=set)
    refused: int = 0

    def total(self) -> float:
        """US dollars spent or committed, the run directory's earlier invocations included."""
        return self.before + self.spent + self.live_total + max(self.committed, 0.0)

    def reached(self) -> bool:
        return self.total() >= self.cap

    def admit(self, key: str | None, estimate: float) -> bool:
        """Whether a line of trajectory ``key`` may be submitted; if so its ``estimate`` is
        committed until :meth:`settle`."""
        if key is not None and key not in self.started:
            if self.reached():
                return False
            self.started.add(key)
        self.committed += estimate
        return True

    def settle(self, estimate: float, key: str | None, cost: float) -> None:
        """A line's results are in: its estimate is no longer committed, and what the reply
        cost counts for its trajectory until the trajectory is journaled. A trajectory that
        got a reply has started, whether or not this invocation admitted its line (a resumed
        run picks up a killed run's batches): its next call is no first call."""
        self.committed -= estimate
        if key is not None:
            self.started.add(key)
            if cost:
                self.live[key] = self.live.get(key, 0.0) + cost
                self.live_total += cost

    def finish(self, key: str, cost: float) -> None:
        """Trajectory ``key`` was journaled, having cost ``cost`` in all."""
        self.live_total -= self.live.pop(key, 0.0)
        self.spent += cost

    def refuse(self, key: str) -> None:
        """Trajectory ``key`` did not start: refused at the cap."""
        self.live_total -= self.live.pop(key, 0.0)
        self.refused += 1


#: The budget of the run whose trajectory the current task runs (None: no cost cap).
BUDGET: ContextVar[Budget | None] = ContextVar("unseen_budget", default=None)
