"""Graph helpers: the shared state, the strategy record the runner needs, and a node factory.

A strategy builds a LangGraph ``StateGraph``; one node asks the model once and records one
Step (render overlay → build Request → Backend.complete → parse → update state), so a loop
writes one Step per iteration and any metric can be computed per iteration from the log.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypedDict, cast

from pydantic import BaseModel

from .backend import Backend
from .images import request_images
from .types import BOX_INSTANCES, ErrorInfo, ImagePart, Instance, Reply, Request, Step, TextPart

if TYPE_CHECKING:  # LangGraph reads the annotation as the string 'RunnableConfig' too
    from langchain_core.runnables import RunnableConfig


class StrategyState(TypedDict, total=False):
    """State every strategy graph shares; strategies may add keys of their own."""

    instance: Instance
    sample: int
    steps: Annotated[list[Step], operator.add]
    prediction: Any
    status: str  # "answered" | "unanswered"
    error: ErrorInfo | None
    region: list[float] | None  # current pixel region, for region strategies
    t: int  # iteration counter, for loops


@dataclass(frozen=True)
class Iterates:
    """How a strategy's steps read as iterations, for per-iteration curves (Figure 2).

    A strategy that narrows a region step by step declares this when it registers:
    ``length(params)`` is the number of iterations of a trajectory that runs its course (the
    curve's last t); the Steps named ``node`` are the iterations, each with the region after
    it (other Steps, such as a finishing box, are not); ``ceiling(truth, width, height,
    params)`` gives the regions after iterations 1..length of a perfect chooser, the best the
    family can reach, or is None when the family has no such ceiling; ``ceiling_name`` says
    which ceiling it is (``halving``, ``grid``, ``best-first``).
    """

    length: Callable[[Any], int]
    node: str = "ask"
    ceiling: Callable[[list[float], int, int, Any], list[list[float]]] | None = None
    ceiling_name: str = ""


@dataclass(frozen=True)
class StrategySpec:
    """A strategy ready to run: its name, parameters and compiled graph, and what it pairs
    with: the benchmark whose instances it reads and the kinds of answer its requests ask
    for (the ``task`` of ``Request.oracle``: ``box``, ``choice``, ``cells``, ...), so a run
    that cannot work is refused before any call. ``benchmark`` is the kind of instance it
    reads (a benchmark's name, or :data:`.types.BOX_INSTANCES`)."""

    name: str
    params: BaseModel
    graph: Any  # a compiled LangGraph graph
    recursion_limit: int = 25
    benchmark: str = BOX_INSTANCES
    asks: frozenset[str] = frozenset({"box"})
    iterates: Iterates | None = None
    # what the strategy needs of a backend beyond an answer (``Capabilities`` field names,
    # e.g. ``logprobs`` for a confidence stop): refused before any call where it is missing
    needs: frozenset[str] = frozenset()

    @cached_property  # read for every trajectory; the parameters are set when it is built
    def label(self) -> str:
        """``name`` or ``name:k=v,...`` for parameters that differ from the defaults."""
        default = type(self.params)()
        changed = {
            k: v for k, v in self.params.model_dump().items() if getattr(default, k) != v
        }
        if not changed:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in sorted(changed.items()))


def backend_of(config: RunnableConfig) -> Backend:
    """The backend the runner put into this invocation's config."""
    return config["configurable"]["backend"]


#: Why a reply the model gave could not be used (``Parsed.reason``; the trajectory's error
#: kind): no readable answer (``parse``), an answer in another convention than the one asked
#: (``format_mismatch``), several answers and none stated (``ambiguous``), or a reply cut at a
#: length limit before its answer (``length``, set by the node from the reply's finish reason).
ANSWER_REASONS = ("parse", "format_mismatch", "ambiguous", "length")


@dataclass
class Parsed:
    """What a parse function makes of a reply: a value, or an error and its reason (one of
    :data:`ANSWER_REASONS`; ``parse`` when not given)."""

    value: Any = None
    error: str | None = None  # why the reply could not be used (the model's fault)
    region: list[float] | None = None
    reason: str | None = None
    # with an error: the answer the trajectory keeps from before (``value``) and why; the
    # step records the error, the trajectory goes on answered (``Trajectory.notes``)
    fallback: str | None = None


def unusable(parsed: Parsed, reply: Reply) -> ErrorInfo:
    """The error of a reply that could not be used: its parse reason, or ``length`` when the
    reply stopped at a length limit with no readable answer (a cut reply is never a parse
    failure: the answer may have come after the cut)."""
    kind = parsed.reason or "parse"
    if reply.cut and kind in ("parse", "ambiguous"):
        kind = "length"
        return ErrorInfo(kind=kind, message=f"the reply stopped at a length limit "
                         f"(finish_reason {reply.finish_reason}): {parsed.error}")
    return ErrorInfo(kind=kind, message=parsed.error or "the reply could not be used")


BuildRequest = Callable[[StrategyState, Backend], Request]
ParseReply = Callable[[StrategyState, Backend, Reply], Parsed]
Update = Callable[[StrategyState, Step, Parsed], dict[str, Any]]


def prompt_text(request: Request) -> str:
    """The text of the last user turn: earlier turns are in earlier Steps (and ``messages``
    counts what was sent), so a multi-turn step does not repeat the whole dialogue."""
    users = [m for m in request.messages if m.role == "user"]
    return users[-1].text if users else ""


class Node(Protocol):
    """A graph node as LangGraph calls it: the state and the run's config."""

    def __call__(self, state: StrategyState, config: RunnableConfig) -> Awaitable[dict[str, Any]]:
        ...


def ask_node(name: str, build: BuildRequest, parse: ParseReply, update: Update) -> Node:
    """A node that asks once: build the request, call, parse, and record one Step.

    A failed call ends the trajectory as unanswered with the backend's typed error; a reply
    that cannot be parsed ends it as unanswered with a ``parse`` error. ``update`` turns a
    successful parse into state changes (prediction, region, counters).
    """

    # `state` is deliberately not annotated with StrategyState: LangGraph takes a node's
    # first-parameter annotation as its input schema and would hide the keys a strategy adds
    async def node(raw: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        state = cast(StrategyState, raw)
        backend = backend_of(config)
        t0 = time.perf_counter()
        request = build(state, backend)
        reply = await backend.complete(request)
        parsed = Parsed() if reply.error else parse(state, backend, reply)
        step = Step(
            index=len(state.get("steps") or []),
            name=name,
            prompt=prompt_text(request),
            images=request_images(request),
            messages=len(request.messages),
            reply=reply,
            parsed=parsed.value,
            parse_error=parsed.error,
            region=parsed.region,
            info={**request.tags, **({"fallback": parsed.fallback,
                                      "unusable": unusable(parsed, reply).kind}
                                     if parsed.fallback and parsed.error else {})},
            seconds=time.perf_counter() - t0,
        )
        if reply.error is not None:
            return {"steps": [step], "status": "unanswered", "error": reply.error}
        if parsed.error is not None and parsed.fallback is None:
            return {"steps": [step], "status": "unanswered", "error": unusable(parsed, reply)}
        return {"steps": [step], **update(state, step, parsed)}

    node.__name__ = name
    return cast(Node, node)


def user_message(text: str, *images: ImagePart) -> list:
    """Parts of a user turn: the images first, then the text (the common VLM layout)."""
    return [*images, TextPart(text=text)]
