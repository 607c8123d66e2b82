"""``cot`` and ``cot-sr``: the paper's reasoning-based prompting (§5.2.2).

``cot`` asks for three steps in one call (which functional object the task needs; whether
it is visible; where it must be, from commonsense and visual cues), then the final box.
``cot-sr`` adds a second turn that carries the first answer and asks the model to reflect and
confirm or revise it: two calls, two Steps, so a report can score the box before and after
reflection. The final answer is the reflection's. When the reflection gives no usable box
("Sorry, unsure.", a box in another convention, a reply cut short), the first box stands:
the trajectory is answered with it, the second Step records why the revision was unusable
(``info.fallback`` = ``first box kept``), and such trajectories are counted apart
(``Trajectory.notes``; the run's summary and ``unseen show`` name how many). A failed call
(the provider's error) still leaves the trajectory unanswered, to be retried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..engine.backend import Backend
from ..engine.graph import Parsed, StrategyState, ask_node
from ..engine.types import MaxTokens, Message, ReasoningEffort, Reply, Request, Temperature
from .direct import answered, parse_reply
from .kit import (
    Cue,
    box_answer,
    box_format_text,
    box_truth,
    decoding,
    image_turn,
    render,
    text_turn,
)
from .registry import strategy

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

#: what the two turns ask beyond the task, for offline respondents (``engine.oracle``)
COT_CUES = frozenset({Cue.REASONING})
REFLECT_CUES = frozenset({Cue.REASONING, Cue.REFLECTION})


class CotParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: Temperature | None = 0.0
    seed: int | None = 0
    max_tokens: MaxTokens | None = None
    reasoning_effort: ReasoningEffort | None = None


def _first_turn(state: StrategyState, backend: Backend) -> Message:
    inst = state["instance"]
    text = render("cot", instruction=inst.text["instruction"],
                  box_format=box_format_text(backend.box_format, inst.width, inst.height))
    return image_turn(inst, text)


def _graph(params: CotParams, reflect: bool) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    def ask_cot(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        return Request(messages=[_first_turn(state, backend)], decoding=decoding(params),
                       sample=state.get("sample", 0), oracle=box_truth(inst, cues=COT_CUES),
                       answer=box_answer(inst.width, inst.height))

    def ask_reflect(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        first = state["steps"][-1]
        text = render("reflect",
                      box_format=box_format_text(backend.box_format, inst.width, inst.height))
        turns = [_first_turn(state, backend), text_turn(first.reply.text, role="assistant"),
                 text_turn(text)]
        return Request(messages=turns, decoding=decoding(params), sample=state.get("sample", 0),
                       oracle=box_truth(inst, cues=REFLECT_CUES),
                       answer=box_answer(inst.width, inst.height))

    graph = StateGraph(StrategyState)
    graph.add_node("cot", ask_node("cot", ask_cot, parse_reply, answered))
    graph.add_edge(START, "cot")
    if not reflect:
        graph.add_edge("cot", END)
        return graph
    graph.add_node("reflect", ask_node("reflect", ask_reflect, parse_revision, answered))

    def after_cot(state: dict[str, Any]) -> str:
        return "reflect" if state.get("status") == "answered" else END

    graph.add_conditional_edges("cot", after_cot, ["reflect", END])
    graph.add_edge("reflect", END)
    return graph


KEPT = "first box kept"


def parse_revision(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
    """The reflection's box; where it gives none, the first turn's box stands."""
    parsed = parse_reply(state, backend, reply)
    if parsed.error is None:
        return parsed
    first = state.get("prediction")
    return Parsed(value=first, region=first, error=parsed.error, reason=parsed.reason,
                  fallback=KEPT)


@strategy("cot", params=CotParams, summary="three reasoning steps, then the box (one call)",
          recursion_limit=lambda p: 5, prompts=("cot.txt", "box/*.txt"))
def build_cot(params: CotParams) -> StateGraph:
    return _graph(params, reflect=False)


@strategy("cot-sr", params=CotParams,
          summary="cot, then a second turn to reflect and confirm or revise (two calls)",
          recursion_limit=lambda p: 8, prompts=("cot.txt", "reflect.txt", "box/*.txt"))
def build_cot_sr(params: CotParams) -> StateGraph:
    return _graph(params, reflect=True)
