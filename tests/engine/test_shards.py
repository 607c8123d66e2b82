"""Sharding a run over processes gives the same journal as one process."""

import json

import pytest

import unseen
from unseen.evals.scenefunri.sample import write_test_set


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
