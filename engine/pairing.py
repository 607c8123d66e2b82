"""Pairings refused before any call: a strategy made for another benchmark's instances, a
box strategy for a model whose box convention no profile gives, a strategy that needs what
a backend does not return (log-probabilities for a confidence stop)."""

from __future__ import annotations

from collections.abc import Collection

from .backend import Backend
from .box import no_convention
from .errors import UnseenError
from .graph import StrategySpec


class PairingError(UnseenError, ValueError):
    """A strategy and a benchmark, or a strategy and a backend, that cannot work together."""


def check_pairing(strategies: list[StrategySpec], backends: list[Backend], benchmark: str,
                  accepts: Collection[str] | None = None) -> None:
    """Refuse, before any call, a strategy made for instances the benchmark does not have
    (``StrategySpec.benchmark`` not in the benchmark's ``accepts``; by default its own name)
    and a respondent without a model (a rule, the simulator) that cannot give the answers a
    strategy asks for."""
    accepts = {benchmark} if accepts is None else set(accepts)
    for s in strategies:
        if s.benchmark not in accepts:
            raise PairingError(f"strategy {s.label!r} reads {s.benchmark} instances; this run "
                               f"is on {benchmark} data")
    boxes = [s for s in strategies if "box" in s.asks]
    for b in backends:
        if boxes and b.box_format is None:  # conventions are never guessed
            desc = b.describe()
            raise PairingError(no_convention(b.model, desc.get("profile"),
                                             desc.get("profile_note") or ""))
        for s in strategies:
            missing = sorted(s.needs - capabilities(b))
            if missing:
                raise PairingError(
                    f"strategy {s.label!r} needs {', '.join(missing)}, which backend "
                    f"{b.spec!r} does not return; {NEEDS_HINT.get(missing[0], '')}".rstrip("; "))
        can = b.answers
        if can is None:
            continue
        for s in strategies:
            missing = sorted(s.asks - can)
            if missing:
                raise PairingError(
                    f"backend {b.spec!r} cannot answer strategy {s.label!r}: it answers "
                    f"{', '.join(sorted(can)) or 'no'} requests, and {s.label} asks for "
                    f"{', '.join(missing)}")


#: what a strategy can do instead, by the capability it needs and a backend lacks
NEEDS_HINT = {"logprobs": "use votes=N (the vote share is the confidence) or a backend that "
                          "returns log-probabilities (openai, vllm, vllm-local, gemini)"}


def capabilities(backend: Backend) -> frozenset[str]:
    """The names of what a backend returns natively (``Capabilities``' true fields)."""
    caps = backend.capabilities
    if caps is None:  # a stand-in without any (tests)
        return frozenset()
    return frozenset(k for k, v in caps.model_dump().items() if v is True)
