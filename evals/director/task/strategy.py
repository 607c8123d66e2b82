"""``director``: one Director Task condition, asked as one turn or a two-turn dialogue.

``condition`` names the prompt (``<request>[/<question>][+<insert>]``, see
``evals.director.prompts``); ``batch`` names the study batch it belongs to, so the same
condition asked in two batches stays two sets of trajectories. Graph: START → turn1 [→ turn2]
→ END. Each turn sends the scene image with the first message; the second turn carries the
first turn's message and reply, then asks Question B. The reply of each turn is read with
``parse_reply`` (the paper's "Collection" rule); the prediction is the fields of all turns.

Decoding follows the paper's closed models: the provider's default temperature, no output
cap, reasoning effort medium (``reasoning_effort=none`` leaves it to the provider).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ....engine.backend import Backend
from ....engine.graph import Parsed, StrategyState, ask_node
from ....engine.types import (
    AnswerSpec,
    Decoding,
    MaxTokens,
    ReasoningEffort,
    Reply,
    Request,
    Step,
    Temperature,
)
from ....strategies.kit import image_turn, text_turn
from ....strategies.registry import StrategyError, strategy
from .oracle import DirectorTruth, SceneKey
from .parse import parse_reply
from .prompts import Prompt, PromptError, build, parse_condition

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

FIELD_TYPES: dict[str, Literal["int", "ints"]] = {"visible": "ints", "known": "ints",
                                                  "block": "int", "count": "int"}


class DirectorParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    condition: str = ""
    batch: str = ""
    temperature: Temperature | None = None
    max_tokens: MaxTokens | None = None
    reasoning_effort: ReasoningEffort | None = "medium"

    @field_validator("condition")
    @classmethod
    def _known(cls, v: str) -> str:
        if v:
            try:
                return parse_condition(v).name
            except PromptError as exc:
                raise ValueError(str(exc)) from None
        return v


def prompt_for(condition: str, state: StrategyState) -> Prompt:
    truth = state["instance"].truth
    return build(condition, {"id": state["instance"].id, "visible_digits": truth["visible_digits"]})


def director_oracle(state: StrategyState, condition: str, turn: int,
                    fields: list[str]) -> DirectorTruth:
    """The scene's key, for simulated respondents only (``Request.oracle``)."""
    inst = state["instance"]
    return DirectorTruth(instance=inst.id, condition=condition, turn=turn, fields=fields,
                         key=SceneKey.of(inst.truth))


@strategy("director", params=DirectorParams,
          summary="a Director Task condition: condition=<request>[/<question>][+<insert>]",
          recursion_limit=lambda p: 6, benchmark="director", asks=lambda p: {"director"},
          prompts=("parts.txt",))
def build_director(params: DirectorParams) -> StateGraph:
    # imported here, not at the top: listing strategies needs no LangGraph
    from langgraph.graph import END, START, StateGraph

    if not params.condition:
        raise StrategyError("director needs condition=<request>[/<question>][+<insert>], "
                         "e.g. director:condition=move")
    n_turns = len(build(params.condition).turns)
    effort = None if params.reasoning_effort in (None, "none") else params.reasoning_effort
    decoding = Decoding(temperature=params.temperature, max_tokens=params.max_tokens,
                        reasoning_effort=effort)

    def turn_node(turn: int):
        def request(state: StrategyState, backend: Backend) -> Request:
            prompt = prompt_for(params.condition, state)
            msgs = [image_turn(state["instance"], prompt.turns[0])]
            for k, step in enumerate((state.get("steps") or [])[:turn]):
                msgs += [text_turn(step.reply.text, role="assistant"),
                         text_turn(prompt.turns[k + 1])]
            fields = prompt.fields_per_turn[turn]
            # each batch samples anew (§3 "Batches"): no reply shared with another batch
            return Request(messages=msgs, decoding=decoding, sample=state.get("sample", 0),
                           draw=f"batch={params.batch}" if params.batch else "",
                           oracle=director_oracle(state, params.condition, turn, fields),
                           tags={"condition": params.condition, "batch": params.batch,
                                 "turn": turn + 1, "fields": fields},
                           answer=AnswerSpec(kind="fields",
                                             fields={f: FIELD_TYPES[f] for f in fields}))

        def parse(state: StrategyState, backend: Backend, reply: Reply) -> Parsed:
            fields = prompt_for(params.condition, state).fields_per_turn[turn]
            got = parse_reply(reply.text, {f: FIELD_TYPES[f] for f in fields})
            if got is None:
                return Parsed(error=f"no JSON object with {', '.join(fields)} of the right type")
            return Parsed(value=got)

        def update(state: StrategyState, step: Step, parsed: Parsed) -> dict[str, Any]:
            merged = {**(state.get("prediction") or {}), **parsed.value}
            done = turn == n_turns - 1
            return {"prediction": merged, **({"status": "answered"} if done else {})}

        return ask_node(f"turn{turn + 1}", request, parse, update)

    graph = StateGraph(StrategyState)
    names = [f"turn{t + 1}" for t in range(n_turns)]
    for t, name in enumerate(names):
        graph.add_node(name, turn_node(t))
    graph.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        # a turn whose reply cannot be read ends the dialogue unanswered
        graph.add_conditional_edges(a, lambda s, b=b: END if s.get("status") == "unanswered" else b)
    graph.add_edge(names[-1], END)
    return graph
