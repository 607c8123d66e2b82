"""``spoe-search``: best-first elimination with backtracking (beyond the paper).

Plain SPoE commits to every choice: n steps at per-step accuracy p succeed with probability
p^n. Here each region on the frontier carries a score, the product of the confidences along
its path (the chosen half gets c, the other half 1 − c, where c is the choice's confidence
from log-probabilities; 0.5 each when the provider gives none). Each call expands the
best-scored region that is less than ``T`` cuts deep; the frontier keeps the ``beam`` best.
A wrong but unsure early choice can thus be undone when a deeper branch scores worse than
the alternative left behind. After ``budget`` calls (default 2·T) or once the best region is
T cuts deep, the best region is the answer. Each call is a Step whose region is the best
region on the frontier after it, so per-step curves read as "the answer after t calls".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field

from ..engine.backend import Backend
from ..engine.graph import Iterates, Parsed, StrategyState, ask_node
from ..engine.types import Reply, Request, Step, Temperature
from .choice import read as read_choice_of
from .kit import (
    choice_answer,
    choice_confidence,
    choice_truth,
    decoding,
    full_region,
    image_turn,
)
from .registry import strategy
from .spoe import LABELS, candidates, halving_regions, question, survivor

if TYPE_CHECKING:
    from langgraph.graph import StateGraph


class SearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    T: int = Field(8, ge=1, le=20)
    beam: int = Field(4, ge=1, le=32)
    budget: int | None = Field(None, ge=1, le=60)  # calls; default 2·T, room to backtrack
    temperature: Temperature | None = 0.0
    seed: int | None = 0


class SearchState(StrategyState, total=False):
    frontier: list[dict[str, Any]]  # {"region", "depth", "score"}
    calls: int


def _frontier(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    inst = state["instance"]
    return state.get("frontier") or [{"region": full_region(inst), "depth": 0, "score": 1.0}]


def _best(frontier: list[dict[str, Any]]) -> dict[str, Any]:
    # ties: the deeper region, then the earlier entry
    return max(frontier, key=lambda n: (n["score"], n["depth"]))


def best_first_regions(truth: list[float], w: int, h: int,
                       params: SearchParams) -> list[list[float]]:
    """The best-first ceiling: a perfect chooser is sure of every choice (confidence 1), so
    the half it leaves scores 0, the search never backtracks and reaches depth T after T
    calls, where it stops; the curve runs on to the call budget with the last region."""
    regions = halving_regions(truth, w, h, params.T)
    budget = params.budget or 2 * params.T
    return (regions + [regions[-1]] * budget)[:budget]


@strategy("spoe-search", params=SearchParams,
          summary="best-first elimination with backtracking; frontier scored by confidences",
          recursion_limit=lambda p: (p.budget or 2 * p.T) + 5, asks=lambda p: {"choice"},
          iterates=Iterates(length=lambda p: p.budget or 2 * p.T, ceiling=best_first_regions,
                            ceiling_name="best-first"),
          # the frontier is scored by the choices' confidences: without log-probabilities
          # every score is 0.5 and the search is blind
          needs=lambda p: {"logprobs"}, prompts=("spoe_eliminate.txt", "spoe_unsure.txt"))
def build_search(params: SearchParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    budget = params.budget or 2 * params.T

    def expandable(state: Mapping[str, Any]) -> dict[str, Any] | None:
        open_nodes = [n for n in _frontier(state) if n["depth"] < params.T]
        return _best(open_nodes) if open_nodes else None

    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        node = expandable(state)
        assert node is not None  # next_step asks only while a node is open
        t = node["depth"] + 1
        a, b = candidates(node["region"], t, 0.5)
        caps = backend.capabilities
        return Request(
            messages=[image_turn(inst, question(inst, "eliminate", t),
                                 overlay={"boxes": [a, b], "labels": LABELS})],
            decoding=decoding(params, choices=LABELS if caps.choices else None, logprobs=True),
            sample=state.get("sample", 0),
            oracle=choice_truth(inst, [a, b], LABELS),
            tags={"expand": node["region"], "depth": t, "score": node["score"]},
            answer=choice_answer(LABELS),
        )

    def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
        node = expandable(state)
        assert node is not None  # next_step asks only while a node is open
        a, b = candidates(node["region"], node["depth"] + 1, 0.5)
        reading = read_choice_of(reply.text, LABELS, "eliminate")
        choice = reading.label
        if choice is None:
            return Parsed(error=reading.error, reason=reading.reason)
        conf = choice_confidence(reply.logprobs, LABELS, choice)
        conf = 0.5 if conf is None else conf
        kept = survivor(a, b, choice, "eliminate")
        gone = a if kept == b else b
        children = [{"region": kept, "depth": node["depth"] + 1, "score": node["score"] * conf},
                    {"region": gone, "depth": node["depth"] + 1,
                     "score": node["score"] * (1 - conf)}]
        frontier = [n for n in _frontier(state) if n is not node and n != node] + children
        frontier = sorted(frontier, key=lambda n: (-n["score"], -n["depth"]))[: params.beam]
        return Parsed(value={"choice": choice, "confidence": conf, "frontier": frontier},
                      region=_best(frontier)["region"])

    def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
        calls = cast(SearchState, state).get("calls", 0)
        return {"frontier": parsed.value["frontier"], "calls": calls + 1,
                "region": parsed.region, "prediction": parsed.region, "status": "answered"}

    def next_step(state: dict[str, Any]) -> str:
        if state.get("status") != "answered" or state.get("calls", 0) >= budget:
            return END
        best = _best(_frontier(state))
        return END if best["depth"] >= params.T or expandable(state) is None else "ask"

    graph = StateGraph(SearchState)
    graph.add_node("ask", ask_node("ask", build, parse, update))
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", next_step, ["ask", END])
    return graph
