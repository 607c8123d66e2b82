"""Reliability around any backend: concurrency limit, timeout, retries, reply cache.

- Calls in flight per backend are bounded by a limit that adapts to the provider's rate
  limits (``limiter.AdaptiveLimit``: additive increase, multiplicative decrease on 429s,
  Retry-After and the x-ratelimit headers obeyed); ``--concurrency`` is its ceiling.
- Each attempt has a timeout (a backend's ``ready``, such as loading a model, runs before
  it); timeouts, connection errors, 5xx, 429 rate limits, malformed and empty replies are
  retried with exponential backoff and jitter; ``Retry-After`` is honoured when the
  provider sends it. A quota-exhausted 429 and other 4xx are not retried.
- After the last try the Reply carries a typed error; it never raises for a provider failure.
- Successful non-empty replies are cached; errors and empty replies never are. The key holds
  the backend's serving identity (``identify``/``identity``: its image settings, a vLLM
  server's served root, a local engine's arguments) and ``cache_tag``, so a new checkpoint
  behind the same model name never gets an old one's replies.
- A backend that is a person (``interactive``: ``human``) is never timed out or retried and
  runs at its own ``concurrency`` (one request on screen at a time), whatever the run's
  ``--timeout`` and ``--concurrency``: people are slow, and asking twice is never right.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from ..engine.backend import RATE_HINTS, Backend, ProviderError, is_default
from ..engine.budget import CostCapped
from ..engine.cache import ReplyCache, request_key
from ..engine.types import RETRYABLE, ErrorInfo, Reply, Request
from .limiter import AdaptiveLimit


class Reliable:
    """Wraps a backend; exposes the same protocol, plus ``concurrency`` and ``stats``."""

    def __init__(
        self,
        inner: Backend,
        concurrency: int = 8,
        timeout_s: float | None = 120.0,
        max_attempts: int = 6,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_retry_after_s: float = 300.0,
        cache: ReplyCache | None = None,
        seed: int | None = None,
        cache_tag: str | None = None,
        adaptive: bool = True,
    ):
        if inner.interactive:
            concurrency, timeout_s, max_attempts = inner.concurrency, None, 1
        if inner.batched:  # a batch takes up to its 24 h window
            timeout_s = None
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.inner = inner
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        self.cache = cache if inner.cacheable else None
        self.cache_tag = cache_tag
        self._identity: dict[str, Any] | None = None
        self._identify_lock = asyncio.Lock()
        # a person, and a backend that limits each of its servers itself (``Spread``), run
        # at a fixed limit here
        fixed = inner.interactive or getattr(inner, "adapts_itself", False)
        self.limiter = AdaptiveLimit(concurrency, adaptive=adaptive and not fixed)
        if adaptive and (per_server := getattr(inner, "set_concurrency", None)) is not None:
            per_server(concurrency)
        self._rng = random.Random(seed)
        self.sleep = asyncio.sleep  # the wait between attempts (a test puts a fake clock here)
        self.stats = {"calls": 0, "retries": 0, "errors": 0, "cache_hits": 0}
        # the default no-op is skipped
        self._ready = None if is_default(inner.ready, "ready") else inner.ready

    # the Backend protocol, delegated
    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def limits(self) -> tuple[Any, list[Any]]:
        """This limit, and the inner backend's servers' own (a backend spread over several)."""
        return self.limiter, self.inner.limits()[1]

    def describe(self) -> dict[str, Any]:
        out = {**self.inner.describe(), "concurrency": self.concurrency,
               "timeout_s": self.timeout_s, "max_attempts": self.max_attempts}
        if self.cache_tag:
            out["cache_tag"] = self.cache_tag
        if self._identity and (served := self._identity.get("served")):
            out["served"] = served
        return out

    async def identify(self) -> dict[str, Any]:
        """The serving identity (asked of the backend once: a vLLM server's GET /v1/models),
        with the cache tag; part of every cache key and of run.json."""
        if self._identity is None:
            async with self._identify_lock:
                if self._identity is None:
                    ident: dict[str, Any] = {}
                    ident = dict(await self.inner.identify() or {})
                    if self.cache_tag:
                        ident["tag"] = self.cache_tag
                    self._identity = ident
        return self._identity

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        if retry_after is not None:
            return retry_after
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)  # jitter, never zero

    async def complete(self, request: Request) -> Reply:
        key = None
        if self.cache is not None:
            try:
                identity = await self.identify()
            except ProviderError as exc:
                return Reply(error=ErrorInfo(kind=exc.kind, message=exc.message,
                                             status=exc.status))
            key = request_key(self.inner.provider, self.inner.model, request, identity)
            hit = self.cache.get(key)
            if hit is not None:
                self.stats["cache_hits"] += 1
                return hit
        if self.limiter.adaptive:
            reply = await self._attempts(request)
        else:  # fixed: a slot for the whole call, its back-offs included, as a semaphore
            ticket = await self.limiter.acquire()
            try:
                reply = await self._attempts(request)
            finally:
                await self.limiter.release(ticket)
        if key is not None and self.cache is not None:
            self.cache.put(key, self.inner.provider, self.inner.model, reply)
        return reply

    async def _attempts(self, request: Request) -> Reply:
        attempt = 0
        while True:
            attempt += 1
            self.stats["calls"] += 1
            t0 = time.perf_counter()
            retry_after: float | None = None
            hints = None
            used: int | None = None  # the reply's tokens, for the limiter's token mirror
            # adaptive: a slot per attempt, free while backing off
            epoch = await self.limiter.acquire() if self.limiter.adaptive else None
            limited = False
            try:
                if self._ready is not None:  # model start-up: not a slow call
                    await self._ready()
                    t0 = time.perf_counter()
                RATE_HINTS.set(None)
                # asyncio.timeout, not wait_for: no extra task per call (engine overhead)
                async with asyncio.timeout(self.timeout_s):
                    reply = await self.inner.complete(request)
                hints = RATE_HINTS.get()
                if reply.error is None and not reply.text.strip() and not reply.cut:
                    # a reply cut at a length limit is an answer (reason "length"), not a
                    # failure to retry: asked again, it stops at the same limit
                    raise ProviderError("empty", "the provider returned no text")
                if reply.latency_s == 0.0:
                    reply = reply.model_copy(update={"latency_s": time.perf_counter() - t0})
                used = reply.usage.input_tokens + reply.usage.output_tokens
                return reply
            except ProviderError as exc:
                kind, message, status, retry_after = exc.kind, exc.message, exc.status, exc.retry_after
                hints, limited = exc.hints, exc.kind == "rate_limit"
            except TimeoutError:
                kind, message, status = "timeout", f"no reply within {self.timeout_s:g} s", None
            except (asyncio.CancelledError, CostCapped):  # a cap's refusal ends the trajectory
                raise
            except Exception as exc:  # a bug in a client: typed, not retried
                kind, message, status = "internal", f"{type(exc).__name__}: {exc}", None
            finally:
                # a Retry-After past the longest wait is a quota: it pauses no other call
                pause = retry_after if limited and retry_after is not None and \
                    retry_after <= self.max_retry_after_s else None
                if epoch is not None:
                    await self.limiter.release(epoch, rate_limited=limited,
                                               retry_after=pause, hints=hints, tokens=used)
            if retry_after is not None and retry_after > self.max_retry_after_s:
                message += f" (Retry-After {retry_after:g} s exceeds {self.max_retry_after_s:g} s)"
                kind = "quota" if kind == "rate_limit" else kind
            if kind not in RETRYABLE or attempt >= self.max_attempts or (
                retry_after is not None and retry_after > self.max_retry_after_s
            ):
                self.stats["errors"] += 1
                return Reply(
                    error=ErrorInfo(kind=kind, message=message, status=status, attempts=attempt),
                    latency_s=time.perf_counter() - t0,
                )
            self.stats["retries"] += 1
            await self.sleep(self.backoff(attempt, retry_after))

    async def aclose(self) -> None:
        await self.inner.aclose()
