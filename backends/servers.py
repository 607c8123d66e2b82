"""Several servers of one model behind one backend (``vllm:MODEL@URL1,URL2``, or ``--base-url``
given more than once for an OpenAI-compatible backend).

Each call goes to the server with the fewest calls in flight among those that are up (least
outstanding requests; ties to the one with fewer calls so far). A call that fails with a
connection error, a 5xx or a timeout marks its server down and moves at once to a server it
has not tried; a down server gets calls again after a back-off that doubles with each failed
return (2 s up to 60 s), and its first success marks it up. When every server is down a call
still tries the one due back first, so one server behaves as a plain backend. Scheduling
inside a server stays the server's own: this only spreads calls.

Replies carry nothing of the server that gave them, so the reply cache key and the journal
are the same whichever server answered; the per-server counts go to the run summary.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.backend import RATE_HINTS, Backend, ProviderError
from ..engine.types import Reply, Request
from .base import BackendConfigError
from .limiter import AdaptiveLimit

DOWN_KINDS = frozenset({"connection", "server", "timeout"})


def url_list(value: str | Sequence[str] | None) -> list[str]:
    """The ``base_url`` option as a list: one string, several, or none."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [v for v in value if v]


def single_url(value: str | Sequence[str] | None, provider: str) -> str | None:
    """One base URL for a provider that takes one; a clear error when given several."""
    urls = url_list(value)
    if len(urls) > 1:
        raise BackendConfigError(
            f"{provider} takes one --base-url; several servers are for the OpenAI-compatible "
            "backends (openai, openai-responses, vllm)")
    return check_url(urls[0], provider) if urls else None


def check_url(url: str, spec: str) -> str:
    """``url`` if it is an http(s) URL with a host and a port that can exist; else one line
    naming it, before any call (a bad one would fail every call, retried for a minute)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port  # a ValueError when not a number or past 65535
    except ValueError as exc:
        raise BackendConfigError(f"{spec}: the server URL {url!r} is no URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(
            c.isspace() for c in url):
        raise BackendConfigError(f"{spec}: the server URL {url!r} is no http:// or https:// "
                                 "URL with a host (e.g. http://127.0.0.1:8000/v1)")
    if port == 0:
        raise BackendConfigError(f"{spec}: the server URL {url!r} names port 0")
    return url


@dataclass
class Server:
    url: str
    backend: Backend
    outstanding: int = 0
    calls: int = 0
    failures: int = 0
    down_periods: int = 0
    streak: int = 0  # failed returns in a row
    down_until: float | None = None  # None: up
    limit: AdaptiveLimit | None = None  # its own rate-limit-adapting limit (set_concurrency)

    def counts(self) -> dict[str, Any]:
        out = {"url": self.url, "calls": self.calls, "failures": self.failures,
               "down_periods": self.down_periods, "up": self.down_until is None}
        if self.limit is not None:
            out["concurrency"] = self.limit.record()
        return out

    def full(self) -> bool:
        return self.limit is not None and self.outstanding >= self.limit.current


class Spread:
    """A Backend over several bare backends that differ only in their server; each server
    has its own adaptive limit (``limiter.AdaptiveLimit``), so a server that rate-limits
    slows down alone."""

    adapts_itself = True  # Reliable keeps a fixed ceiling over the servers' own limits

    def __init__(self, backends: Sequence[Backend], urls: Sequence[str], *, spec: str,
                 backoff_base_s: float = 2.0, backoff_max_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        if not backends or len(backends) != len(urls):
            raise ValueError("Spread needs one backend per URL")
        first = backends[0]
        self.servers = [Server(u, b) for u, b in zip(urls, backends, strict=True)]
        self.spec = spec
        self.provider = first.provider
        self.model = first.model
        self.box_format = first.box_format
        self.simulated = first.simulated
        self.cacheable = first.cacheable
        self.capabilities = first.capabilities
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._clock = clock

    def __getattr__(self, name: str) -> Any:  # profile, payload, ...: the first server's
        servers = self.__dict__.get("servers")
        if not servers:
            raise AttributeError(name)
        return getattr(servers[0].backend, name)

    def limits(self) -> tuple[Any, list[Any]]:
        """No limit of its own; each server's, where the calls adapt per server."""
        return None, [s.limit for s in self.servers if s.limit is not None]

    def describe(self) -> dict[str, Any]:
        desc = {**self.servers[0].backend.describe(), "spec": self.spec}
        desc.pop("base_url", None)
        dropped = sorted({p for s in self.servers
                          for p in getattr(s.backend, "dropped", ())})
        if dropped:  # a parameter any server's model rejected
            desc["dropped_params"] = dropped
        return {**desc, "servers": [s.url for s in self.servers]}

    def server_counts(self) -> list[dict[str, Any]]:
        return [s.counts() for s in self.servers]

    async def identify(self) -> dict[str, Any]:
        """The servers' one serving identity. A server that does not answer is left out
        (it is marked down, as a failed call would); servers that serve other weights under
        one name are refused: their replies would mix two models."""
        found: list[tuple[str, dict[str, Any]]] = []
        last: ProviderError | None = None
        for server in self.servers:
            try:
                found.append((server.url, await server.backend.identify()))
            except ProviderError as exc:
                if exc.kind not in DOWN_KINDS:
                    raise
                self._down(server)
                last = exc
        if not found:
            assert last is not None
            raise last
        first_url, first = found[0]
        for url, ident in found[1:]:
            if ident != first:
                raise BackendConfigError(
                    f"the servers of {self.spec} serve different models under one name: "
                    f"{first_url} {first.get('served', first)}, {url} "
                    f"{ident.get('served', ident)}; give each its own backend")
        return first

    def prepare(self, instances: list) -> None:
        for s in self.servers:
            s.backend.prepare(instances)

    def set_concurrency(self, ceiling: int) -> None:
        """Give each server an adaptive limit under ``ceiling`` (Reliable calls it)."""
        for s in self.servers:
            s.limit = AdaptiveLimit(ceiling)

    def _pick(self, tried: set[int]) -> int | None:
        now = self._clock()
        fresh = [i for i in range(len(self.servers)) if i not in tried]
        up = [i for i in fresh if (u := self.servers[i].down_until) is None or u <= now]
        if up:  # one with room under its limit first, then the least loaded
            return min(up, key=lambda i: (self.servers[i].full(), self.servers[i].outstanding,
                                          self.servers[i].calls))
        if tried or not fresh:
            return None  # the others are down: the caller's retry backs off
        return min(fresh, key=lambda i: self.servers[i].down_until or 0.0)

    def _down(self, server: Server) -> None:
        now = self._clock()
        server.failures += 1
        if server.down_until is not None and server.down_until > now:
            return  # a call sent before it went down: the back-off already runs
        if server.down_until is None:
            server.down_periods += 1
        server.streak += 1
        wait = min(self.backoff_max_s, self.backoff_base_s * 2 ** (server.streak - 1))
        server.down_until = now + wait

    @staticmethod
    def _up(server: Server) -> None:
        server.streak = 0
        server.down_until = None

    async def complete(self, request: Request) -> Reply:
        tried: set[int] = set()
        last: ProviderError | None = None
        while (i := self._pick(tried)) is not None:
            tried.add(i)
            server = self.servers[i]
            epoch: Any = await server.limit.acquire() if server.limit is not None else 0
            server.outstanding += 1
            server.calls += 1
            limited, pause, hints, used = False, None, None, None
            try:
                RATE_HINTS.set(None)
                reply = await server.backend.complete(request)
                hints = RATE_HINTS.get()
                used = reply.usage.input_tokens + reply.usage.output_tokens
            except ProviderError as exc:
                limited, pause, hints = exc.kind == "rate_limit", exc.retry_after, exc.hints
                if exc.kind not in DOWN_KINDS:
                    raise  # the server answered: the request's own failure
                self._down(server)
                last = exc
                continue
            except asyncio.CancelledError:
                self._down(server)  # the caller's timeout ran out on this server
                raise
            finally:
                server.outstanding -= 1
                if server.limit is not None:
                    await server.limit.release(epoch, rate_limited=limited,
                                               retry_after=pause if limited else None,
                                               hints=hints, tokens=used)
            self._up(server)
            RATE_HINTS.set(hints)
            return reply
        assert last is not None
        raise last

    async def aclose(self) -> None:
        for s in self.servers:
            await s.backend.aclose()


def spread(make: Callable[[str | None], Backend], urls: Sequence[str | None],
           spec: str) -> Backend:
    """One backend per URL, spread when there are several."""
    for url in urls:
        if url is not None:  # None: the SDK's own endpoint
            check_url(url, spec)
    if len(urls) == 1:
        return make(urls[0])
    # several: each a URL (None, the SDK's own endpoint, stands alone)
    return Spread([make(u) for u in urls], [str(u) for u in urls], spec=spec)


def server_summary(desc: dict[str, Any]) -> str | None:
    """One line of per-server counts from a backend description (``server_counts``)."""
    counts = desc.get("server_counts")
    if not counts:
        return None
    parts = [f"{c['url']} {c['calls']} calls, {c['failures']} failed, "
             f"down {c['down_periods']}×" for c in counts]
    return f"servers of {desc.get('model', '?')}: " + " · ".join(parts)
