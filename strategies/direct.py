"""``direct``: one question, one box, with the paper's prompt variants (§5.2.1).

``prompt``: ``basic`` (the base prompt), ``hidden`` (ignore the visible objects, reason over
the regions that cannot be seen), ``common`` (adds commonsense knowledge about where such
objects are, from the editable table ``prompts/commonsense.toml``; the entry used is logged)
or ``both``. Graph: START → ask → END: render the prompt, call once, parse the box, convert
it from the model's convention to pixels, clip it to the image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..engine.backend import Backend
from ..engine.graph import Parsed, StrategyState, ask_node
from ..engine.types import Instance, MaxTokens, ReasoningEffort, Reply, Request, Step, Temperature
from .commonsense import lookup
from .kit import (
    Cue,
    box_answer,
    box_format_text,
    box_truth,
    decoding,
    image_turn,
    read_box,
    render,
)
from .registry import strategy

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

Prompt = Literal["basic", "hidden", "common", "both"]
#: what each prompt variant adds to the task, for offline respondents (``engine.oracle``)
CUES: dict[str, frozenset[Cue]] = {
    "basic": frozenset(), "hidden": frozenset({Cue.HIDDEN}),
    "common": frozenset({Cue.COMMONSENSE}), "both": frozenset({Cue.HIDDEN, Cue.COMMONSENSE}),
}


class DirectParams(BaseModel):
    """Deterministic decoding by default, as the paper did, where the provider allows it."""

    model_config = ConfigDict(extra="forbid")
    prompt: Prompt = "basic"
    temperature: Temperature | None = 0.0
    seed: int | None = 0
    max_tokens: MaxTokens | None = None
    reasoning_effort: ReasoningEffort | None = None


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
    """The reply's box in pixels of the instance's image."""
    inst = state["instance"]
    return read_box(reply.text, backend.box_format, inst.width, inst.height)


def answered(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
    """A box ends the trajectory: it is the prediction."""
    return {"prediction": parsed.value, "region": parsed.region, "status": "answered"}


@strategy("direct", params=DirectParams,
          summary="one question, one box; prompt=basic|hidden|common|both",
          recursion_limit=lambda p: 5,
          prompts=("direct.txt", "hints/*.txt", "commonsense.toml", "box/*.txt"))
def build_direct(params: DirectParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        extra, tags = hints(params.prompt, inst)
        text = render("direct", instruction=inst.text["instruction"], hints=extra,
                      box_format=box_format_text(backend.box_format, inst.width, inst.height))
        return Request(messages=[image_turn(inst, text)], decoding=decoding(params),
                       sample=state.get("sample", 0), tags=tags,
                       oracle=box_truth(inst, cues=CUES[params.prompt]),
                       answer=box_answer(inst.width, inst.height))

    graph = StateGraph(StrategyState)
    graph.add_node("ask", ask_node("ask", build, parse_reply, answered))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph
