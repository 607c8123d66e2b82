"""``direct``: one question, one box (the paper's base prompt).

Graph: START → ask → END. The ask node renders the prompt (instruction plus the sentence on
the backend's box convention), calls the model once, parses the box, converts it from the
model's convention to pixels and clips it to the image.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict

from ..engine.backend import Backend
from ..engine.box import Box, BoxError
from ..engine.boxtext import BoxParseError, parse_box
from ..engine.graph import Parsed, StrategyState, ask_node, user_message
from ..engine.types import Decoding, ImagePart, Message, Reply, Request, Step
from .prompts import box_format_text, render
from .registry import strategy


class DirectParams(BaseModel):
    """Deterministic decoding by default, as the paper did, where the provider allows it."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = 0.0
    seed: int | None = 0
    max_tokens: int | None = None
    reasoning_effort: str | None = None


def box_oracle(state: StrategyState) -> dict[str, Any]:
    """The truth, for simulated respondents only (see ``Request.oracle``)."""
    inst = state["instance"]
    return {"task": "box", "instance": inst.id, "truth": inst.truth.get("box"),
            "width": inst.width, "height": inst.height}


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
    return Parsed(value=box.to_list())


def decoding(params: DirectParams) -> Decoding:
    return Decoding(temperature=params.temperature, seed=params.seed,
                    max_tokens=params.max_tokens, reasoning_effort=params.reasoning_effort)


@strategy("direct", params=DirectParams,
          summary="one question, one box: the base prompt", recursion_limit=lambda p: 5)
def build_direct(params: DirectParams) -> StateGraph:
    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        text = render(
            "direct_basic",
            instruction=inst.text["instruction"],
            box_format=box_format_text(backend.box_format, inst.width, inst.height),
        )
        return Request(
            messages=[Message(role="user", parts=user_message(text, ImagePart(path=inst.image)))],
            decoding=decoding(params), sample=state.get("sample", 0), oracle=box_oracle(state),
        )

    def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
        inst = state["instance"]
        return read_box(reply.text, backend.box_format, inst.width, inst.height)

    def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
        return {"prediction": parsed.value, "status": "answered"}

    graph = StateGraph(StrategyState)
    graph.add_node("ask", ask_node("ask", build, parse, update))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph
