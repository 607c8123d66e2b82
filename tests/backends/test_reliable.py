"""Retries, timeouts, concurrency and caching around a scripted backend."""

import asyncio

import pytest

from unseen.backends.base import BaseBackend
from unseen.backends.http_errors import retry_after, status_kind
from unseen.backends.reliable import Reliable
from unseen.engine.backend import ProviderError
from unseen.engine.cache import ReplyCache
from unseen.engine.types import Message, Reply, Request, TextPart, Usage


class Scripted(BaseBackend):
    provider = "scripted"

    def __init__(self, *script, delay=0.0):
        super().__init__("m")
        self.script = list(script)
        self.calls = 0
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, request):
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            item = self.script.pop(0) if self.script else Reply(text="ok")
            if isinstance(item, Exception):
                raise item
            return item
        finally:
            self.in_flight -= 1


REQ = Request(messages=[Message(role="user", parts=[TextPart(text="hi")])])


def wrap(inner, **kw):
    kw.setdefault("backoff_base_s", 0.001)
    return Reliable(inner, **kw)


async def test_retryable_errors_then_success():
    inner = Scripted(ProviderError("server", "500"), ProviderError("connection", "reset"),
                     ProviderError("malformed", "junk"), Reply(text="fine"))
    reply = await wrap(inner).complete(REQ)
    assert reply.ok and reply.text == "fine" and inner.calls == 4


@pytest.mark.parametrize("kind", ["quota", "client", "internal"])
async def test_not_retried(kind):
    inner = Scripted(ProviderError(kind, "no"))
    reply = await wrap(inner).complete(REQ)
    assert reply.error.kind == kind and inner.calls == 1 and reply.error.attempts == 1


async def test_gives_up_after_max_attempts_with_typed_error():
    inner = Scripted(*[ProviderError("server", "boom", status=503)] * 10)
    reply = await wrap(inner, max_attempts=3).complete(REQ)
    assert reply.error.kind == "server" and reply.error.status == 503
    assert reply.error.attempts == 3 and inner.calls == 3 and reply.text == ""


def fake_clock(backend) -> list[float]:
    """The waits between attempts, recorded instead of slept (no wall clock in the test)."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    backend.sleep = sleep
    return waits


async def test_retry_after_is_honoured():
    inner = Scripted(ProviderError("rate_limit", "slow down", 429, retry_after=0.3))
    backend = wrap(inner)
    waits = fake_clock(backend)
    reply = await backend.complete(REQ)
    assert reply.ok and waits == [0.3] and inner.calls == 2  # exactly Retry-After, no more


async def test_retry_after_beyond_limit_is_a_quota_not_a_wait():
    inner = Scripted(ProviderError("rate_limit", "come back tomorrow", 429, retry_after=86400))
    backend = wrap(inner)
    waits = fake_clock(backend)
    reply = await backend.complete(REQ)
    assert reply.error.kind == "quota" and inner.calls == 1 and waits == []


async def test_backoff_doubles_with_jitter_below_its_ceiling():
    inner = Scripted(*[ProviderError("server", "boom", status=503)] * 5)
    backend = wrap(inner, max_attempts=5, backoff_base_s=1.0)
    waits = fake_clock(backend)
    await backend.complete(REQ)
    # after attempt k the wait lies in [c/2, c] with c = base * 2^(k-1) (Reliable.backoff)
    assert len(waits) == 4
    for k, w in enumerate(waits, start=1):
        assert 2 ** (k - 1) / 2 <= w <= 2 ** (k - 1)


async def test_timeout_fires_and_is_retried():
    inner = Scripted(delay=30)  # a reply that would come only after 30 s
    reply = await wrap(inner, timeout_s=0.05, max_attempts=2).complete(REQ)
    assert reply.error.kind == "timeout" and inner.calls == 2  # else: the reply, 30 s later


async def test_empty_reply_is_an_error_and_retried():
    inner = Scripted(Reply(text=""), Reply(text="  "), Reply(text="x"))
    reply = await wrap(inner).complete(REQ)
    assert reply.text == "x" and inner.calls == 3
    inner = Scripted(*[Reply(text="")] * 3)
    reply = await wrap(inner, max_attempts=3).complete(REQ)
    assert reply.error.kind == "empty"


async def test_bug_in_client_is_typed_internal():
    inner = Scripted(KeyError("oops"))
    reply = await wrap(inner).complete(REQ)
    assert reply.error.kind == "internal" and "KeyError" in reply.error.message


async def test_concurrency_limit():
    inner = Scripted(delay=0.02)
    rel = wrap(inner, concurrency=3)
    await asyncio.gather(*(rel.complete(REQ) for _ in range(12)))
    assert inner.max_in_flight == 3 and inner.calls == 12


async def test_cache_hit_skips_the_call_and_errors_are_not_cached(tmp_path):
    cache = ReplyCache(tmp_path)
    inner = Scripted(ProviderError("client", "bad"), Reply(text="answer"))
    rel = wrap(inner, cache=cache)
    assert (await rel.complete(REQ)).error.kind == "client"
    first = await rel.complete(REQ)
    assert first.text == "answer" and not first.cached and inner.calls == 2
    again = await rel.complete(REQ)
    assert again.cached and again.text == "answer" and inner.calls == 2


def test_backoff_grows_with_jitter_and_cap():
    rel = Reliable(Scripted(), backoff_base_s=1.0, backoff_max_s=8.0, seed=1)
    waits = [rel.backoff(a, None) for a in range(1, 8)]
    for a, w in enumerate(waits, start=1):
        ceiling = min(8.0, 2 ** (a - 1))
        assert ceiling / 2 <= w <= ceiling
    assert rel.backoff(3, 7.5) == 7.5


def test_status_classification():
    assert status_kind(429, "Rate limit reached for requests per minute") == "rate_limit"
    assert status_kind(429, '{"code": "insufficient_quota"}') == "quota"
    assert status_kind(429, "Quota exceeded for metric GenerateRequestsPerDayPerProjectPerModel") == "quota"
    assert status_kind(503) == "server" and status_kind(400) == "client"
    assert status_kind(401) == "client" and status_kind(408) == "timeout"


def test_retry_after_header_forms():
    assert retry_after({"Retry-After": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({}) is None and retry_after(None) is None
    assert retry_after({"Retry-After": "garbage"}) is None
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


async def test_the_limiter_counts_a_call_at_the_tokens_replies_used():
    """The token mirror (``limiter.py``) counts a call at the mean tokens of the replies."""
    inner = Scripted(Reply(text="a", usage=Usage(input_tokens=900, output_tokens=20)),
                     Reply(text="b", usage=Usage(input_tokens=1100, output_tokens=20)))
    rel = wrap(inner)
    for _ in range(2):
        await rel.complete(REQ)
    assert rel.limiter.per_call == 1020
