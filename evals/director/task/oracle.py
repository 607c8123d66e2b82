"""The Director Task's kinds of truth for the simulator's side channel (``engine.oracle``).

``director``: one turn of a condition (:class:`DirectorTruth`: the scene's answer key, the
condition, the turn and the fields it asks); ``director-code``: one batch of reasoning traces
to code (:class:`CoderTruth`). Defining the classes registers the kinds; the simulator tasks
that answer them are in :mod:`..sim.simulated`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ....engine.oracle import Truth


class SceneKey(BaseModel):
    """A scene's answer key, as the simulated respondent reads it (``Instance.truth``)."""

    model_config = ConfigDict(frozen=True)
    hidden_digit: int
    visible_digits: list[int]
    director_view_digit: int
    largest_digit_visible: int | None = None
    apparent_size_flag: bool = False
    digits: list[int] = []
    largest_digit: int | None = None  # the largest block on the table, where known

    @classmethod
    def of(cls, truth: Mapping[str, Any]) -> SceneKey:
        """The key's fields of an instance's truth (other entries are left out)."""
        return cls(**{k: v for k, v in truth.items() if k in cls.model_fields})

    def as_dict(self) -> dict[str, Any]:
        """The key as the respondent model's functions take it."""
        return self.model_dump()


class DirectorTruth(Truth):
    """One turn of a Director condition: ``fields`` are what this turn asks."""

    task: Literal["director"] = "director"
    condition: str
    turn: int = 0
    fields: list[str]
    key: SceneKey


class CoderTruth(Truth):
    """A batch of reasoning traces to code (``meta["items"]`` of a coding instance)."""

    task: Literal["director-code"] = "director-code"
    items: list[dict[str, Any]]
    second_pass: bool = False
