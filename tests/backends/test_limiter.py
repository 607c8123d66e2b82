"""Concurrency that adapts to rate limits (issue 24, section 1): AIMD under the
``--concurrency`` ceiling, Retry-After and the x-ratelimit headers obeyed, per backend and
per server, its course and the 429s in run.json and on the progress line.

Worked by hand: from 4 in flight, slow start adds one per call that comes back, so four
successes make 8; a 429 that carries the headers halves it to 4 and ends slow start; then a
success adds 1/4, so four more make 5. A bare 429 (no headers) paces the calls instead.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from fake_providers import Error, FakeProvider, Reply, limited_once

import unseen
from unseen.backends.limiter import AdaptiveLimit
from unseen.backends.openai_chat import RAW_RESPONSE
from unseen.engine.backend import RateHints, duration_s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def calls(lim: AdaptiveLimit, n: int, **outcome) -> None:
    """``n`` calls in a row, each ending with ``outcome``."""
    for _ in range(n):
        epoch = await lim.acquire()
        await lim.release(epoch, **outcome)


async def test_slow_start_then_halving_once_per_window_then_additive():
    lim = AdaptiveLimit(32, clock=Clock())
    assert lim.current == 4
    await calls(lim, 4)
    assert lim.current == 8  # slow start: +1 a call
    # a burst: eight calls in flight, all answered 429 (with OpenAI's headers): one
    # halving, not eight
    epochs = [await lim.acquire() for _ in range(8)]
    for e in epochs:
        await lim.release(e, rate_limited=True, hints=RateHints(remaining_requests=0))
    assert lim.current == 4 and lim.rate_limited == 8 and not lim.slow_start
    await calls(lim, 4)
    # 4 → 4.25 → 4.485 → 4.708 → 4.920: one window adds almost one call
    assert lim.limit == pytest.approx(4.920, abs=0.001) and lim.current == 4
    await calls(lim, 2000)
    assert lim.current == 32  # never past the ceiling
    assert [p[1] for p in lim.history][:4] == [4, 5, 6, 7]


async def test_retry_after_pauses_every_new_call_until_its_time():
    clock = Clock()
    lim = AdaptiveLimit(8, clock=clock)
    epoch = await lim.acquire()
    await lim.release(epoch, rate_limited=True, retry_after=30.0)
    waiting = asyncio.ensure_future(lim.acquire())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # paused: the provider said 30 s
    clock.now += 31
    async with lim._cond:
        lim._cond.notify_all()
    assert (await asyncio.wait_for(waiting, 5)).epoch == lim._epoch


async def test_headers_slow_it_down_before_the_first_429():
    """A response says 3 of 5 calls are left and the bucket is full again in 10 s: it
    refills at (5 - 3 - 0.5) / 10 = 0.15 calls a second (the half: ``remaining`` may be
    rounded down), counted with a margin as 0.1425. Three calls start at once; the fourth
    waits for the refill (1 / 0.1425 = 7.0 s), without a 429."""
    clock = Clock()
    lim = AdaptiveLimit(16, start=16, clock=clock)
    epoch = await lim.acquire()
    await lim.release(epoch, hints=RateHints(remaining_requests=3, reset_requests_s=10.0,
                                             limit_requests=5))
    for _ in range(3):
        await asyncio.wait_for(lim.acquire(), 5)
    waiting = asyncio.ensure_future(lim.acquire())
    await asyncio.sleep(0.05)
    assert not waiting.done() and lim.rate_limited == 0
    clock.now += 6.8
    async with lim._cond:
        lim._cond.notify_all()
    await asyncio.sleep(0.05)
    assert not waiting.done()  # 6.8 s is not yet 7.0
    clock.now += 0.3
    async with lim._cond:
        lim._cond.notify_all()
    await asyncio.wait_for(waiting, 5)
    # no bucket size said and nothing left: wait for the whole reset
    other = AdaptiveLimit(16, clock=clock)
    epoch = await other.acquire()
    await other.release(epoch, hints=RateHints(remaining_requests=0, reset_requests_s=20.0))
    waiting = asyncio.ensure_future(other.acquire())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    clock.now += 21
    async with other._cond:
        other._cond.notify_all()
    await asyncio.wait_for(waiting, 5)


async def tick(lim: AdaptiveLimit, clock: Clock, seconds: float) -> None:
    """Move the fake clock on and wake the calls waiting on it."""
    clock.now += seconds
    async with lim._cond:
        lim._cond.notify_all()
    await asyncio.sleep(0.05)


async def test_the_token_headers_slow_it_down_when_tokens_bind():
    """Requests to spare, tokens short. A reply used 1,000 tokens and says 3,500 of 10,000
    are left, full again in 6.5 s: the bucket refills at (10,000 - 3,500 - 0.5) / 6.5 =
    999.9 tokens a second, counted as 949.9. Three calls of 1,000 start at once (500 left);
    the fourth waits (1,000 - 500) / 949.9 = 0.53 s for the tokens, without a 429."""
    clock = Clock()
    lim = AdaptiveLimit(16, start=16, clock=clock)
    first = await lim.acquire()
    await lim.release(first, tokens=1000, hints=RateHints(
        remaining_requests=900, reset_requests_s=0.1, limit_requests=1000,
        remaining_tokens=3500, reset_tokens_s=6.5, limit_tokens=10_000))
    assert lim.per_call == 1000
    for _ in range(3):
        await asyncio.wait_for(lim.acquire(), 5)
    waiting = asyncio.ensure_future(lim.acquire())
    await tick(lim, clock, 0.5)
    assert not waiting.done() and lim.rate_limited == 0
    await tick(lim, clock, 0.05)
    await asyncio.wait_for(waiting, 5)


async def test_a_late_reply_of_calls_started_together_does_not_raise_the_mirror():
    """Two calls start together; the provider saw the second first (4 left) and the first
    last (3 left). Whichever reply comes first, the mirror holds what the last-seen says:
    3, less the other call (started together, so maybe after)."""
    for order in ((0, 1), (1, 0)):
        clock = Clock()
        lim = AdaptiveLimit(16, start=16, clock=clock)
        tickets = [await lim.acquire(), await lim.acquire()]
        says = {0: 3, 1: 4}  # the provider's remaining for each
        for i in order:
            await lim.release(tickets[i], hints=RateHints(
                remaining_requests=says[i], reset_requests_s=100.0, limit_requests=5))
        assert lim._requests is not None and lim._requests.level == pytest.approx(2, abs=0.01)


async def test_bare_429s_pace_the_calls_at_the_rate_the_provider_accepted():
    """No headers. Six calls start; the first gets a 429: five started in the last second
    besides it, so calls are paced at 0.7 x 5 = 3.5 a second, one at a time (the next waits
    1 / 3.5 = 0.29 s), and the window holds. Eight calls then go through in 2.4 s; a 429 at
    2.9 s after the first says the provider's bucket ran out again: it accepted 8 calls in
    2.9 s, so the pace is 0.95 x 8 / 2.9 = 2.62 a second."""
    clock = Clock()
    lim = AdaptiveLimit(32, start=8, clock=clock)
    first = [await lim.acquire() for _ in range(6)]
    await lim.release(first[0], rate_limited=True)
    assert lim.current == 8 and lim.rate_limited == 1
    waiting = asyncio.ensure_future(lim.acquire())
    await tick(lim, clock, 0.25)
    assert not waiting.done()
    await tick(lim, clock, 0.05)
    await lim.release(await asyncio.wait_for(waiting, 5))
    for ticket in first[1:]:
        await lim.release(ticket)
    for _ in range(7):  # a pace of at least 3.5 a second: each starts at once
        await tick(lim, clock, 0.3)
        await lim.release(await asyncio.wait_for(lim.acquire(), 5))
    assert lim.current == 8  # the window never filled: it held
    clock.now = 102.9
    await lim.release(await asyncio.wait_for(lim.acquire(), 5), rate_limited=True)
    waiting = asyncio.ensure_future(lim.acquire())
    await tick(lim, clock, 0.35)
    assert not waiting.done()  # 1 / 2.62 = 0.38 s
    await tick(lim, clock, 0.05)
    await asyncio.wait_for(waiting, 5)
    assert lim.current == 8 and lim.rate_limited == 2


async def test_a_429_the_pace_did_not_cause_leaves_it_growing():
    """No headers. Sixteen calls start and one gets a 429 (pace 0.7 x 15 = 10.5 a second);
    twenty more go through; a 429 2.9 s after the first says the provider took 20 calls in
    2.9 s: the pace is cut to 0.95 x 6.90 = 6.55. Five calls at that pace go through, then
    a 429: since the first 429 the provider took 25 calls in 3.83 s, 6.53 a second, about
    what the pace sends (6.60): no limit's doing. The pace is kept and grows fast again (0.1
    a call): ten calls on it is 7.60, and the next call waits 1 / 7.60 = 0.13 s (cut again,
    to 0.95 x 6.53 = 6.20, it would wait 0.16 s)."""
    clock = Clock()
    lim = AdaptiveLimit(32, start=16, clock=clock)
    first = [await lim.acquire() for _ in range(16)]
    await lim.release(first[0], rate_limited=True)
    for ticket in first[1:]:
        await lim.release(ticket)

    async def calls_every(seconds: float, n: int) -> None:
        for _ in range(n):  # each finds the pace ready: no wait
            clock.now += seconds
            await lim.release(await asyncio.wait_for(lim.acquire(), 5))

    await calls_every(0.12, 20)
    clock.now = 102.9
    await lim.release(await asyncio.wait_for(lim.acquire(), 5), rate_limited=True)
    await calls_every(0.155, 5)
    clock.now += 0.155
    await lim.release(await asyncio.wait_for(lim.acquire(), 5), rate_limited=True)
    await calls_every(0.155, 10)
    waiting = asyncio.ensure_future(lim.acquire())
    await tick(lim, clock, 0.12)
    assert not waiting.done()
    await tick(lim, clock, 0.02)
    await asyncio.wait_for(waiting, 5)
    assert lim.rate_limited == 3


async def test_slow_start_spreads_a_round_trips_calls_without_headers():
    """Four calls come back after 0.5 s: the limit is 8, and the calls it lets in start
    0.5 / 8 = 0.0625 s apart rather than at once."""
    clock = Clock()
    lim = AdaptiveLimit(32, clock=clock)
    tickets = [await lim.acquire() for _ in range(4)]
    clock.now += 0.5
    for t in tickets:
        await lim.release(t)
    assert lim.current == 8
    await asyncio.wait_for(lim.acquire(), 5)
    waiting = asyncio.ensure_future(lim.acquire())
    await tick(lim, clock, 0.05)
    assert not waiting.done()
    await tick(lim, clock, 0.02)
    await asyncio.wait_for(waiting, 5)


def test_openais_header_forms_are_read():
    assert duration_s("6m0s") == 360 and duration_s("20ms") == 0.02
    assert duration_s("1h2m3.5s") == 3723.5 and duration_s("2") == 2 and duration_s("x") is None
    hints = RateHints.of({"x-ratelimit-limit-requests": "60",
                          "x-ratelimit-limit-tokens": "150000",
                          "x-ratelimit-remaining-requests": "59",
                          "x-ratelimit-remaining-tokens": "149984",
                          "x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6ms"})
    assert hints == RateHints(59, 149984, 1.0, 0.006, 60, 150000)
    assert RateHints.of({"content-type": "application/json"}) is None


def test_the_raw_response_header_is_the_sdks():
    from openai._constants import RAW_RESPONSE_HEADER

    assert RAW_RESPONSE == RAW_RESPONSE_HEADER


def bucket(rate: float, capacity: int, text: str = '{"box": [100, 200, 300, 400]}'):
    """A behaviour: a token bucket of ``rate`` requests/s; empty → 429 with Retry-After."""
    import threading
    import time

    state = {"tokens": float(capacity), "t": time.monotonic()}
    lock = threading.Lock()

    def behave(rec):
        with lock:
            now = time.monotonic()
            state["tokens"] = min(capacity, state["tokens"] + (now - state["t"]) * rate)
            state["t"] = now
            if state["tokens"] < 1:
                wait = (1 - state["tokens"]) / rate
                return Error(429, headers={"Retry-After": f"{wait:.2f}"})
            state["tokens"] -= 1
            left = int(state["tokens"])
        full = (capacity - state["tokens"]) / rate  # OpenAI's reset: until the bucket is full
        return Reply(text, headers={
            "x-ratelimit-limit-requests": str(capacity),
            "x-ratelimit-remaining-requests": str(left),
            "x-ratelimit-reset-requests": f"{full * 1000:.0f}ms"})

    return behave


def test_a_rate_limited_provider_slows_the_run_and_run_json_says_so(fp, sample_data, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = bucket(rate=40, capacity=4)
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=24, cache=False, progress=False, concurrency=16,
                     backoff_base_s=0.01)
    assert res.answered == 24 and res.errors == 0
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    course = desc["concurrency_course"]
    assert course["ceiling"] == 16 and course["history"][0] == [0.0, 4]
    limited = sum(1 for r in fp.requests) - 24
    assert course["rate_limited"] == limited
    if limited:  # a loaded machine may stay under the bucket's rate: then no 429 at all
        assert min(p[1] for p in course["history"][1:]) < 16


def test_fixed_concurrency_keeps_its_limit(fp, sample_data, tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # the server holds each request until six wait at once (or 10 s pass), so the count
    # says how many the client had in flight, whatever the machine's speed; then it holds
    # them half a second more, so a seventh that a limit too high lets go is counted too
    # (a loaded machine may only miss one: it can never fail a right limit)
    cond, waiting, most, opened = threading.Condition(), [0], [0], [False]

    def gate(rec):
        with cond:
            waiting[0] += 1
            most[0] = max(most[0], waiting[0])
            cond.notify_all()
            if not opened[0] and waiting[0] >= 6:
                cond.wait_for(lambda: waiting[0] > 6, timeout=0.5)
                opened[0] = True
                cond.notify_all()
            cond.wait_for(lambda: opened[0], timeout=10)
            waiting[0] -= 1
        return Reply('{"box": [100, 200, 300, 400]}')

    fp.default = gate
    unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
               out=tmp_path / "r", limit=12, cache=False, progress=False, concurrency=6,
               adaptive=False)
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert "concurrency_course" not in desc
    assert most[0] == 6  # all six from the first call, no slow start


def test_each_server_of_a_backend_adapts_alone(sample_data, tmp_path):
    model = "Qwen/Qwen3-VL-8B"
    box = '{"bbox_2d": [100, 200, 300, 400]}'
    with FakeProvider(bucket(rate=20, capacity=2, text=box)).serve(model) as tight, \
            FakeProvider(Reply(box, delay=0.01)).serve(model) as free:
        res = unseen.run(sample_data, ["direct"], [f"vllm:{model}@{tight.url},{free.url}"],
                         out=tmp_path / "r", limit=24, cache=False, progress=False,
                         concurrency=8, backoff_base_s=0.01)
        urls = tight.url, free.url
    assert res.answered == 24
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    counts = {c["url"].removesuffix("/v1"): c for c in desc["server_counts"]}
    tight_url, free_url = urls
    assert counts[free_url]["concurrency"]["rate_limited"] == 0
    course = counts[tight_url]["concurrency"]
    if course["rate_limited"]:  # the bucket's 429s lowered this server's limit alone
        assert min(p[1] for p in course["history"][1:]) < 8
    assert counts[free_url]["concurrency"]["history"][-1][1] > 4  # it grew


def test_the_progress_line_shows_the_limit_and_the_429s(fp, sample_data, tmp_path,
                                                        monkeypatch, run_main):
    """Each of four calls gets one 429 and then its answer: the run's progress line (as the
    terminal gets it) ends with the limit now, of the ceiling, and the four 429s."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = limited_once(Reply('{"box": [100, 200, 300, 400]}'))
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct",
                               "-b", "openai:gpt-4o", "--base-url", fp.openai_base_url,
                               "--limit", "4", "--concurrency", "8", "--no-cache",
                               "--out", str(tmp_path / "r")])
    assert code == 0, err
    line = next(ln for ln in (out + err).splitlines() if "running" in ln)
    assert re.search(r"errors 0 · cached 0 · limit \d+/8 · 429s 4$", line.strip()), line
