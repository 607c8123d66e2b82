"""What a batch driver says of its batches: the states they end in, a batch's
:class:`Status`, and the :class:`Driver` protocol a provider's batch API implements
(``batch_openai.py``, ``batch_gemini.py``; ``batching.py`` uses them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..engine.backend import ProviderError
from ..engine.types import Reply, Request

#: batch states after which nothing more comes (the drivers map theirs onto these)
DONE, FAILED, EXPIRED, CANCELLED = "done", "failed", "expired", "cancelled"
FINAL = frozenset({DONE, FAILED, EXPIRED, CANCELLED})


@dataclass
class Status:
    """Where a batch is: ``state`` (running, or one of :data:`FINAL`) and the provider's
    own word for it, with the reason a failed batch failed."""

    state: str
    provider_state: str = ""
    error: str = ""
    handle: Any = None  # what ``results`` needs (the provider's batch object)


class Driver(Protocol):
    """A provider's batch API."""

    name: str  # "openai", "gemini"

    def body(self, request: Request) -> dict[str, Any]: ...

    async def submit(self, lines: list[tuple[str, dict[str, Any]]]) -> str: ...

    async def poll(self, batch_id: str) -> Status: ...

    async def results(self, status: Status, custom_ids: list[str]
                      ) -> dict[str, Reply | ProviderError]: ...


