"""``direct``: one question, one box, with the paper's prompt variants (§5.2.1).

``prompt``: ``basic`` (the base prompt), ``hidden`` (ignore the visible objects, reason over
the regions that cannot be seen), ``common`` (adds commonsense knowledge about where such
objects are, from the editable table ``prompts/commonsense.toml``; the entry used is logged)
or ``both``. Graph: START → ask → END: render the prompt, call once, parse the box, convert
it from the model's convention to pixels, clip it to the image.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict

from ..engine.backend import Backend
from ..engine.box import Box, BoxError
from ..engine.boxtext import BoxParseError, parse_box
from ..engine.graph import Parsed, StrategyState, ask_node, user_message
from ..engine.types import (
    AnswerSpec,
    Decoding,
    ImagePart,
    Instance,
    Message,
    Reply,
    Request,
    Step,
)
from .commonsense import lookup
from .prompts import box_format_text, render
from .registry import strategy

Prompt = Literal["basic", "hidden", "common", "both"]


class DirectParams(BaseModel):
    """Deterministic decoding by default, as the paper did, where the provider allows it."""

    model_config = ConfigDict(extra="forbid")
    prompt: Prompt = "basic"
    temperature: float | None = 0.0
    seed: int | None = 0
    max_tokens: int | None = None
    reasoning_effort: str | None = None


def box_oracle(state: StrategyState, **extra: Any) -> dict[str, Any]:
    """The truth, for simulated respondents only (see ``Request.oracle``)."""
    inst = state["instance"]
    return {"task": "box", "instance": inst.id, "truth": inst.truth.get("box"),
            "width": inst.width, "height": inst.height, **extra}


def box_answer(inst: Instance) -> AnswerSpec:
    """What a box request asks for, for a respondent shown controls: one box on the whole
    image, in its pixels (see ``Request.answer``)."""
    return AnswerSpec(kind="box", width=inst.width, height=inst.height)


def read_box(text: str, convention: str, width: int, height: int) -> Parsed:
    """A reply's box in pixels of the original image, or why there is none."""
    try:
        values = parse_box(text)
    except BoxParseError as exc:
        return Parsed(error=str(exc))
    try:
        box = Box.from_convention(values, convention, width, height).clip(width, height)
    except BoxError as exc:
        return Parsed(error=f"invalid box {values} ({convention}): {exc}")
    return Parsed(value=box.to_list(), region=box.to_list())


def decoding(params: Any) -> Decoding:
    return Decoding(temperature=params.temperature, seed=params.seed,
                    max_tokens=params.max_tokens, reasoning_effort=params.reasoning_effort)


def hints(prompt: str, inst: Instance) -> tuple[str, dict[str, Any]]:
    """The hint paragraphs a prompt variant adds, and what to log about them."""
    parts, tags = [], {"prompt": prompt}
    if prompt in ("hidden", "both"):
        parts.append(render("hints/hidden"))
    if prompt in ("common", "both"):
        entry = lookup(inst.text["instruction"], inst.meta.get("affordance"))
        parts.append(render("hints/common", knowledge=entry.text))
        tags["commonsense"] = entry.id
    return "".join(p + "\n" for p in parts), tags


def parse_reply(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
    inst = state["instance"]
    return read_box(reply.text, backend.box_format, inst.width, inst.height)


def answered(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
    return {"prediction": parsed.value, "region": parsed.region, "status": "answered"}


def image_turn(inst: Instance, text: str) -> Message:
    return Message(role="user", parts=user_message(text, ImagePart(path=inst.image)))


@strategy("direct", params=DirectParams,
          summary="one question, one box; prompt=basic|hidden|common|both",
          recursion_limit=lambda p: 5)
def build_direct(params: DirectParams) -> StateGraph:
    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        extra, tags = hints(params.prompt, inst)
        text = render("direct", instruction=inst.text["instruction"], hints=extra,
                      box_format=box_format_text(backend.box_format, inst.width, inst.height))
        return Request(messages=[image_turn(inst, text)], decoding=decoding(params),
                       sample=state.get("sample", 0),
                       oracle=box_oracle(state, prompt=params.prompt), tags=tags,
                       answer=box_answer(inst))

    graph = StateGraph(StrategyState)
    graph.add_node("ask", ask_node("ask", build, parse_reply, answered))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph
