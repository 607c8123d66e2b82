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


#: how long before an intent was written a listed batch may have been made and still be its
#: (the provider's clock and this machine's may differ)
SKEW_S = 3600.0


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
    max_lines: int  # the most requests one batch may hold
    max_bytes: int  # the most bytes of requests one batch may hold

    def body(self, request: Request) -> Any: ...

    def encode(self, custom_id: str, body: Any) -> tuple[Any, int]:
        """The line as :meth:`submit` sends it, made once, and the bytes it adds to its
        batch (as sent)."""
        ...

    async def submit(self, lines: list[tuple[str, Any]], intent: str) -> str:
        """Send ``lines`` (custom id, what :meth:`encode` made) as one batch marked with
        ``intent`` (for :meth:`find`): its id."""
        ...

    async def find(self, intent: str, since: float) -> str | None:
        """The id of the batch marked ``intent``, submitted at ``since`` (a Unix time) or
        later, or None when the provider has none."""
        ...

    async def poll(self, batch_id: str) -> Status: ...

    async def results(self, status: Status, custom_ids: list[str]
                      ) -> dict[str, Reply | ProviderError]: ...
