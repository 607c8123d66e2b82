"""The read side's typed record: one journal line as views and reports read it.

A :class:`TrajectoryRecord` is a plain dict (what ``json`` reads, no object built per line)
with the shape of :class:`~.types.Trajectory`, every field present: the run directory
(``RunDir.records()``, ``RunDir.record(head)``) fills in what an older journal left out, so a
reader indexes (``rec["steps"][0]["reply"]["error"]``) instead of guessing with ``.get``, and
a type checker sees every key. ``tests/engine/test_records.py`` holds these shapes to the
models' fields, so they cannot drift apart.

What is filled in where: the top-level fields on every read (``RunDir.records()``, the heads'
pass); the steps' fields too where a view shows the steps (``RunDir.record(head)`` and
``journal.checked``: the record validated whole by :class:`~.types.Trajectory`).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class ErrorRecord(TypedDict):
    """:class:`~.types.ErrorInfo`: a typed failure."""

    kind: str
    message: str
    status: int | None
    attempts: int


class UsageRecord(TypedDict):
    """:class:`~.types.Usage`: token counts as the provider bills them."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_input_tokens: int


class ImageRecord(TypedDict):
    """:class:`~.types.ImagePart`: an image by reference, with its overlay spec."""

    type: Literal["image"]
    path: str
    overlay: dict[str, Any] | None


class ReplyRecord(TypedDict):
    """:class:`~.types.Reply`: what the model answered (or the error)."""

    text: str
    reasoning: str | None
    usage: UsageRecord
    latency_s: float
    finish_reason: str | None
    cached: bool
    logprobs: list[dict[str, Any]] | None
    error: ErrorRecord | None
    served: dict[str, Any] | None


class StepRecord(TypedDict):
    """:class:`~.types.Step`: what one node did."""

    index: int
    name: str
    prompt: str
    images: list[ImageRecord]
    messages: int
    reply: ReplyRecord
    parsed: Any
    parse_error: str | None
    region: list[float] | None
    info: dict[str, Any]
    seconds: float


class TrajectoryRecord(TypedDict):
    """:class:`~.types.Trajectory`: one current line of the journal."""

    key: str
    run: str
    instance_id: str
    strategy: str
    params: dict[str, Any]
    backend: str
    model: str
    simulated: bool
    sample: int
    status: Literal["answered", "unanswered"]
    error: ErrorRecord | None
    prediction: Any
    metrics: dict[str, float]
    notes: dict[str, Any]
    steps: list[StepRecord]
    seconds: float
    finished_at: str


#: what :class:`~.types.Trajectory` defaults, for a record that left a field out
TOP_DEFAULTS: dict[str, Any] = {"run": "", "simulated": False, "sample": 0, "error": None,
                                "prediction": None, "seconds": 0.0, "finished_at": ""}
#: the defaults that are mutable: a fresh one for each record
TOP_FACTORIES = ("params", "metrics", "notes", "steps")


def fill_top(rec: dict[str, Any]) -> TrajectoryRecord:
    """``rec`` with every top-level field :class:`TrajectoryRecord` names (the defaults of
    :class:`~.types.Trajectory` where it has none), in place."""
    for k, v in TOP_DEFAULTS.items():
        if k not in rec:
            rec[k] = v
    for k in TOP_FACTORIES:
        if k not in rec:
            rec[k] = {} if k != "steps" else []
    return rec  # type: ignore[return-value]  # the fields the heads' check typed, now all there
