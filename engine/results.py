"""What a run did, counted as its trajectories finish: :class:`RunResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Error kinds that are answers, not failures: a reply that could not be used is the model's
# answer (engine.graph.ANSWER_REASONS), a person's "can't tell" a choice.
ANSWERS = ("parse", "format_mismatch", "ambiguous", "length", "skipped")


@dataclass
class RunResult:
    run_dir: Path
    total: int = 0
    skipped: int = 0
    done: int = 0
    answered: int = 0
    errors: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    first_s: float | None = None  # seconds until the first trajectory finished (start-up)
    by_error: dict[str, int] = field(default_factory=dict)
    # the same counts per strategy label: which method goes unanswered, and why
    by_strategy: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)  # the first message of each kind
    # replies cut at a length limit, and trajectories answered by a fallback, by strategy
    length_stops: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)
    # the cost cap: US dollars the run directory spent (``spent_before`` of them before this
    # call), the cap, and whether the run stopped at it
    spent: float = 0.0
    spent_before: float = 0.0
    max_cost: float | None = None
    cost_capped: bool = False

    def add(self, status: str, error_kind: str | None, cached_steps: int,
            message: str = "", notes: dict[str, Any] | None = None,
            strategy: str = "") -> None:
        """Count one finished trajectory."""
        notes = notes or {}
        self.length_stops += int(notes.get("length_stops", 0))
        if notes.get("fallback"):
            self.fallbacks[strategy] = self.fallbacks.get(strategy, 0) + 1
        self.done += 1
        self.answered += status == "answered"
        if error_kind is not None:
            self.by_error[error_kind] = self.by_error.get(error_kind, 0) + 1
            per = self.by_strategy.setdefault(strategy, {})
            per[error_kind] = per.get(error_kind, 0) + 1
            self.errors += error_kind not in ANSWERS
            self.examples.setdefault(error_kind, message)
        self.cache_hits += cached_steps

    @property
    def failures(self) -> dict[str, int]:
        """Failed trajectories of this call by error kind, most first (see :data:`ANSWERS`)."""
        kinds = {k: n for k, n in self.by_error.items() if k not in ANSWERS}
        return dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
