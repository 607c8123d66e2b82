"""``director-code``: one batch of reasoning traces coded against the codebook, and the
simulated coder behind ``sim``.

Graph: START → code → END. The request is the codebook and the batch's items (neutral id,
trace, reply; or chosen block in the second pass), with the codes' JSON schema as structured
output. The reply is read with :func:`..task.codebook.parse_codes`: the prediction holds the codes
it could use and why each other item has none; a reply with no usable code at all is
unanswered, so a resumed pass asks again only where the provider failed.

Decoding: the paper's coder ran "at maximum reasoning effort" (Appendix E, "Coder and
checks"), so the default is :data:`MAX_EFFORT`, the highest value of the OpenAI SDK's
``ReasoningEffort`` (``openai/types/shared/reasoning_effort.py``: none, minimal, low, medium,
high, xhigh, max); the provider's temperature. A server that takes fewer levels (vLLM, Gemini)
needs ``--reasoning-effort high``.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ....engine.backend import Backend
from ....engine.graph import Parsed, StrategyState, ask_node
from ....engine.types import Decoding, MaxTokens, ReasoningEffort, Reply, Request, Step, Temperature
from ....strategies.kit import text_turn
from ....strategies.registry import strategy
from ..sim.traces import last_sentence, read_trace, trace_quotes
from ..task.codebook import MAX_QUOTE_WORDS, READINGS, CodesError, batch_prompt, parse_codes, schema
from ..task.oracle import CoderTruth
from ..task.parse import parse_reply

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

#: The highest reasoning effort the OpenAI API names (see the module docstring).
MAX_EFFORT: ReasoningEffort = "max"


class CoderParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: Temperature | None = None
    max_tokens: MaxTokens | None = None
    reasoning_effort: ReasoningEffort | None = MAX_EFFORT
    structured: bool = True  # send the codes' JSON schema (off for servers without it)


@strategy("director-code", params=CoderParams,
          summary="code a batch of Director reasoning traces against the codebook (Appendix E)",
          recursion_limit=lambda p: 5, benchmark="director-coding",
          asks=lambda p: {"director-code"})
def build_coder(params: CoderParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    effort = None if params.reasoning_effort in (None, "none") else params.reasoning_effort
    decoding = Decoding(temperature=params.temperature, max_tokens=params.max_tokens,
                        reasoning_effort=effort,
                        json_schema=schema() if params.structured else None)

    def request(state: StrategyState, backend: Backend) -> Request:
        meta = state["instance"].meta
        text = batch_prompt(meta["items"], second_pass=meta["second_pass"])
        return Request(messages=[text_turn(text)], decoding=decoding,
                       sample=state.get("sample", 0),
                       oracle=CoderTruth(items=meta["items"], second_pass=meta["second_pass"]),
                       tags={"items": len(meta["items"])})

    def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
        traces = {it["id"]: it["trace"] for it in state["instance"].meta["items"]}
        try:
            coded, refused = parse_codes(reply.text, traces)
        except CodesError as exc:
            return Parsed(error=str(exc))
        if not coded:
            return Parsed(error=f"no usable code for any of {len(traces)} items "
                                f"(first: {next(iter(refused.values()), '')})")
        return Parsed(value={"codes": {k: v.model_dump() for k, v in coded.items()},
                             "refused": refused})

    def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
        return {"prediction": parsed.value, "status": "answered"}

    graph = StateGraph(StrategyState)
    graph.add_node("code", ask_node("code", request, parse, update))
    graph.add_edge(START, "code")
    graph.add_edge("code", END)
    return graph


# --- the simulated coder ---------------------------------------------------------------------

def sim_code(items: list[dict[str, Any]], second_pass: bool, error: float,
             rng: random.Random) -> str:
    """The simulated coder's reply: each trace read back (:func:`..sim.traces.read_trace`, exact
    on the simulator's own traces; a real trace reads as no rule), the report rule of the
    main pass applied, and with probability ``error`` a wrong reading."""
    out = []
    for it in items:
        codes, quotes = read_trace(it["trace"]), trace_quotes(it["trace"])
        sees = codes.sees
        if sees == "not_stated" and not second_pass:
            report = parse_reply(it.get("reply"), {"visible": "ints", "block": "int"})
            if report is not None:
                visible = report["visible"]
                sees = "seen" if isinstance(visible, list) and report["block"] in visible \
                    else "unseen"
        reading = codes.reading
        if rng.random() < error:
            reading = rng.choice([r for r in READINGS if r != reading])  # type: ignore[misc]
        # every code comes with a quote: where no sentence gave a code, the words where the
        # trace makes its choice (its reading sentence, else its last sentence)
        fallback = quotes["reading_quote"] or last_sentence(it["trace"])
        short = {k: " ".join((v or fallback).split()[:MAX_QUOTE_WORDS]) for k, v in quotes.items()}
        out.append({"id": it["id"], "reading": reading, "sees": sees,
                    "works_out": codes.works_out, **short})
    return json.dumps({"codes": out})
