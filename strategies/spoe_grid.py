"""``spoe-grid``: elimination over a k-way grid (beyond the paper).

Each round divides the region into ``rows`` × ``cols`` numbered cells drawn on the image and
asks which cells are unlikely to hold the target; the model may eliminate several at once.
The region becomes the bounding box of the cells kept (cells not adjacent to each other make
that box larger than their union). ``T`` rounds; one Step per round, with the cells in the
overlay spec and the region after the round. Eliminating every cell is an unusable answer.
A round that narrows nothing (no cell eliminated, or only cells whose kept neighbours still
span the region: the diagonal pair 2 and 3 of a 2x2 grid) ends the search with the region
as it is (``stopped: no narrowing``): asked again, the same request would come back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..engine.backend import Backend
from ..engine.box import Box
from ..engine.graph import Iterates, Parsed, StrategyState, ask_node
from ..engine.types import Reply, Request, Step, Temperature
from .choice import read_cells
from .kit import cells_answer, cells_truth, decoding, full_region, image_turn, render
from .registry import strategy

if TYPE_CHECKING:
    from langgraph.graph import StateGraph


class GridParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rows: int = Field(2, ge=1, le=4)
    cols: int = Field(2, ge=1, le=4)
    T: int = Field(3, ge=1, le=10)
    temperature: Temperature | None = 0.0
    seed: int | None = 0


def cells(region: list[float], rows: int, cols: int) -> list[list[float]]:
    """The grid's cells, numbered row by row from the top left (cell 1)."""
    x1, y1, x2, y2 = region
    w, h = (x2 - x1) / cols, (y2 - y1) / rows
    return [[x1 + c * w, y1 + r * h, x1 + (c + 1) * w, y1 + (r + 1) * h]
            for r in range(rows) for c in range(cols)]


def read_eliminated(text: str, k: int) -> list[int] | None:
    """Cell numbers named for elimination (``choice.read_cells``), or None when the reply
    names none, one out of range, or every cell."""
    return read_cells(text, k).cells


def kept_region(all_cells: list[list[float]], eliminated: list[int]) -> list[float] | None:
    kept = [c for i, c in enumerate(all_cells, start=1) if i not in eliminated]
    if not kept:
        return None
    return [min(c[0] for c in kept), min(c[1] for c in kept),
            max(c[2] for c in kept), max(c[3] for c in kept)]


def grid_regions(truth: list[float], w: int, h: int, params: GridParams) -> list[list[float]]:
    """The grid ceiling: regions after rounds 1..T of a perfect chooser, which eliminates
    every cell that holds no part of the truth (the region: the bounding box of the rest)."""
    region = Box.full(w, h).to_list()
    gt = Box.of(truth)
    out = []
    for _ in range(params.T):
        grid = cells(region, params.rows, params.cols)
        gone = [i for i, c in enumerate(grid, start=1) if gt.intersection(Box.of(c)) <= 0]
        region = kept_region(grid, gone) or region
        out.append(region)
    return out


@strategy("spoe-grid", params=GridParams,
          summary="elimination over a rows x cols grid; several cells per round",
          recursion_limit=lambda p: p.T + 5, asks=lambda p: {"cells"},
          iterates=Iterates(length=lambda p: p.T, ceiling=grid_regions, ceiling_name="grid"),
          prompts=("grid_eliminate.txt",))
def build_grid(params: GridParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    k = params.rows * params.cols

    def region(state: StrategyState) -> list[float]:
        return state.get("region") or full_region(state["instance"])

    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        grid = cells(region(state), params.rows, params.cols)
        labels = [str(i) for i in range(1, k + 1)]
        text = render("grid_eliminate", instruction=inst.text["instruction"], k=k)
        return Request(
            messages=[image_turn(inst, text, overlay={"boxes": grid, "labels": labels})],
            decoding=decoding(params), sample=state.get("sample", 0),
            oracle=cells_truth(inst, grid),
            tags={"t": state.get("t", 0) + 1, "cells": k},
            answer=cells_answer(labels),
        )

    def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
        grid = cells(region(state), params.rows, params.cols)
        reading = read_cells(reply.text, k)
        if reading.cells is None:
            return Parsed(error=reading.error)
        gone = reading.cells
        new = kept_region(grid, gone)
        if new is None:
            return Parsed(error="every cell was eliminated")
        return Parsed(value={"eliminate": gone}, region=new)

    def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
        if parsed.region == region(state):  # nothing narrowed: the next round would repeat
            return {"t": params.T, "region": parsed.region, "prediction": parsed.region,
                    "status": "answered", "stopped": "no narrowing"}
        return {"t": state.get("t", 0) + 1, "region": parsed.region,
                "prediction": parsed.region, "status": "answered"}

    def next_step(state: dict[str, Any]) -> str:
        done = state.get("status") != "answered" or state.get("t", 0) >= params.T
        return END if done else "ask"

    graph = StateGraph(GridState)
    graph.add_node("ask", ask_node("ask", build, parse, update))
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", next_step, ["ask", END])
    return graph


class GridState(StrategyState, total=False):
    stopped: str
