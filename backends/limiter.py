"""Concurrency that adapts to a provider's rate limits: additive increase, multiplicative
decrease (AIMD, as TCP's congestion window), with the provider's own hints.

- **Increase**: it starts at a few calls (``START``) and, until the first 429, every call
  that comes back adds one (slow start: the limit doubles each round trip, so a provider
  without limits is at the ceiling within a second); after a 429 every call that comes
  back adds ``1 / limit``, so a full window of successes adds one call in flight; never
  past the ceiling (``--concurrency``).
- **Decrease**: a 429 halves the limit (never under one), once per window: the 429s of
  calls sent before the last decrease do not count again, or one burst would collapse it.
- **Retry-After**: no new call starts before the time the provider named (the call that
  got it waits as ``Reliable`` says).
- **Headers** (``x-ratelimit-limit-requests``, ``-remaining-`` and ``-reset-``: OpenAI's,
  and vLLM's where a proxy adds them): the limiter mirrors the provider's request bucket
  (calls left, refilling at (limit - remaining) / reset a second, as OpenAI's buckets
  refill continuously) and starts a call only while the mirror holds one, so it keeps the
  provider's rate before the first 429, however short the calls; with no limit said, or no
  tokens left (``-tokens``), new calls wait for the reset.

The limit's course (``history``: seconds since the start and the limit, whenever it
changes by a whole call) and the 429 count go to run.json.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..engine.backend import RateHints

START = 4  # calls in flight at first (or the ceiling, when lower)
RATE_MARGIN = 0.95  # the share of the estimated refill rate the mirror counts on
PACE_WINDOW_S = 3.0  # seconds of successes whose rate paces calls after a bare 429
PROBE = 0.01  # a paced rate's growth per success, at one call a second
MAX_HISTORY = 200  # points of the limit's course kept (thinned when longer)


class Ticket(NamedTuple):
    """A call's place: the limit's epoch when it started, how many calls had started
    before it, and when (to read a reply's headers as of the call's admission)."""

    epoch: int
    started: int
    at: float


class AdaptiveLimit:
    """Calls in flight under a limit that adapts (see the module docstring)."""

    def __init__(self, ceiling: int, *, start: int | None = None, adaptive: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        if ceiling < 1:
            raise ValueError("the concurrency ceiling must be at least 1")
        self.ceiling = ceiling
        self.adaptive = adaptive
        start = START if start is None else start
        self.limit = float(min(start, ceiling) if adaptive else ceiling)
        self.slow_start = True  # until the first 429
        self.in_flight = 0
        self.rate_limited = 0  # 429s seen
        self._clock = clock
        self._t0 = clock()
        self._epoch = 0  # bumped by each decrease: older calls' 429s do not count again
        self._not_before = 0.0
        self._cond = asyncio.Condition()
        self.history: list[tuple[float, int]] = [(0.0, int(self.limit))]
        # a mirror of the provider's request bucket, from its headers: calls left, when
        # last said, and the refill rate (calls per second); None until a response says
        self._tokens: float | None = None
        self._tokens_at = 0.0
        self._rate: float | None = None
        self._size: float | None = None
        self._started = 0  # calls started so far
        # without headers: the rate the provider kept before its last 429 paces the calls
        self._successes: collections.deque[float] = collections.deque(maxlen=256)
        self._paced = False

    @property
    def current(self) -> int:
        return max(1, int(self.limit))

    def _note(self) -> None:
        if int(self.limit) != self.history[-1][1]:
            self.history.append((round(self._clock() - self._t0, 3), int(self.limit)))
            if len(self.history) > MAX_HISTORY:  # keep the first, thin the rest
                self.history = self.history[:1] + self.history[2::2]

    async def acquire(self) -> Ticket:
        """Wait for room under the limit and for any pause; returns the call's ticket."""
        async with self._cond:
            while True:
                now = self._clock()
                wait = max(self._not_before - now, self._bucket_wait(now))
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._cond.wait(), timeout=wait)
                    continue
                if self.in_flight < self.current:
                    self.in_flight += 1
                    if self._tokens is not None:
                        self._tokens -= 1
                    self._started += 1
                    return Ticket(self._epoch, self._started - 1, now)
                await self._cond.wait()

    def _bucket_wait(self, now: float) -> float:
        """Seconds until the mirrored bucket holds a call (0: now), refilling it."""
        if self._tokens is None or not self._rate:
            return 0.0
        self._tokens = min(self._size or float("inf"),
                           self._tokens + (now - self._tokens_at) * self._rate)
        self._tokens_at = now
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self._rate

    async def release(self, ticket: Ticket, *, rate_limited: bool = False,
                      retry_after: float | None = None, hints: RateHints | None = None) -> None:
        """A call came back: adapt, and wake the calls waiting for room."""
        epoch = ticket.epoch
        async with self._cond:
            self.in_flight -= 1
            now = self._clock()
            if rate_limited:
                self.rate_limited += 1
                if self.adaptive and epoch == self._epoch:
                    self.limit = max(1.0, self.limit / 2)
                    self._epoch += 1
                    self.slow_start = False
                    self._pace_from_successes(now)
            elif self.adaptive:
                step = 1.0 if self.slow_start else 1 / max(self.limit, 1.0)
                self.limit = min(float(self.ceiling), self.limit + step)
                self._successes.append(now)
                if self._paced:  # probe upwards: a few per cent a second at the paced rate
                    self._rate = (self._rate or 0.0) * (1 + PROBE / max(self._rate or 1.0, 1.0))
            # fixed: the ceiling alone, as a semaphore (each call waits its own Retry-After)
            if self.adaptive and retry_after is not None and retry_after > 0:
                self._not_before = max(self._not_before, now + retry_after)
            if self.adaptive and hints is not None:
                self._obey(hints, now, ticket)
            self._note()
            self._cond.notify_all()

    def _pace_from_successes(self, now: float) -> None:
        """A 429 with no bucket headers: pace calls at a little under the rate of the
        successes of the last seconds (the rate the provider kept), then probe upwards."""
        if self._size is not None and not self._paced:
            return  # the headers mirror the bucket: nothing to guess
        recent = [t for t in self._successes if now - t <= PACE_WINDOW_S]
        if len(recent) < 3 or now - recent[0] < PACE_WINDOW_S / 4:
            return  # too few, or too close together, to say a rate
        self._paced = True
        self._rate = RATE_MARGIN * (len(recent) - 1) / (now - recent[0])
        self._size = max(1.0, self._rate)  # at most a second's burst
        self._tokens, self._tokens_at = 0.0, now

    def _obey(self, hints: RateHints, now: float, ticket: Ticket) -> None:
        remaining, reset, size = (hints.remaining_requests, hints.reset_requests_s,
                                  hints.limit_requests)
        if remaining is not None and size and reset is not None:
            # OpenAI's buckets refill continuously: full again in ``reset`` seconds, so they
            # refill at (size - remaining) / reset calls a second; calls start only while
            # the mirror holds one, so the run keeps the provider's rate without a 429
            if remaining < size and reset > 0:
                # ``remaining`` is a whole number rounded down, so this overestimates the
                # rate by up to 1 / reset: a margin keeps the mirror behind the bucket
                self._rate = RATE_MARGIN * (size - remaining) / reset
            self._size = float(size)
            self._paced = False  # the headers say: no guessing
            # the headers count the calls admitted up to this one: those started after it
            # came out of the bucket since, and the bucket refilled for as long
            since = self._started - ticket.started - 1
            refill = (now - ticket.at) * (self._rate or 0.0)
            self._tokens = min(float(size), remaining - since + refill)
            self._tokens_at = now
        elif remaining is not None and remaining <= 0 and reset:
            self._not_before = max(self._not_before, now + reset)  # no size said: the reset
        tokens_left, tokens_reset = hints.remaining_tokens, hints.reset_tokens_s
        if tokens_left is not None and tokens_left <= 0 and tokens_reset:
            self._not_before = max(self._not_before, now + tokens_reset)

    def record(self) -> dict[str, Any]:
        """What run.json keeps: the ceiling, the limit now, its course, the 429s."""
        return {"ceiling": self.ceiling, "limit": self.current, "rate_limited": self.rate_limited,
                "history": [list(p) for p in self.history]}
