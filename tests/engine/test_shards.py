"""Sharding a run over processes gives the same journal as one process."""

import json
import re

import pytest
from fake_providers import FakeProvider, Reply, limited_once

import unseen
from unseen.engine.limits import merge_courses
from unseen.evals.scenefunri.data.sample import write_test_set


def records(run_dir):
    return {r["key"]: r for r in map(json.loads, (run_dir / "trajectories.jsonl").open())}


@pytest.mark.slow
def test_two_processes_match_one(tmp_path):
    data = write_test_set(tmp_path / "data")
    kw = dict(samples=2, cache=False, progress=False)
    one = unseen.run(data, ["direct"], ["sim", "baseline:prior", "baseline:fixed"], out=tmp_path / "one", **kw)
    two = unseen.run(data, ["direct"], ["sim", "baseline:prior", "baseline:fixed"], out=tmp_path / "two",
                     processes=2, **kw)
    assert one.done == two.done == 144 and two.answered == one.answered
    a, b = records(tmp_path / "one"), records(tmp_path / "two")
    assert a.keys() == b.keys() and len(b) == 144  # every key once, none lost or doubled
    for key in a:
        assert a[key]["prediction"] == b[key]["prediction"]
        assert a[key]["metrics"] == b[key]["metrics"]
    # resuming a finished sharded run starts no work
    again = unseen.run(data, ["direct"], ["sim", "baseline:prior", "baseline:fixed"], out=tmp_path / "two",
                       processes=2, **kw)
    assert again.done == 0 and again.skipped == 144


def test_a_shard_that_cannot_start_fails_the_run_loudly(tmp_path, monkeypatch):
    import multiprocessing as mp

    import pytest

    from unseen.engine import shards

    class Broken:
        def __init__(self, ctx):
            self.ctx = ctx

        def Pipe(self, duplex):  # noqa: N802 - the multiprocessing name
            return self.ctx.Pipe(duplex=duplex)

        def Process(self, **kw):  # noqa: N802
            raise OSError("no more processes")

    monkeypatch.setattr(shards, "_context", lambda: Broken(mp.get_context("spawn")))
    data = write_test_set(tmp_path / "data")
    with pytest.raises(RuntimeError, match="could not start the shard processes"):
        unseen.run(data, ["direct"], ["sim"], out=tmp_path / "r", processes=2, cache=False,
                   progress=False)
    # what the parent's own shard finished is kept for the resume
    again = unseen.run(data, ["direct"], ["sim"], out=tmp_path / "r", cache=False, progress=False)
    assert again.skipped > 0 and again.skipped + again.done == 24


def test_the_default_number_of_processes_follows_the_runs_size():
    """1 below 5,000 trajectories or on one core, else min(3, cores + 1, concurrency)."""
    from unseen.engine.shards import auto_processes

    assert auto_processes(1_008, cores=2, concurrency=32) == 1  # start-up would dominate
    assert auto_processes(4_999, cores=16, concurrency=32) == 1
    assert auto_processes(10_000, cores=2, concurrency=32) == 3  # min(3, 2 + 1, 32)
    assert auto_processes(10_000, cores=16, concurrency=32) == 3
    assert auto_processes(10_000, cores=1, concurrency=32) == 1
    assert auto_processes(10_000, cores=4, concurrency=2) == 2  # one call in flight each


def test_a_run_without_processes_asks_the_default_with_its_size(tmp_path, monkeypatch):
    """``processes=None`` (the CLI's default) picks from the planned trajectories; an
    explicit number is taken as given, never replaced."""
    import unseen.api as api

    asked: list[tuple] = []

    def recording(trajectories, cores, concurrency):
        asked.append((trajectories, concurrency))
        return 1

    monkeypatch.setattr(api, "auto_processes", recording)
    data = write_test_set(tmp_path / "data")
    res = unseen.run(data, ["direct"], ["sim"], out=tmp_path / "r", cache=False,
                     progress=False, processes=None, samples=2, concurrency=5)
    assert asked == [(48, 5)] and res.done == 48  # 24 instances x 2 samples
    unseen.run(data, ["direct"], ["sim"], out=tmp_path / "r2", cache=False, progress=False,
               processes=1, limit=2)
    assert len(asked) == 1


def test_a_sharded_run_adds_its_shards_limits_up(tmp_path, run_main):
    """Two processes against a provider that answers each call's first try with a 429:
    run.json records the backend's course and all eight 429s, summed over the two shards
    (four calls each), and the progress line shows the limit of both and the 429s."""
    data = write_test_set(tmp_path / "data")
    model = "Qwen/Qwen3-VL-8B"
    with FakeProvider(limited_once(Reply('{"bbox_2d": [100, 200, 300, 400]}'))).serve(
            model) as fp:
        code, out, err = run_main(["run", "--data", str(data), "-s", "direct",
                                   "-b", f"vllm:{model}@{fp.url}", "--limit", "8",
                                   "--processes", "2", "--concurrency", "8", "--no-cache",
                                   "--out", str(tmp_path / "r")])
        sent = sum(1 for r in fp.requests if "completions" in r.path)
    assert code == 0, err
    assert sent == 16  # each call twice: the 429, then the answer
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    course = desc["concurrency_course"]
    assert course["rate_limited"] == 8 and course["processes"] == 2
    assert course["ceiling"] == 8  # four a shard
    line = next(ln for ln in (out + err).splitlines() if "running" in ln)
    assert re.search(r"limit \d+/8 · 429s 8$", line.strip()), line


@pytest.mark.slow
def test_a_sharded_run_adds_each_servers_counts_up(tmp_path):
    """Two servers behind one backend, two processes: each server's calls and 429s in
    run.json are those it got from both shards."""
    data = write_test_set(tmp_path / "data")
    model = "Qwen/Qwen3-VL-8B"
    reply = Reply('{"bbox_2d": [100, 200, 300, 400]}')
    with FakeProvider(limited_once(reply)).serve(model) as one, \
            FakeProvider(limited_once(reply)).serve(model) as two:
        unseen.run(data, ["direct"], [f"vllm:{model}@{one.url},{two.url}"], limit=8,
                   processes=2, concurrency=8, cache=False, progress=False,
                   out=tmp_path / "r")
        got = {}
        for fp in (one, two):
            bodies = [json.dumps(r.body, sort_keys=True) for r in fp.requests
                      if "completions" in r.path]
            got[fp.url] = (len(bodies), len(set(bodies)))  # calls, 429s (each first try)
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    counts = {c["url"].removesuffix("/v1"): c for c in desc["server_counts"]}
    assert {url: (c["calls"], c["concurrency"]["rate_limited"]) for url, c in counts.items()} \
        == got
    assert all(c["concurrency"]["processes"] == 2 for c in counts.values())


def test_shards_courses_add_up_on_one_clock():
    """A shard started at 1,000.0 s: 4 calls, 8 at 1 s, 4 at 3 s; another at 1,000.5 s:
    4, 2 at 1 s (1,001.5). Together: 4 from 0 s, 8 at 0.5, 12 at 1, 10 at 1.5, 6 at 3."""
    a = {"ceiling": 16, "limit": 4, "rate_limited": 1, "started_at": 1000.0,
         "history": [[0.0, 4], [1.0, 8], [3.0, 4]]}
    b = {"ceiling": 16, "limit": 2, "rate_limited": 2, "started_at": 1000.5,
         "history": [[0.0, 4], [1.0, 2]]}
    both = merge_courses([a, b])
    assert both["history"] == [[0.0, 4], [0.5, 8], [1.0, 12], [1.5, 10], [3.0, 6]]
    assert (both["ceiling"], both["limit"], both["rate_limited"]) == (32, 6, 3)
    assert both["started_at"] == 1000.0 and both["processes"] == 2


def test_a_model_loaded_in_this_process_keeps_one_process_by_default(tmp_path, monkeypatch):
    """A backend that runs its model in this process (``in_process``: hf, vllm-local) is
    never sharded by default, however large the run: each shard would load its own copy."""
    import os

    import unseen.api as api
    from unseen.backends.base import PROVIDERS, BaseBackend, provider
    from unseen.engine.types import Reply

    pids: list[int] = []

    class Loaded(BaseBackend):
        provider = "loaded"
        in_process = True

        async def complete(self, request):
            pids.append(os.getpid())
            return Reply(text='{"box": [1, 1, 5, 5]}')

    monkeypatch.setattr(api, "auto_processes", lambda trajectories, cores, concurrency: 3)
    provider("loaded", "loaded:MODEL")(
        lambda target, *, spec, **_: Loaded(target, box_format="pixel", spec=spec))
    try:
        data = write_test_set(tmp_path / "data")
        res = unseen.run(data, ["direct"], ["loaded:m"], out=tmp_path / "r", cache=False,
                         progress=False, processes=None, samples=2)
    finally:
        del PROVIDERS["loaded"]
    assert res.done == 48 and pids == [os.getpid()] * 48  # every call in this process


def test_a_sharded_run_starts_its_fork_server_before_building_anything(tmp_path, monkeypatch):
    """The fork server's imports then run on another core while this process builds its
    strategies (benchmarks/throughput.py); one process, or a dry run, starts none."""
    import unseen.api as api
    from unseen.evals.scenefunri import benchmark  # builds each strategy with registry.build

    events: list[str] = []
    warm, build = api.warm_up, benchmark.build
    monkeypatch.setattr(api, "warm_up", lambda: (events.append("fork server"), warm()))
    monkeypatch.setattr(benchmark, "build", lambda spec: (events.append("build"), build(spec))[1])
    data = write_test_set(tmp_path / "data")
    kw = dict(cache=False, progress=False)
    unseen.run(data, ["direct"], ["sim"], out=tmp_path / "two", processes=2, **kw)
    assert events[:2] == ["fork server", "build"]
    for more in ({"processes": 1}, {"processes": 2, "dry_run": True}):
        events.clear()
        unseen.run(data, ["direct"], ["sim"], out=tmp_path / "one", **more, **kw)
        assert "fork server" not in events and "build" in events


def test_a_refused_sharded_run_stops_the_fork_server_it_started(tmp_path):
    """Refused after the fork server started (an unknown strategy), the run stops it at
    once, not a second or two later when its imports are done; a new run starts another."""
    import os
    from multiprocessing import forkserver

    from unseen.engine.errors import UnseenError

    data = write_test_set(tmp_path / "data")
    with pytest.raises(UnseenError, match="unknown strategy"):
        unseen.run(data, ["no-such"], ["sim"], out=tmp_path / "r", processes=2, cache=False,
                   progress=False)
    server = forkserver._forkserver
    assert server._forkserver_pid is None  # stopped and reaped
    assert not os.path.exists(server._forkserver_address or "/no/such/address")
    done = unseen.run(data, ["direct"], ["sim"], out=tmp_path / "r", processes=2, cache=False,
                      progress=False)
    assert done.done == 24
