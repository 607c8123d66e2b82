"""The one async protocol every model client speaks, and the error it raises."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .types import Instance, Reply, Request


class Capabilities(BaseModel):
    """What a backend can do natively; strategies fall back to parsing text otherwise."""

    model_config = ConfigDict(frozen=True)
    json_schema: bool = False
    choices: bool = False
    logprobs: bool = False
    multi_turn: bool = True
    reasoning: bool = False


class ProviderError(Exception):
    """A failed call, already classified; ``kind`` is one of ``types.ErrorKind``."""

    def __init__(self, kind: str, message: str, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after


@runtime_checkable
class Backend(Protocol):
    """A model client. ``complete`` returns a Reply or raises ProviderError."""

    spec: str  # the string it was connected from, e.g. "openai:gpt-5-mini"
    provider: str  # "openai", "gemini", "vllm", "sim", "baseline", ...
    model: str
    box_format: str  # the box convention prompts ask this model for
    simulated: bool  # True for sim and baseline respondents: labelled in every output
    cacheable: bool  # False where caching would be pointless (instant, local rules)
    capabilities: Capabilities
    # the kinds of truth (``Request.oracle.task``, engine.oracle) a respondent without a model
    # can answer; None for a model, which answers any prompt
    answers: frozenset[str] | None

    async def complete(self, request: Request) -> Reply: ...

    def describe(self) -> dict[str, Any]: ...

    def prepare(self, instances: list[Instance]) -> None: ...

    async def aclose(self) -> None: ...
