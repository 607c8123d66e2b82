"""A stand-in for a backend in a dry run: the real backend's identity, the simulator's
answers, the real provider's token counts.

A dry run (``unseen.dryrun``) runs the real plan (the benchmark's order, the real strategies'
graphs and request builders) against a :class:`StandIn` for each backend. The stand-in keeps
what the strategies read of the real backend (spec, model, box convention with its image
settings, capabilities, profile), so every request is built as the real run would build it;
it answers each request through a simulated respondent (``sim:oracle``, or the benchmark's
own), so trajectories take a realistic path, early stops included; and it counts the tokens
of every request it receives by the real provider's rules (``backends.tokens``). Nothing
reaches a provider: the real backend's ``complete``, ``identify`` and ``ready`` are never
called (a simulator or a fixed rule, which make no call, answer for themselves).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from ..engine.backend import Backend, BackendDefaults, ProviderError
from ..engine.box import Convention
from ..engine.rundir import kind_of
from ..engine.types import ErrorInfo, Instance, Reply, Request
from .base import make_backend
from .tokens import TokenRules, count_request, rules_for


@dataclass
class Tally:
    """What a stand-in counted: calls, input tokens (text and image apart), output tokens
    (visible and reasoning apart) and the calls by kind of answer."""

    calls: int = 0
    text: int = 0
    image: int = 0
    output: int = 0
    reasoning: int = 0
    kinds: Counter = field(default_factory=Counter)


class StandIn(BackendDefaults):
    """A backend in a dry run (see the module docstring)."""

    cacheable = False
    adapts_itself = True

    def __init__(self, real: Backend, delegate: Backend, *, counts: bool):
        """``delegate`` answers; with ``counts`` every request's tokens are counted by the
        real backend's rules (a model's; the simulator, rules and people cost nothing)."""
        self.real, self.delegate = real, delegate
        self.spec, self.provider, self.model = real.spec, real.provider, real.model
        self.box_format = real.box_format
        self.capabilities = real.capabilities
        self.answers = real.answers
        self.profile = getattr(real, "profile", None)
        self.image = getattr(real, "image", None)
        self.concurrency = real.concurrency
        self.simulated = True  # the progress line says it: the simulator answers
        self.rules: TokenRules | None = rules_for(real) if counts else None
        self.tally = Tally()
        # the text of each reply given → the output tokens assumed for it, so that a later
        # turn that carries it into the dialogue counts what a model would have written
        self._carried: dict[str, int] = {}

    def describe(self) -> dict[str, Any]:
        return self.real.describe()

    def prepare(self, instances: list[Instance]) -> None:
        self.delegate.prepare(instances)

    async def complete(self, request: Request) -> Reply:
        try:
            reply = await self.delegate.complete(request)
        except ProviderError as exc:  # a bare simulator raises what Reliable would record
            reply = Reply(error=ErrorInfo(kind=exc.kind, message=exc.message))
        self.tally.calls += 1
        if self.rules is None:
            return reply
        n = count_request(request, self.rules, self._carried)
        t = self.tally
        t.text, t.image = t.text + n.text, t.image + n.image
        t.output, t.reasoning = t.output + n.output, t.reasoning + n.reasoning
        t.kinds[n.kind] += 1
        if reply.text:
            self._carried[reply.text] = n.output
        return reply.model_copy(update={"usage": n.usage()})

    async def aclose(self) -> None:
        """Nothing to release: the real backend is closed by whoever connected it."""
        if self.delegate is not self.real:
            await self.delegate.aclose()


def stand_in(real: Backend, respondent: str) -> StandIn:
    """The stand-in of ``real``: a model or a person is answered by the simulated
    ``respondent`` (a ``sim`` spec) in the real backend's box convention, and its tokens
    are counted; a simulator or a fixed rule answers for itself (no call, no cost)."""
    kind = kind_of(real.spec, real.simulated)
    if kind in ("sim", "rule"):
        return StandIn(real, real, counts=False)
    delegate = make_backend(respondent)
    conv = real.box_format
    knobs = getattr(delegate, "knobs", None)
    if isinstance(conv, Convention) and knobs is not None:
        # the simulator writes boxes in the real model's convention, its image settings
        # included (a Qwen2.5-VL resize, a max_side): a box the real run would read
        cast(Any, delegate).knobs = knobs.model_copy(update={"box_format": conv})
    return StandIn(real, delegate, counts=kind == "model")
