"""Concurrency that adapts to a provider's rate limits: additive increase, multiplicative
decrease (AIMD, as TCP's congestion window), with the provider's own hints.

- **Increase**: it starts at a few calls (``START``) and, until the first 429, every call
  that comes back adds one (slow start: the limit doubles each round trip, so a provider
  without limits is at the ceiling within a second); after a 429 every call that comes
  back adds ``1 / limit``, so a full window of successes adds one call in flight; never
  past the ceiling (``--concurrency``). With no headers to say the provider's rate, slow
  start spreads the calls a round trip lets in over that round trip instead of sending
  them at once, so the burst that meets the first 429 is a call or two, not half a window.
- **Decrease**: a 429 halves the limit (never under one), once per window: the 429s of
  calls sent before the last decrease do not count again, or one burst would collapse it.
- **Retry-After**: no new call starts before the time the provider named (the call that
  got it waits as ``Reliable`` says).
- **Headers** (OpenAI's ``x-ratelimit-limit-``, ``-remaining-`` and ``-reset-``, each for
  ``requests`` and ``tokens``, the reset being the time until the bucket is full again:
  https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers; vLLM's where
  a proxy adds them): the limiter mirrors both buckets (what is left, refilling at
  (limit - remaining) / reset a second) and starts a call only while the request mirror
  holds one and the token mirror holds a call's tokens, counted as the mean tokens (input
  and output) of the replies so far. So it keeps the binding bucket's rate, requests or
  tokens, before the first 429, however short the calls. With no limit said and nothing
  left, new calls wait for the reset.
- **No headers** (Gemini answers a 429 with a retry delay alone): the window is the wrong
  control, since a window of calls that each take seconds sends far under a rate once
  halved; the rate is the right one. A 429 says the provider's bucket is empty, so the
  calls it accepted between two 429s ``MIN_SPAN_S`` or more apart, over the time between,
  are its rate (a little under when the bucket overflowed meanwhile: the safe side). From
  the first 429 calls are paced, one at a time with no burst (so the calls held by a
  Retry-After do not all meet the next 429): at ``EARLY`` of the rate accepted so far
  (which the bucket's first fill inflates and slow start deflates), cut by that share at
  each window's 429 and growing fast (``PROBE_FAST``) until two 429s say the rate; then at
  ``RATE_MARGIN`` of it, and each 429 measures it again. The pace then grows additively
  (``PROBE`` of itself a second), so a rate measured low or a limit raised is found, and
  that growth halves after each 429, to ``PROBE_MIN``: each probe that meets the limit
  costs a 429 or two, and slower probes make them rarer. A 429 while the provider took
  about what the pace sends (``KEEP``) is no limit's doing (a fault, as in
  ``benchmarks/soak.py``): cutting on it would spiral the pace down, so the pace holds and
  grows fast again. The window holds meanwhile (it grows only while full): the pace binds.

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

from ..engine.backend import RateHints, thin

START = 4  # calls in flight at first (or the ceiling, when lower)
RATE_MARGIN = 0.95  # the share of the estimated refill rate the mirror counts on
MIN_SPAN_S = 2.0  # the least time between two 429s whose accepted calls say a rate
KEEP = 0.97  # took this share of the pace or more between two 429s: no limit's doing
EARLY = 0.7  # the share of the last second's calls paced at after the first 429
PROBE_FAST = 0.1  # a paced rate's growth a second (a share of itself) until a rate is
#   estimated, and after a 429 that was no limit's doing
PROBE = 0.01  # ... once one is, at first
PROBE_MIN = 0.0025  # ... and after 429s have halved it
TIE_S = 0.05  # calls started this close together may reach the provider in any order
DECAY = 0.9  # the weight of a mirror's earlier replies in its refill rate


class Ticket(NamedTuple):
    """A call's place: the limit's epoch when it started, how many calls had started
    before it, when (to read a reply's headers as of the call's admission), and the tokens
    counted for the calls before it and itself.
    Calls started within ``TIE_S`` of each other count as started together (before each
    other): the provider may see them in any order."""

    epoch: int
    started: int
    at: float
    charged: float = 0.0


class Mirror:
    """One of the provider's buckets as the limiter counts it: what is left (calls or
    tokens), refilling continuously at ``rate`` a second up to ``size``."""

    def __init__(self, size: float, level: float, at: float, rate: float | None = None):
        self.size, self.level, self.at, self.rate = size, level, at, rate
        self._owed = self._over = 0.0  # the refills the replies said, and their times

    def wait(self, now: float, need: float) -> float:
        """Seconds until it holds ``need`` (0: now), refilling it to ``now``."""
        if self.rate:
            self.level = min(self.size, self.level + (now - self.at) * self.rate)
        self.at = now
        need = min(need, self.size)  # a call larger than the bucket waits for a full one
        if self.level >= need:
            return 0.0
        return (need - self.level) / self.rate if self.rate else 0.0

    def sync(self, remaining: float, size: float, reset: float | None, later: float,
             since: float, now: float, lower: bool = False) -> None:
        """A reply says ``remaining`` of ``size`` as of its call's admission, full again in
        ``reset`` s: ``later`` came out of it since, and it refilled for ``since`` s
        (``lower``: only if that is less than the mirror holds)."""
        if reset and reset > 0 and remaining < size:
            # it refills (size - remaining) in ``reset`` s; ``remaining`` may be rounded
            # down (half a call on average) and one reply's reset is short, so the rate is
            # the ratio of the sums over the last replies (a call's error over a few
            # seconds, not over one reset's milliseconds)
            self._owed = DECAY * self._owed + size - remaining - 0.5
            self._over = DECAY * self._over + reset
            if self._owed > 0:
                self.rate = RATE_MARGIN * self._owed / self._over
        self.wait(now, 0.0)  # refilled to now
        self.size = size
        level = min(size, remaining - later + since * (self.rate or 0.0))
        self.level = min(level, self.level) if lower else level


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
        self.started_at = time.time()  # when its course starts, on every process's clock
        self._epoch = 0  # bumped by each decrease: older calls' 429s do not count again
        self._not_before = 0.0
        self._cond = asyncio.Condition()
        self.history: list[tuple[float, int]] = [(0.0, int(self.limit))]
        self._started = 0  # calls started so far
        # the provider's buckets, from its headers (None until a response says)
        self._requests: Mirror | None = None
        self._tokens: Mirror | None = None
        self._charged = 0.0  # tokens counted out of the token mirror so far
        self._batch = (-1e9, 0, 0.0)  # the calls started together: when, calls and tokens before
        self._used = [0, 0]  # tokens of the replies so far, and how many replies said
        # without headers: the pace the 429s set (None until the first), its growth, and
        # (time, calls accepted) at each 429
        self._pace: Mirror | None = None
        self._probe: float | None = None  # None until a rate is estimated
        self._marks: collections.deque[tuple[float, int]] = collections.deque(maxlen=64)
        self._rtt: float | None = None  # a call's round trip, smoothed
        self._synced = -1  # the latest call whose reply's headers the mirrors hold
        self._spread_until = 0.0
        self._admits: collections.deque[float] = collections.deque(maxlen=1024)  # starts

    @property
    def current(self) -> int:
        return max(1, int(self.limit))

    @property
    def per_call(self) -> float:
        """The tokens a call is counted at: the mean of the replies' (0 before any)."""
        total, n = self._used
        return total / n if n else 0.0

    def _note(self) -> None:
        if int(self.limit) != self.history[-1][1]:
            self.history.append((round(self._clock() - self._t0, 3), int(self.limit)))
            self.history = thin(self.history)

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
                    return self._admit(now)
                await self._cond.wait()

    def _admit(self, now: float) -> Ticket:
        self.in_flight += 1
        for mirror in (self._requests, self._pace):
            if mirror is not None:
                mirror.level -= 1
        own = self.per_call
        if now - self._batch[0] > TIE_S:
            self._batch = (now, self._started, self._charged)
        self._charged += own
        if self._tokens is not None:
            self._tokens.level -= own
        if self._spreading():  # the next call of this round trip a little later
            self._spread_until = now + self._rtt / self.limit  # type: ignore[operator]
        self._admits.append(now)
        self._started += 1
        return Ticket(self._epoch, self._batch[1], now, self._batch[2] + own)

    def _spreading(self) -> bool:
        """Slow start, with no headers to say the provider's rate, spreads its calls."""
        return (self.slow_start and self.adaptive and self._rtt is not None
                and self._requests is None and self._tokens is None)

    def _bucket_wait(self, now: float) -> float:
        """Seconds until every mirrored bucket (and the pace) holds a call (0: now)."""
        wait = self._spread_until - now if self._spreading() else 0.0
        for mirror, need in ((self._requests, 1.0), (self._pace, 1.0),
                             (self._tokens, self.per_call)):
            if mirror is not None:
                wait = max(wait, mirror.wait(now, need))
        return wait

    async def release(self, ticket: Ticket, *, rate_limited: bool = False,
                      retry_after: float | None = None, hints: RateHints | None = None,
                      tokens: int | None = None) -> None:
        """A call came back (``tokens``: what its reply used): adapt, and wake the calls
        waiting for room."""
        async with self._cond:
            self.in_flight -= 1
            now = self._clock()
            if rate_limited:
                self._limited(ticket, now, hints)
            elif self.adaptive:
                step = 1.0 if self.slow_start else 1 / max(self.limit, 1.0)
                if self._pace is None or self.in_flight + 1 >= self.current:
                    # paced, the window grows only while it is full: the pace binds
                    self.limit = min(float(self.ceiling), self.limit + step)
                if tokens:
                    self._used[0] += tokens
                    self._used[1] += 1
                if self._pace is not None and self._pace.rate:  # probe upwards: a share
                    # of the pace a second, as successes come at the pace
                    self._pace.rate += PROBE_FAST if self._probe is None else self._probe
            # fixed: the ceiling alone, as a semaphore (each call waits its own Retry-After)
            if self.adaptive and retry_after is not None and retry_after > 0:
                self._not_before = max(self._not_before, now + retry_after)
            if self.adaptive and hints is not None:
                self._obey(hints, now, ticket)
            if self.adaptive and not rate_limited:  # a call's round trip, smoothed
                rtt = now - ticket.at
                self._rtt = rtt if self._rtt is None else 0.8 * self._rtt + 0.2 * rtt
            self._note()
            self._cond.notify_all()

    def _limited(self, ticket: Ticket, now: float, hints: RateHints | None) -> None:
        self.rate_limited += 1
        if not self.adaptive:
            return
        if self._requests is None and (hints is None or hints.remaining_requests is None):
            self._repace(ticket, now)  # no headers: the pace, not the window, answers
        elif ticket.epoch == self._epoch:
            self.limit = max(1.0, self.limit / 2)
            self._epoch += 1
        self.slow_start = False

    def _repace(self, ticket: Ticket, now: float) -> None:
        """A 429 with no bucket headers: the provider's bucket is empty now. If it was at a
        429 at least ``MIN_SPAN_S`` ago, the calls it accepted in between are its rate: pace
        at a margin under it, unless it took about what the pace sends (``KEEP``): then the
        429 says nothing of the rate (a provider's fault, not a limit) and the pace grows
        fast again. Before (the first 429s) pace at ``EARLY`` of the last second's calls,
        or of the pace, once per window, and grow fast (``PROBE_FAST``) to the next."""
        accepted = self._started - self.rate_limited
        earlier = [m for m in self._marks if now - m[0] >= MIN_SPAN_S]
        self._marks.append((now, accepted))
        pace = self._pace.rate if self._pace is not None else None
        if pace is not None and ticket.epoch != self._epoch:
            return  # a call sent before the pace was last set: it has answered for it
        if earlier:
            t, n = earlier[-1]
            took = max(accepted - n, 1) / (now - t)
            if pace and took >= KEEP * pace:
                self._probe = None
                return
            rate = RATE_MARGIN * took
            if self._probe is not None:  # the next probe goes slower
                self._probe = max(PROBE_MIN, self._probe / 2)
            else:
                self._probe = PROBE
        elif pace is None:
            # the calls of the last round trip (or second), less this one: a rate at which
            # the provider's bucket ran out
            span = max(self._rtt or 0.0, 1.0)
            sent = sum(1 for t in self._admits if now - t <= span) - 1
            rate = EARLY * max(sent, 1) / span
        else:
            rate = EARLY * pace
        self._epoch += 1
        # no burst: after any pause the calls come one by one at the pace
        self._pace = Mirror(1.0, 0.0, now, rate)

    def _obey(self, hints: RateHints, now: float, ticket: Ticket) -> None:
        if ticket.started < self._synced:
            return  # an earlier call's reply, come late: the mirrors know better
        # of calls started together, the one the provider saw last says least
        lower = ticket.started == self._synced
        self._synced = ticket.started
        # the bucket refilled since the provider saw the call: for about a round trip (a
        # call that took longer may have waited on this side before it was sent)
        since = min(now - ticket.at, self._rtt or 0.0)
        remaining, reset, size = (hints.remaining_requests, hints.reset_requests_s,
                                  hints.limit_requests)
        if remaining is not None and size and reset is not None:
            # the headers count the calls admitted up to this one: those started after it
            # came out of the bucket since, and the bucket refilled for as long
            if self._requests is None:
                self._requests = Mirror(size, remaining, now)
            self._requests.sync(remaining, size, reset, self._started - ticket.started - 1,
                                since, now, lower)
            self._pace = None  # the headers say: no guessing
        elif remaining is not None and remaining <= 0 and reset:
            self._not_before = max(self._not_before, now + reset)  # no size said: the reset
        left, reset, size = hints.remaining_tokens, hints.reset_tokens_s, hints.limit_tokens
        if left is not None and size and reset is not None and self.per_call:
            if self._tokens is None:
                self._tokens = Mirror(size, left, now)
            self._tokens.sync(left, size, reset, self._charged - ticket.charged, since, now,
                              lower)
        elif left is not None and left <= 0 and reset:
            self._not_before = max(self._not_before, now + reset)

    def record(self) -> dict[str, Any]:
        """What run.json keeps: the ceiling, the limit now, its course, the 429s, and when
        the course started (seconds since the epoch: shards' courses add up on it)."""
        return {"ceiling": self.ceiling, "limit": self.current, "rate_limited": self.rate_limited,
                "history": [list(p) for p in self.history],
                "started_at": round(self.started_at, 3)}
