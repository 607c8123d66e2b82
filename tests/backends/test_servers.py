"""Several servers behind one backend (backends/servers.py): least outstanding requests, a
failed server marked down and its calls moved, retried after a back-off, per-server counts in
the run summary; against local fake servers, one killed mid-run. The reply cache key and the
journal do not depend on which server answered."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading

import pytest
from fake_providers import Error, FakeProvider, Reply
from helpers import read_journal, unused_port

import unseen
from unseen.backends import BackendConfigError, Reliable, make_backend
from unseen.backends.servers import Spread, server_summary
from unseen.engine.backend import BackendDefaults, ProviderError
from unseen.engine.types import Message, Request, TextPart
from unseen.engine.types import Reply as EngineReply

FAST = {"backoff_base_s": 0.01}
MODEL = "Qwen/Qwen3-VL-8B"
BOX = '{"bbox_2d": [100, 200, 300, 400]}'  # as Qwen3-VL's profile asks (qwen3)
BOX_OPENAI = '{"box": [100, 200, 300, 400]}'  # as gpt-4o's asks (norm1000)
REQ = Request(messages=[Message(role="user", parts=[TextPart(text="hi")])])


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Inner(BackendDefaults):
    """A bare backend (the optional members' defaults) whose calls are scripted: a ProviderError kind to raise, "hang", an
    asyncio.Event to wait for before answering, or (event, kind) to wait and then fail."""

    provider, model, box_format, simulated, cacheable = "vllm", MODEL, "norm1000", False, True
    capabilities = None

    def __init__(self, name: str):
        self.name = name
        self.script: list = []
        self.calls = 0

    def describe(self):
        return {"spec": "x", "model": MODEL, "base_url": self.name}

    async def complete(self, request):
        self.calls += 1
        step = self.script.pop(0) if self.script else None
        if isinstance(step, tuple):  # wait, then fail
            await step[0].wait()
            step = step[1]
        if isinstance(step, asyncio.Event):
            await step.wait()
        elif step == "hang":
            await asyncio.sleep(3600)
        elif isinstance(step, str):
            raise ProviderError(step, f"{self.name} failed")
        return EngineReply(text=self.name)

    async def aclose(self):
        pass


def spread(n: int, clock: Clock | None = None) -> tuple[Spread, list[Inner]]:
    inners = [Inner(f"s{i}") for i in range(n)]
    return Spread(inners, [i.name for i in inners], spec="vllm:m@a,b",
                  clock=clock or Clock()), inners


# ------------------------------------------------------------------------ by hand


async def test_least_outstanding_requests():
    sp, inners = spread(3)
    gates = [asyncio.Event() for _ in range(3)]
    for inner, gate in zip(inners, gates, strict=True):
        inner.script.append(gate)
    calls = [asyncio.create_task(sp.complete(REQ)) for _ in range(3)]
    await asyncio.sleep(0)
    assert [s.outstanding for s in sp.servers] == [1, 1, 1]  # one each, not three on s0
    gates[1].set()
    assert (await calls[1]).text == "s1"
    assert (await sp.complete(REQ)).text == "s1"  # the only idle one
    for g in gates:
        g.set()
    assert [r.text for r in await asyncio.gather(*calls)] == ["s0", "s1", "s2"]
    assert [s.calls for s in sp.servers] == [1, 2, 1]


@pytest.mark.parametrize("kind", ["connection", "server", "timeout"])
async def test_a_failed_server_is_marked_down_and_the_call_moves(kind):
    sp, (s0, s1) = spread(2)
    s0.script.append(kind)
    assert (await sp.complete(REQ)).text == "s1"  # the same call, answered by the other
    assert sp.server_counts()[0] == {"url": "s0", "calls": 1, "failures": 1,
                                     "down_periods": 1, "up": False}
    assert [(await sp.complete(REQ)).text for _ in range(3)] == ["s1"] * 3  # s0 rests


async def test_a_down_server_is_retried_after_its_back_off():
    clock = Clock()
    sp, (s0, s1) = spread(2, clock)
    s0.script += ["connection", "connection"]
    await sp.complete(REQ)  # s0 down at t=0 for 2 s
    clock.now = 1.9
    assert (await sp.complete(REQ)).text == "s1"
    clock.now = 2.0  # due back: least outstanding and fewest calls -> s0; it fails again
    assert (await sp.complete(REQ)).text == "s1"
    assert s0.calls == 2 and sp.servers[0].down_until == pytest.approx(2.0 + 4.0)  # doubled
    clock.now = 6.0
    assert (await sp.complete(REQ)).text == "s0"  # back, and up again
    assert sp.server_counts()[0] == {"url": "s0", "calls": 3, "failures": 2,
                                     "down_periods": 1, "up": True}


async def test_failures_of_calls_sent_before_it_went_down_do_not_extend_the_back_off():
    sp, (s0, s1) = spread(2)
    g0, g1 = asyncio.Event(), asyncio.Event()
    s0.script += [(g0, "connection"), (g0, "connection")]
    s1.script.append(g1)
    calls = [asyncio.create_task(sp.complete(REQ)) for _ in range(3)]  # s0, s1, s0
    await asyncio.sleep(0)
    assert [s.outstanding for s in sp.servers] == [2, 1]
    g0.set()  # both s0 calls fail: one down period, one back-off step
    await asyncio.sleep(0.01)
    g1.set()
    assert [r.text for r in await asyncio.gather(*calls)] == ["s1", "s1", "s1"]
    s0_state = sp.servers[0]
    assert (s0_state.failures, s0_state.down_periods, s0_state.streak) == (2, 1, 1)
    assert s0_state.down_until == pytest.approx(2.0)


async def test_request_errors_pass_through_and_every_server_down_raises():
    sp, (s0, s1) = spread(2)
    s0.script.append("client")
    with pytest.raises(ProviderError, match="s0 failed"):
        await sp.complete(REQ)  # a 4xx is the request's fault: not moved, s0 stays up
    assert sp.servers[0].down_until is None and s1.calls == 0
    s0.script.append("connection")
    s1.script.append("server")
    with pytest.raises(ProviderError) as info:
        await sp.complete(REQ)  # s1 first (fewer calls), then s0: the last error is raised
    assert info.value.kind == "connection"
    s0.script.append("connection")  # all down: the next call still tries the first due back
    with pytest.raises(ProviderError):
        await sp.complete(REQ)
    assert s0.calls == 3 and s1.calls == 1


async def test_a_call_timeout_marks_its_server_down_and_the_retry_moves():
    sp, (s0, s1) = spread(2)
    s0.script.append("hang")
    reply = await Reliable(sp, timeout_s=0.05, max_attempts=2, **FAST).complete(REQ)
    assert reply.ok and reply.text == "s1"
    assert sp.server_counts()[0]["failures"] == 1 and sp.server_counts()[0]["down_periods"] == 1


def test_summary_line_and_description():
    sp, _ = spread(2)
    desc = {**sp.describe(), "server_counts": sp.server_counts()}
    assert desc["servers"] == ["s0", "s1"] and "base_url" not in desc
    assert server_summary(desc) == (f"servers of {MODEL}: s0 0 calls, 0 failed, down 0× · "
                                    "s1 0 calls, 0 failed, down 0×")
    assert server_summary({"spec": "sim"}) is None


def test_spec_and_options():
    one = make_backend(f"vllm:{MODEL}@http://h:1")
    assert not isinstance(one, Spread) and one.base_url == "http://h:1/v1"
    two = make_backend(f"vllm:{MODEL}@http://h:1/, http://h:2/v1")
    assert [s.url for s in two.servers] == ["http://h:1/v1", "http://h:2/v1"]
    assert two.provider == "vllm" and two.model == MODEL and two.capabilities.reasoning
    opened = make_backend("openai:gpt-4o", api_key="k", base_url=["http://a/v1", "http://b/v1"])
    assert [s.url for s in opened.servers] == ["http://a/v1", "http://b/v1"]
    with pytest.raises(BackendConfigError, match="gemini takes one --base-url"):
        make_backend("gemini:gemini-2.5-flash", api_key="k", base_url=["http://a", "http://b"])


# --------------------------------------------------------- fake servers, the real SDK


def killed_after(fp: FakeProvider, n: int):
    """Answer ``n - 1`` calls, then die while the n-th is in flight."""
    count = itertools.count(1)

    def behave(rec):
        if next(count) == n:
            threading.Thread(target=fp.stop, daemon=True).start()
            return Reply(BOX, delay=30.0)  # dropped when the server stops
        return Reply(BOX, delay=0.02)

    return behave


def test_one_server_killed_mid_run_every_trajectory_answered(sample_data, tmp_path, run_main,
                                                             monkeypatch):
    """One call at a time (``--concurrency 1``), so which server gets which call does not
    depend on the machine's timing: with no call outstanding, the server with the fewest
    calls is picked, the first on a tie (a, b, c, a, ...). a dies during its third call,
    the run's seventh; that call moves to b, and a answers no more."""
    monkeypatch.setenv("COLUMNS", "80")
    with FakeProvider().serve(MODEL) as a, FakeProvider().serve(MODEL) as b, \
            FakeProvider().serve(MODEL) as c:
        a_url = a.url + "/v1"  # a's address, before it dies
        a.default = killed_after(a, 3)
        b.default = c.default = Reply(BOX, delay=0.02)
        spec = f"vllm:{MODEL}@{a.url},{b.url},{c.url}"
        code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct",
                                   "-b", spec, "--limit", "12", "--samples", "2",
                                   "--concurrency", "1", "--no-cache",
                                   "--out", str(tmp_path / "run")])
        served = len(b.requests) + len(c.requests)
    assert code == 0, err
    rows = read_journal(tmp_path / "run")
    assert len(rows) == 24 and all(r["status"] == "answered" for r in rows)
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    (desc,) = config["backends"]
    counts = {s["url"]: s for s in desc["server_counts"]}
    dead = counts[a_url]
    assert dead["failures"] >= 1 and dead["down_periods"] == 1 and not dead["up"]
    # a answered its first two calls; a retry after its back-off (a slow run) fails too
    assert dead["calls"] - dead["failures"] == 2
    assert served == 22  # every other call answered exactly once, by b or c
    assert all(s["failures"] == 0 for url, s in counts.items() if url != a_url)
    assert "servers of Qwen/Qwen3-VL-8B:" in out and f"{a_url} " in out


def test_base_url_repeated_spreads_an_openai_backend(sample_data, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeProvider(Reply(BOX_OPENAI)) as a, FakeProvider(Reply(BOX_OPENAI)) as b:
        res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "r",
                         base_url=[a.openai_base_url, b.openai_base_url], limit=6,
                         cache=False, progress=False, concurrency=2, **FAST)
        assert res.answered == 6 and a.requests and b.requests
        assert len(a.requests) + len(b.requests) == 6


def _stable(row: dict) -> dict:
    row = {k: v for k, v in row.items() if k not in ("seconds", "finished_at", "run")}
    row["steps"] = [{**s, "seconds": 0, "reply": {**s["reply"], "latency_s": 0}}
                    for s in row["steps"]]
    return row


def test_journal_and_cache_do_not_depend_on_which_server_answered(sample_data, tmp_path):
    cache = tmp_path / "cache"
    with FakeProvider().serve(MODEL) as a, FakeProvider().serve(MODEL) as b:
        spec = f"vllm:{MODEL}@{a.url},{b.url}"
        journals = []
        for name, (down, up) in {"a-down": (a, b), "b-down": (b, a)}.items():
            down.reset(Error(503))
            up.reset(Reply(BOX, reasoning="near the door"))
            unseen.run(sample_data, ["direct"], [spec], out=tmp_path / name, limit=4,
                       cache=False, progress=False, **FAST)
            assert len(up.requests) == 4
            journals.append(sorted((_stable(r) for r in read_journal(tmp_path / name)),
                                   key=lambda r: r["key"]))
        assert journals[0] == journals[1]
        # the cache: filled through these servers, read through another one entirely
        a.reset(Reply(BOX))
        unseen.run(sample_data, ["direct"], [spec], out=tmp_path / "fill", limit=4,
                   cache_dir=cache, progress=False, **FAST)
    with FakeProvider(Error(500)).serve(MODEL) as other:
        res = unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{other.url}"],
                         out=tmp_path / "read", limit=4, cache_dir=cache, progress=False, **FAST)
        assert res.answered == 4 and res.cache_hits == 4 and other.requests == []


def test_dead_server_from_the_start(sample_data, tmp_path):
    with FakeProvider(Reply(BOX)).serve(MODEL) as b:
        spec = f"vllm:{MODEL}@http://127.0.0.1:{unused_port()},{b.url}"
        res = unseen.run(sample_data, ["direct"], [spec], out=tmp_path / "r", limit=5,
                         cache=False, progress=False, **FAST)
    assert res.answered == 5 and len(b.requests) == 5
