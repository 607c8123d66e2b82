"""The strategy-author kit: what the nodes of every strategy share.

- **Turns**: :func:`image_turn` (the instance's image, maybe with an overlay, then the text),
  :func:`text_turn` (a text-only turn: a reply carried into a dialogue, a follow-up).
- **Prompts**: :func:`render` fills a template of ``prompts/`` by its named slots (never
  edit a rendered prompt); :func:`box_format_text` is the sentence that asks for a box in a
  backend's convention (``backend.box_format``).
- **Decoding**: :func:`decoding` takes the sampling parameters a strategy's params declare.
- **Reading replies**: :func:`read_box` (a box in the model's convention → pixels, clipped),
  :func:`read_choice` (a label among ``A``, ``B``, ...), :func:`choice_confidence`.
- **What a request asks** (``Request.answer``, for a person's page): :func:`box_answer`,
  :func:`choice_answer`, :func:`cells_answer`.
- **The truth for offline respondents** (``Request.oracle``, see ``engine.oracle``):
  :func:`box_truth`, :func:`choice_truth`, :func:`cells_truth`, with :class:`Cue` to say
  what the prompt asks beyond the task.

``strategies/direct.py`` is the shortest strategy built from these; README.md, "Writing a
strategy" and "Making a strategy answerable offline", walk through one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..engine.box import Box, BoxError, Convention
from ..engine.boxtext import BoxParseError, find_box
from ..engine.graph import Parsed, user_message
from ..engine.oracle import BoxTruth, CellsTruth, ChoiceTruth, Cue
from ..engine.types import AnswerSpec, Decoding, ImagePart, Instance, Message, TextPart
from .choice import choice_confidence, read_choice
from .prompts import box_format_text, render

__all__ = [
    "Cue", "Parsed", "box_answer", "box_format_text", "box_truth", "cells_answer",
    "cells_truth", "choice_answer", "choice_confidence", "choice_truth", "decoding",
    "full_region", "image_turn", "read_box", "read_choice", "render", "text_turn",
]

# --- turns -----------------------------------------------------------------------------------


def image_turn(inst: Instance, text: str, overlay: dict[str, Any] | None = None) -> Message:
    """A user turn: the instance's image (with ``overlay`` drawn on it: labelled ``boxes``,
    or a ``crop``), then ``text``."""
    return Message(role="user", parts=user_message(text, ImagePart(path=inst.image,
                                                                   overlay=overlay)))


def text_turn(text: str, role: str = "user") -> Message:
    """A turn of text only: ``role="assistant"`` carries an earlier reply into a dialogue."""
    return Message(role=role, parts=[TextPart(text=text)])  # type: ignore[arg-type]


def full_region(inst: Instance) -> list[float]:
    """The whole image as a pixel region, where region strategies start."""
    return Box.full(inst.width, inst.height).to_list()


# --- decoding --------------------------------------------------------------------------------

_SAMPLING = ("temperature", "seed", "max_tokens", "reasoning_effort")


def decoding(params: Any, **overrides: Any) -> Decoding:
    """Decoding from the sampling parameters ``params`` declares (``temperature``, ``seed``,
    ``max_tokens``, ``reasoning_effort``; the ones it lacks stay the provider's default),
    then ``overrides`` (``choices=``, ``logprobs=``, ``json_schema=``)."""
    values = {k: getattr(params, k) for k in _SAMPLING if hasattr(params, k)}
    return Decoding(**{**values, **overrides})


# --- reading replies -------------------------------------------------------------------------


def read_box(text: str, convention: str | None, width: int, height: int) -> Parsed:
    """A reply's box in pixels of a ``width`` x ``height`` frame, or why there is none:
    the last box written (``engine.boxtext.find_box``), checked against the backend's
    ``convention`` (``backend.box_format``, an ``engine.box.Convention`` with the backend's
    image settings), converted, clipped to the frame.

    A box written in another convention's form (a ``bbox_2d`` key where ``box`` was asked)
    or with a number outside the convention's range (past 1000 in a 0-1000 convention) is
    never rescaled by guess: it is unusable with reason ``format_mismatch``."""
    conv = Convention.of(convention)
    try:
        found = find_box(text)
    except BoxParseError as exc:
        return Parsed(error=str(exc))
    values = found.values
    if not conv.accepts(found.source):
        written = {"list": "a bare list", "internvl": "InternVL's <box>[[...]]</box>",
                   "qwen2": "Qwen2-VL's (x1,y1),(x2,y2)"}.get(found.source, repr(found.source))
        return Parsed(error=f"the box {values} is written as {written}, not the "
                            f"{conv.key!r} the {conv.name} prompt asked for",
                      reason="format_mismatch")
    if (why := conv.out_of_range(values, width, height)) is not None:
        return Parsed(error=f"the box {values}: {why}", reason="format_mismatch")
    try:
        box = Box.from_convention(values, conv, width, height).clip(width, height)
    except BoxError as exc:
        return Parsed(error=f"invalid box {values} ({conv.name}): {exc}")
    return Parsed(value=box.to_list(), region=box.to_list())


# --- what a request asks (Request.answer) ----------------------------------------------------


def box_answer(width: int, height: int) -> AnswerSpec:
    """One box, in the pixels of the ``width`` x ``height`` frame the request shows."""
    return AnswerSpec(kind="box", width=width, height=height)


def choice_answer(options: list[str]) -> AnswerSpec:
    """One of ``options``."""
    return AnswerSpec(kind="choice", choices=list(options))


def cells_answer(labels: list[str]) -> AnswerSpec:
    """Any of the cells ``labels`` (to eliminate; at least one kept)."""
    return AnswerSpec(kind="cells", choices=list(labels))


# --- the truth for offline respondents (Request.oracle) --------------------------------------


def _target(inst: Instance) -> list[float] | None:
    return inst.truth.get("box")


def box_truth(inst: Instance, *, cues: Iterable[Cue] = (),
              crop: Sequence[float] | None = None) -> BoxTruth:
    """The instance's target box for a box request on the whole image, or on ``crop`` (a
    pixel region shown zoomed in: the box in the crop's pixels, clipped to it; where the
    target lies outside the crop, a 4-pixel box in its corner, so the respondent still
    answers)."""
    box = _target(inst)
    if crop is None:
        return BoxTruth(instance=inst.id, box=box, width=inst.width, height=inst.height,
                        cues=frozenset(cues))
    x0, y0 = round(crop[0]), round(crop[1])
    w, h = round(crop[2]) - x0, round(crop[3]) - y0
    if box is not None:
        shifted = [box[0] - x0, box[1] - y0, box[2] - x0, box[3] - y0]
        try:
            box = Box.of(shifted).clip(w, h).to_list()
        except ValueError:  # the target was cut away: the respondent sees a corner instead
            box = [0.0, 0.0, min(4.0, w), min(4.0, h)]
    return BoxTruth(instance=inst.id, box=box, width=w, height=h, cues=frozenset(cues))


def choice_truth(inst: Instance, regions: list[list[float]], labels: list[str], *,
                 mode: str = "eliminate", options: list[str] | None = None,
                 cues: Iterable[Cue] = ()) -> ChoiceTruth:
    """The target against labelled ``regions``: name the one to ``eliminate`` (or
    ``keep``), among ``options`` (default: the labels; ``C`` there is an unsure answer)."""
    return ChoiceTruth(instance=inst.id, box=_target(inst), regions=regions, labels=labels,
                       mode=mode, options=list(options or labels),  # type: ignore[arg-type]
                       cues=frozenset(cues))


def cells_truth(inst: Instance, regions: list[list[float]], *,
                cues: Iterable[Cue] = ()) -> CellsTruth:
    """The target against numbered grid cells (1, 2, ... in ``regions`` order)."""
    return CellsTruth(instance=inst.id, box=_target(inst), regions=regions,
                      cues=frozenset(cues))
