"""The one async protocol every model client speaks, and the error it raises."""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .box import Convention
from .types import Instance, Reply, Request


class Capabilities(BaseModel):
    """What a backend can do natively; strategies fall back to parsing text otherwise."""

    model_config = ConfigDict(frozen=True)
    json_schema: bool = False
    choices: bool = False
    logprobs: bool = False
    multi_turn: bool = True
    reasoning: bool = False


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?"
                       r"(?:(\d+(?:\.\d+)?)ms)?$")
MAX_HISTORY = 200  # points of a limit's course kept (thinned when longer)


def thin(points: list[Any]) -> list[Any]:
    """``points`` cut to :data:`MAX_HISTORY`: the first kept, every other of the rest
    dropped, as often as it takes (a course stays whole in shape, coarser in time)."""
    while len(points) > MAX_HISTORY:
        points = points[:1] + points[2::2]
    return points


def duration_s(text: str | None) -> float | None:
    """OpenAI's reset times (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``) or plain seconds."""
    if text is None:
        return None
    text = str(text).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    m = _DURATION.fullmatch(text)
    if not m or not any(m.groups()):
        return None
    h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


@dataclass(frozen=True)
class RateHints:
    """What a response's headers say of the rate limit (None: not said): OpenAI's
    ``x-ratelimit-limit-*`` (the bucket's size), ``-remaining-*`` (left now) and ``-reset-*``
    (the time until the bucket is full again: it refills continuously)."""

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None
    limit_requests: int | None = None
    limit_tokens: int | None = None

    @classmethod
    def of(cls, headers: Mapping[str, str] | None) -> RateHints | None:
        if not headers:
            return None

        def num(name: str) -> int | None:
            value = headers.get(name)
            try:
                return int(float(value)) if value is not None else None
            except ValueError:
                return None

        hints = cls(num("x-ratelimit-remaining-requests"), num("x-ratelimit-remaining-tokens"),
                    duration_s(headers.get("x-ratelimit-reset-requests")),
                    duration_s(headers.get("x-ratelimit-reset-tokens")),
                    num("x-ratelimit-limit-requests"), num("x-ratelimit-limit-tokens"))
        return hints if hints != cls() else None


#: The rate-limit hints of the last response a backend read in this task (set by the
#: backend, read and cleared by ``Reliable``: a context variable, so concurrent calls never
#: see each other's)
RATE_HINTS: ContextVar[RateHints | None] = ContextVar("unseen_rate_hints", default=None)


class ProviderError(Exception):
    """A failed call, already classified; ``kind`` is one of ``types.ErrorKind``."""

    def __init__(self, kind: str, message: str, status: int | None = None,
                 retry_after: float | None = None, hints: RateHints | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.hints = hints


class BackendDefaults:
    """The optional members of :class:`Backend`, with their defaults: a backend that
    inherits this (``backends.base.BaseBackend`` does) declares only what it changes. The
    runner and the run pipeline read these members directly, never through ``getattr``."""

    #: calls in flight at once (``Reliable`` sets the run's ``--concurrency``); a person: 1
    concurrency: int = 8
    #: its trajectories run one at a time, each one's steps in a row (a person's page)
    serial: bool = False
    #: a person: never timed out or retried, at its own ``concurrency``; one process only
    interactive: bool = False
    #: calls go through a provider's batch API: no per-call timeout, priced at its discount
    batched: bool = False
    #: runs its model in this process (``hf``, ``vllm-local``): every shard would load a
    #: copy of its own, so a run with one takes one process unless ``--processes`` says more
    in_process: bool = False

    async def ready(self) -> None:
        """Awaited before each call, outside its timeout (load a model here); raises
        ProviderError if it cannot. The default does nothing and is skipped."""

    async def attach(self, run_dir: Path, todo: int) -> None:
        """Once before the first call, with the run directory and the number of
        trajectories this backend is to answer (a person's page, a batch ledger)."""

    async def identify(self) -> dict[str, Any]:
        """What shapes its replies beyond the request (a server's served weights): part of
        every reply-cache key and of run.json; the default says nothing."""
        return {}

    def server_counts(self) -> list[dict[str, Any]] | None:
        """Per-server call counts, for a backend spread over several servers (run.json)."""
        return None

    def limits(self) -> tuple[Any, list[Any]]:
        """The rate-limit-adapting limit its calls go through (``backends.limiter.
        AdaptiveLimit``: what ``Reliable`` wraps every backend in) and its servers' own (a
        backend spread over several), which the progress line and run.json report;
        ``(None, [])`` for none."""
        return None, []


#: the optional members, by name (what a backend that inherits no defaults must define)
OPTIONAL_MEMBERS = ("concurrency", "serial", "interactive", "batched", "in_process", "ready",
                    "attach", "identify", "server_counts", "limits")


def is_default(method: Any, name: str) -> bool:
    """Whether the bound ``method`` is :class:`BackendDefaults`' own ``name`` (a no-op that a
    caller may skip)."""
    return getattr(method, "__func__", None) is getattr(BackendDefaults, name)


@runtime_checkable
class Backend(Protocol):
    """A model client. ``complete`` returns a Reply or raises ProviderError; the members
    after ``answers`` are optional, their defaults in :class:`BackendDefaults`."""

    # read-only members (a class attribute, an attribute or a property serves each)
    @property
    def spec(self) -> str: ...  # the string it was connected from, e.g. "openai:gpt-5-mini"
    @property
    def provider(self) -> str: ...  # "openai", "gemini", "vllm", "sim", "baseline", ...
    @property
    def model(self) -> str: ...
    @property
    def box_format(self) -> Convention | None: ...  # the convention prompts ask for (None: none known)
    @property
    def simulated(self) -> bool: ...  # True for sim and baseline respondents: labelled in every output
    @property
    def cacheable(self) -> bool: ...  # False where caching would be pointless (instant, local rules)
    @property
    def capabilities(self) -> Capabilities: ...
    # the kinds of truth (``Request.oracle.task``, engine.oracle) a respondent without a model
    # can answer; None for a model, which answers any prompt
    @property
    def answers(self) -> frozenset[str] | None: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def serial(self) -> bool: ...
    @property
    def interactive(self) -> bool: ...
    @property
    def batched(self) -> bool: ...
    @property
    def in_process(self) -> bool: ...

    async def complete(self, request: Request) -> Reply: ...

    def describe(self) -> dict[str, Any]: ...

    def prepare(self, instances: list[Instance]) -> None: ...

    async def aclose(self) -> None: ...

    async def ready(self) -> None: ...

    async def attach(self, run_dir: Path, todo: int) -> None: ...

    async def identify(self) -> dict[str, Any]: ...

    def server_counts(self) -> list[dict[str, Any]] | None: ...

    def limits(self) -> tuple[Any, list[Any]]: ...
