"""``quadrant``: an example strategy plug-in. Each round draws the current region's four
quadrants, labelled A (top left), B (top right), C (bottom left), D (bottom right), asks which
one holds the target, and keeps it; ``T`` rounds.

It shows what a strategy declares when it registers (see docs/writing-a-strategy.md):
- ``asks``: its requests ask for a choice, so a fixed rule (``baseline:*``, which draws
  boxes) is refused before any call, while ``sim`` answers;
- ``iterates``: it narrows a region step by step, so ``unseen curve`` draws it per round,
  with its own ceiling (a perfect chooser keeps the quadrant holding most of the target);
- a truth on every request (``choice_truth``), so it runs offline against ``sim``;
- ``answer`` (``choice_answer``), so a person can play it on the ``human`` page.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, Field

from unseen import strategy
from unseen.engine.box import Box
from unseen.engine.graph import Iterates, Parsed, StrategyState, ask_node
from unseen.engine.types import Request
from unseen.strategies.kit import (
    choice_answer,
    choice_confidence,
    choice_truth,
    decoding,
    full_region,
    image_turn,
    read_choice,
)

LABELS = ["A", "B", "C", "D"]
PROMPT = ("Task: {instruction}\n"
          "The object the task needs is hidden in this image. The image shows four regions, "
          "A, B, C and D. Which region most likely holds the hidden object? "
          "Answer with one letter: A, B, C or D.")


class QuadrantParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    T: int = Field(3, ge=1, le=8)
    temperature: float | None = 0.0
    seed: int | None = 0


def quadrants(region: list[float]) -> list[list[float]]:
    """The four quadrants of ``region``, in the order A, B, C, D."""
    x1, y1, x2, y2 = region
    xm, ym = (x1 + x2) / 2, (y1 + y2) / 2
    return [[x1, y1, xm, ym], [xm, y1, x2, ym], [x1, ym, xm, y2], [xm, ym, x2, y2]]


def perfect_regions(truth: list[float], w: int, h: int, params: QuadrantParams) -> list[list[float]]:
    """The ceiling: a perfect chooser keeps the quadrant holding most of the target."""
    region, gt, out = Box.full(w, h).to_list(), Box.of(truth), []
    for _ in range(params.T):
        region = max(quadrants(region), key=lambda q: gt.intersection(Box.of(q)))
        out.append(region)
    return out


@strategy("quadrant", params=QuadrantParams, summary="keep one of four quadrants, T rounds",
          recursion_limit=lambda p: p.T + 5, asks=lambda p: {"choice"},
          iterates=Iterates(length=lambda p: p.T, ceiling=perfect_regions,
                            ceiling_name="quadrants"))
def build_quadrant(params: QuadrantParams) -> StateGraph:
    def region(state: StrategyState) -> list[float]:
        return state.get("region") or full_region(state["instance"])

    def ask(state: StrategyState, backend: Any) -> Request:
        inst = state["instance"]
        quads = quadrants(region(state))
        caps = backend.capabilities
        return Request(
            messages=[image_turn(inst, PROMPT.format(instruction=inst.text["instruction"]),
                                 overlay={"boxes": quads, "labels": LABELS})],
            decoding=decoding(params, choices=LABELS if caps.choices else None,
                              logprobs=caps.logprobs),
            sample=state.get("sample", 0),
            answer=choice_answer(LABELS),
            oracle=choice_truth(inst, quads, LABELS, mode="keep"),
            tags={"t": state.get("t", 0) + 1})

    def parse(state: StrategyState, backend: Any, reply: Any) -> Parsed:
        choice = read_choice(reply.text, LABELS)
        if choice is None:
            return Parsed(error=f"no region A-D in the reply: {reply.text[:60]!r}")
        kept = quadrants(region(state))[LABELS.index(choice)]
        return Parsed(value={"choice": choice,
                             "confidence": choice_confidence(reply.logprobs, LABELS, choice)},
                      region=kept)

    def update(state: StrategyState, step: Any, parsed: Parsed) -> dict[str, Any]:
        return {"t": state.get("t", 0) + 1, "region": parsed.region,
                "prediction": parsed.region, "status": "answered"}

    def next_step(state: dict[str, Any]) -> str:
        done = state.get("status") != "answered" or state.get("t", 0) >= params.T
        return END if done else "ask"

    graph = StateGraph(StrategyState)
    graph.add_node("ask", ask_node("ask", ask, parse, update))
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", next_step, ["ask", END])
    return graph
