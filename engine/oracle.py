"""The simulator's side channel: the truth a request carries for respondents without a model.

A strategy makes its requests answerable offline by putting a *truth* on them::

    Request(messages=..., oracle=BoxTruth(instance=inst.id, box=inst.truth["box"],
                                          width=inst.width, height=inst.height))

``sim`` (a seeded simulated respondent) and ``baseline`` (fixed rules) read it; a real
backend never does. It is never sent, never part of the reply cache's key and never logged:
``Request.oracle`` is left out of every dump of a request.

**Kinds.** Each truth is a frozen pydantic model; its ``task`` field tells the kinds apart
(a discriminator) and names the simulator task that answers it:

- :class:`BoxTruth` (``box``): the target's ``box`` in the pixels of a ``width`` x
  ``height`` frame (the image as the request shows it, a zoomed-in crop included); ``sim``
  answers a box in its box convention, ``baseline`` draws one by its rule.
- :class:`ChoiceTruth` (``choice``): labelled ``regions`` drawn on the image; ``sim`` names
  the region holding less of the target (``mode="eliminate"``) or more (``"keep"``), and
  takes an unsure answer ``C`` when it is among ``options`` and the target straddles them.
- :class:`CellsTruth` (``cells``): numbered grid ``regions``; ``sim`` names cells to
  eliminate as ``{"eliminate": [...]}``.

Every kind carries ``instance`` (which item; part of the simulator's seed) and ``cues``.

**Cues** (:class:`Cue`) say what the prompt asks of the model beyond the task, as typed
facts rather than the name of a prompt variant: ``hidden`` (the target is hidden, ignore
what is visible), ``commonsense`` (knowledge about where such objects are),
``reasoning`` (reason step by step before answering), ``reflection`` (reflect on an earlier
answer). ``sim`` moves its skill by one knob per cue (``hidden_gain``, ``common_gain``,
``cot_gain``, ``reflect_gain``) and writes reasoning before its box under ``reasoning``.

**A kind of one's own.** A benchmark subclasses :class:`Truth` with a ``task`` literal of its
own (defining the class registers the kind) and teaches the simulator to answer it with
:func:`sim_task` in a module listed under the entry-point group ``unseen.sim_tasks``, so the
simulator finds it whichever module was imported first::

    class CountTruth(Truth):
        task: Literal["count"] = "count"
        count: int

    @sim_task("count")
    def answer_count(sim: Respondent, truth: CountTruth, rng: random.Random) -> str:
        return str(truth.count if rng.random() < sim.knobs.skill else truth.count + 1)

A task function gets the respondent (its ``knobs``, ``seed`` and ``extra(prefix)``: the knobs
a benchmark registered with :func:`register_knobs`), the truth, and a generator seeded by the
whole request; it returns the reply text, ``(text, logprobs)`` or a :class:`SimAnswer`.
README.md, "Making a strategy answerable offline", has the whole example, run as a test.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .plugins import Registry

#: The entry-point group whose modules register simulator tasks, knobs and profiles.
SIM_TASKS_GROUP = "unseen.sim_tasks"


class Cue(StrEnum):
    """What a prompt asks of the model beyond the task (see the module docstring)."""

    HIDDEN = "hidden"
    COMMONSENSE = "commonsense"
    REASONING = "reasoning"
    REFLECTION = "reflection"


class Truth(BaseModel):
    """The base of every kind of truth: ``task`` names the kind (and the simulator task that
    answers it), ``instance`` the item, ``cues`` what the prompt asks beyond the task."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task: str
    instance: str | None = None
    cues: frozenset[Cue] = frozenset()

    #: task → the kind's class, filled as subclasses are defined
    kinds: ClassVar[dict[str, type[Truth]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        task = cls.model_fields["task"].default
        if isinstance(task, str) and task:
            Truth.kinds[task] = cls


Box4 = list[float]  # [x1, y1, x2, y2] in pixels of the frame


class BoxTruth(Truth):
    """The target's box in the pixels of a ``width`` x ``height`` frame; ``box`` is None
    where the instance has no truth (a simulated respondent then refuses the request)."""

    task: Literal["box"] = "box"
    box: Box4 | None
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class ChoiceTruth(Truth):
    """Labelled regions on the image: which one to name (``mode``), among ``options``."""

    task: Literal["choice"] = "choice"
    box: Box4 | None
    regions: list[Box4]
    labels: list[str]
    mode: Literal["eliminate", "keep"] = "eliminate"
    options: list[str] = Field(default_factory=list)  # what the prompt offers; [] = labels


class CellsTruth(Truth):
    """Numbered grid cells (1, 2, ... in ``regions`` order): which to eliminate."""

    task: Literal["cells"] = "cells"
    box: Box4 | None
    regions: list[Box4]


class OracleError(ValueError):
    """A side channel that is not a known kind of truth."""


def truth_of(value: Truth | Mapping[str, Any] | None) -> Truth | None:
    """``value`` as a typed truth: a truth as is, a mapping validated as the kind its
    ``task`` names (kinds registered by entry point included)."""
    if value is None or isinstance(value, Truth):
        return value
    if not isinstance(value, Mapping):
        raise OracleError(f"Request.oracle must be a Truth, got {type(value).__name__}")
    task = value.get("task")
    if task not in Truth.kinds:
        TASKS.load()  # a benchmark's kinds are defined by the modules that answer them
    if task not in Truth.kinds:
        known = ", ".join(sorted(Truth.kinds))
        raise OracleError(f"unknown kind of truth {task!r}; known: {known}")
    return Truth.kinds[task].model_validate(dict(value))


# --- the simulator's side: tasks that answer a kind ----------------------------------------


class Respondent(Protocol):
    """What a simulator task sees of the simulated respondent (``unseen.backends.sim.Sim``)."""

    knobs: Any  # the simulator's own knobs (``SimKnobs``: skill, spread, format_noise, ...)

    @property
    def seed(self) -> int: ...

    def extra(self, prefix: str) -> Any:
        """The knobs registered under ``prefix`` (:func:`register_knobs`), as the spec set
        them, else their defaults."""


@dataclass(frozen=True)
class SimAnswer:
    """An answer with more than its text: log-probabilities of its tokens, a reasoning trace
    (``Reply.reasoning``, as reasoning models return one)."""

    text: str
    logprobs: list | None = None
    reasoning: str | None = None


Answer = Callable[[Respondent, Any, random.Random], "str | tuple[str, list] | SimAnswer"]

#: task → the function that answers it
TASKS: Registry[Answer] = Registry(SIM_TASKS_GROUP, "sim task")
#: knob prefix → the knobs a benchmark's task reads (e.g. ``dir_`` → the Director's)
KNOBS: Registry[type[BaseModel]] = Registry(SIM_TASKS_GROUP, "sim knob prefix")
#: profile name → knob values (the simulator's own and those a benchmark registers)
PROFILES: Registry[dict[str, Any]] = Registry(SIM_TASKS_GROUP, "sim profile")


def sim_task(name: str) -> Callable[[Answer], Answer]:
    """Register the function that answers truths whose ``task`` is ``name``."""
    return TASKS.register(name)


def register_knobs(prefix: str, knobs: type[BaseModel],
                   profiles: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """A benchmark's knobs, spelled ``<prefix><knob>`` in a sim spec, and profiles that may
    set them (and the simulator's own knobs)."""
    KNOBS[prefix] = knobs
    for name, values in (profiles or {}).items():
        PROFILES[name] = dict(values)
