"""``spoe``: the Spatial Process of Elimination (paper §5.2.3, Algorithm 1).

B starts as the full image. At iteration t = 1..T, B is split in two, vertically (left |
right) when t is odd and horizontally (top / bottom) when t is even; both halves are drawn on
the image, labelled A (left or top) and B (right or bottom); the model names the region less
likely to hold the target (``mode=eliminate``) or, for comparison, more likely
(``mode=keep``); B becomes the other half (or the kept one). B is returned.

One Step per iteration holds the overlay spec (the two boxes and labels; the image is drawn
again from it, never kept in state), the reply, the choice, its confidence where the
provider gives log-probabilities, and the region after the step. An unreadable reply ends
the trajectory as unanswered; the regions so far stay in the Steps.

Beyond the paper, as parameters: ``share`` > 0.5 makes the halves overlap so a target on
the cut survives; ``tau`` stops (returning the current region) when the choice's confidence
falls below it; ``unsure`` offers a third answer, C ("neither is clearly less likely"),
which stops the search; ``min_area`` stops once the region is smaller than that share of the
image; ``finish=direct`` ends with a direct box asked inside the zoomed-in region, mapped
back to the image (a hybrid of elimination and direct grounding); ``votes=N`` asks N sampled
replies per step and lets the majority decide, the vote share being the confidence.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..engine.backend import Backend
from ..engine.box import Box
from ..engine.graph import (
    Iterates,
    Parsed,
    StrategyState,
    ask_node,
    backend_of,
    prompt_text,
    request_images,
)
from ..engine.types import Decoding, ErrorInfo, Instance, Reply, Request, Step, Temperature, Usage
from .choice import read as read_choice_of
from .kit import (
    box_answer,
    box_format_text,
    box_truth,
    choice_answer,
    choice_confidence,
    choice_truth,
    decoding,
    full_region,
    image_turn,
    read_box,
    render,
)
from .registry import strategy

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import StateGraph

LABELS = ["A", "B"]
SIDES = {"vertical": ("the left part", "the right part"),
         "horizontal": ("the top part", "the bottom part")}


class SpoeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    T: int = Field(8, ge=1, le=30)
    mode: Literal["eliminate", "keep"] = "eliminate"
    share: float = Field(0.5, ge=0.5, lt=1.0)
    tau: float | None = Field(None, ge=0.5, le=1.0)
    min_area: float | None = Field(None, gt=0.0, lt=1.0)
    unsure: bool = False  # offer "C: neither is clearly less likely", which stops the search
    votes: int = Field(1, ge=1, le=15)  # self-consistency: sampled votes per step, majority wins
    vote_temperature: float = Field(0.7, ge=0.0, le=2.0)
    finish: Literal["none", "direct"] = "none"  # "direct": a box asked inside the zoomed region
    structured: bool = True
    temperature: Temperature | None = 0.0
    seed: int | None = 0


def axis_for(t: int) -> str:
    """Algorithm 1's Split(B, t mod 2): vertical cut when t is odd, horizontal when even."""
    return "vertical" if t % 2 == 1 else "horizontal"


def candidates(region: list[float], t: int, share: float) -> tuple[list[float], list[float]]:
    """Regions A and B of iteration t (1-based)."""
    a, b = Box.of(region).split(axis_for(t), share)  # type: ignore[arg-type]
    return a.to_list(), b.to_list()


def survivor(a: list[float], b: list[float], choice: str, mode: str) -> list[float]:
    """The region left after the choice: the other one when eliminating."""
    picked_a = choice == "A"
    if mode == "eliminate":
        return b if picked_a else a
    return a if picked_a else b


def halving_regions(truth: list[float], w: int, h: int, T: int,
                    share: float = 0.5) -> list[list[float]]:
    """The halving ceiling: regions after iterations 1..T of a perfect chooser, which
    eliminates the half holding less of the truth (ties: A). A target cut by a split line
    is lost even so: hard halving cannot do better."""
    region = Box.full(w, h).to_list()
    gt = Box.of(truth)
    out = []
    for t in range(1, T + 1):
        a, b = candidates(region, t, share)
        region = b if gt.intersection(Box.of(a)) <= gt.intersection(Box.of(b)) else a
        out.append(region)
    return out


def _region(state: StrategyState) -> list[float]:
    return state.get("region") or full_region(state["instance"])


def question(inst: Instance, mode: str, t: int, unsure: bool = False) -> str:
    """Iteration t's question: which of the two halves to eliminate (or keep); ``unsure``
    offers C, "neither is clearly less likely", through the template's slots."""
    sides = SIDES[axis_for(t)]
    return render(f"spoe_{mode}", instruction=inst.text["instruction"], a_side=sides[0],
                  b_side=sides[1], unsure=render("spoe_unsure") + " " if unsure else "",
                  letters="A, B or C" if unsure else "A or B")


@strategy("spoe", params=SpoeParams, summary="Spatial Process of Elimination: halve, ask, repeat",
          recursion_limit=lambda p: p.T + 6,
          asks=lambda p: {"choice", *(["box"] if p.finish == "direct" else [])},
          # a confidence stop reads log-probabilities, unless votes give the confidence
          needs=lambda p: {"logprobs"} if p.tau is not None and p.votes == 1 else set(),
          prompts=("spoe_*.txt", "box/*.txt"),
          iterates=Iterates(length=lambda p: p.T, ceiling_name="halving",
                            ceiling=lambda gt, w, h, p: halving_regions(gt, w, h, p.T, p.share)))
def build_spoe(params: SpoeParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    options = LABELS + (["C"] if params.unsure else [])

    def build(state: StrategyState, backend: Backend) -> Request:
        inst = state["instance"]
        t = state.get("t", 0) + 1
        a, b = candidates(_region(state), t, params.share)
        text = question(inst, params.mode, t, params.unsure)
        caps = backend.capabilities
        return Request(
            messages=[image_turn(inst, text, overlay={"boxes": [a, b], "labels": LABELS})],
            decoding=decoding(params, logprobs=caps.logprobs,
                              choices=options if params.structured and caps.choices else None),
            sample=state.get("sample", 0),
            oracle=choice_truth(inst, [a, b], LABELS, mode=params.mode, options=options),
            tags={"t": t, "axis": axis_for(t), "candidates": [a, b]},
            answer=choice_answer(options),
        )

    def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
        t = state.get("t", 0) + 1
        a, b = candidates(_region(state), t, params.share)
        reading = read_choice_of(reply.text, options, params.mode)
        choice = reading.label
        if choice is None:
            return Parsed(error=reading.error, reason=reading.reason)
        conf = choice_confidence(reply.logprobs, options, choice)
        unsure = params.tau is not None and conf is not None and conf < params.tau
        # an unsure answer (C, or a confidence under tau) stops with the region as it was:
        # the step's region is that one, so curves score what the trajectory answers
        region = _region(state) if choice == "C" or unsure else \
            survivor(a, b, choice, params.mode)
        return Parsed(value={"choice": choice, "confidence": conf}, region=region)

    def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
        conf = parsed.value["confidence"]
        if parsed.value["choice"] == "C":
            return {"t": params.T, "status": "answered", "prediction": _region(state),
                    "stopped": "unsure"}
        if params.tau is not None and conf is not None and conf < params.tau:
            # unsure: stop here and keep the region as it was before this step
            return {"t": params.T, "status": "answered", "prediction": _region(state),
                    "stopped": "unsure"}
        return {"t": state.get("t", 0) + 1, "region": parsed.region,
                "prediction": parsed.region, "status": "answered"}

    done = "finish" if params.finish == "direct" else END

    def next_step(state: dict[str, Any]) -> str:
        if state.get("status") != "answered":
            return END
        if state.get("t", 0) >= params.T:
            return done
        if params.min_area is not None:
            inst = state["instance"]
            if Box.of(state["region"]).area < params.min_area * inst.width * inst.height:
                return done
        return "ask"

    graph = StateGraph(SpoeState)
    node = ask_node("ask", build, parse, update) if params.votes == 1 else \
        vote_node(params, build, parse, update)
    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    # every target next_step can return, END included: an unanswered step ends the trajectory
    # even when a finish node follows a full search
    graph.add_conditional_edges("ask", next_step, list(dict.fromkeys(["ask", done, END])))
    if params.finish == "direct":
        graph.add_node("finish", ask_node("finish", build_finish, parse_finish, finished))
        graph.add_edge("finish", END)
    return graph


def vote_node(params: SpoeParams, build, parse, update):
    """Self-consistency: ``votes`` sampled replies to the same step, asked concurrently; the
    majority choice decides (ties: the earliest vote's side) and the vote share is the
    confidence, so ``tau`` works without log-probabilities. One Step records the votes."""

    async def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        backend = backend_of(config)
        t0 = time.perf_counter()
        base = build(state, backend)
        sample = state.get("sample", 0)
        requests = [base.model_copy(update={
            "sample": sample * params.votes + j,
            "decoding": base.decoding.model_copy(update={"temperature": params.vote_temperature,
                                                         "seed": None}),
        }) for j in range(params.votes)]
        replies = await asyncio.gather(*(backend.complete(r) for r in requests))
        parsed = [None if r.error else parse(state, backend, r) for r in replies]
        choices = [p.value["choice"] for p in parsed if p is not None and p.error is None]
        reply = Reply(
            text="\n---\n".join(r.text for r in replies),
            usage=Usage(**{k: sum(getattr(r.usage, k) for r in replies)
                           for k in Usage.model_fields}),
            latency_s=max(r.latency_s for r in replies),
            cached=all(r.cached for r in replies),
            error=None if choices else next((r.error for r in replies if r.error), None),
        )
        info = {**base.tags, "calls": params.votes, "votes": choices}
        if not choices:
            err = reply.error or ErrorInfo(kind="parse", message="no vote named a region")
            step = _step(state, base, reply, None, err.message, None, info, t0)
            return {"steps": [step], "status": "unanswered", "error": err}
        counts = Counter(choices)
        top = max(counts.values())
        winner = next(c for c in choices if counts[c] == top)
        share = top / len(choices)
        result = next(p for p in parsed if p is not None and p.error is None
                      and p.value["choice"] == winner)
        result = Parsed(value={"choice": winner, "confidence": share}, region=result.region)
        step = _step(state, base, reply, result.value, None, result.region, info, t0)
        return {"steps": [step], **update(state, step, result)}

    return node


def _step(state, request: Request, reply: Reply, parsed, parse_error, region, info, t0) -> Step:
    return Step(index=len(state.get("steps") or []), name="ask", prompt=prompt_text(request),
                images=request_images(request), reply=reply, parsed=parsed,
                parse_error=parse_error, region=region, info=info,
                seconds=time.perf_counter() - t0)


def build_finish(state: StrategyState, backend: Backend) -> Request:
    """Hybrid finish: the region alone, zoomed in, and a direct box asked inside it."""
    inst = state["instance"]
    crop = [round(v) for v in _region(state)]
    cw, ch = crop[2] - crop[0], crop[3] - crop[1]
    text = render("spoe_finish", instruction=inst.text["instruction"],
                  box_format=box_format_text(backend.box_format, cw, ch))
    return Request(
        messages=[image_turn(inst, text, overlay={"crop": crop})],
        decoding=Decoding(temperature=0.0, seed=0), sample=state.get("sample", 0),
        oracle=box_truth(inst, crop=crop),  # the respondent sees the truth in the crop
        tags={"finish": "direct", "crop": crop},
        answer=box_answer(cw, ch),  # in the crop's pixels
    )


def parse_finish(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
    crop = [round(v) for v in _region(state)]
    cw, ch = crop[2] - crop[0], crop[3] - crop[1]
    parsed = read_box(reply.text, backend.box_format, cw, ch)
    if parsed.error:
        return parsed
    x1, y1, x2, y2 = parsed.value
    box = [x1 + crop[0], y1 + crop[1], x2 + crop[0], y2 + crop[1]]
    return Parsed(value=box, region=box)


def finished(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
    return {"prediction": parsed.value, "region": parsed.region, "status": "answered"}


class SpoeState(StrategyState, total=False):
    stopped: str
