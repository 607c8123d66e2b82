"""Sharding a run over processes gives the same journal as one process."""

import json

import unseen
from unseen.evals.scenefunri.sample import write_test_set


def records(run_dir):
    return {r["key"]: r for r in map(json.loads, (run_dir / "trajectories.jsonl").open())}


def test_two_processes_match_one(tmp_path):
    data = write_test_set(tmp_path / "data")
    kw = dict(samples=2, cache=False, progress=False)
    one = unseen.run(data, ["direct"], ["sim", "baseline:prior"], out=tmp_path / "one", **kw)
    two = unseen.run(data, ["direct"], ["sim", "baseline:prior"], out=tmp_path / "two",
                     processes=2, **kw)
    assert one.done == two.done == 96 and two.answered == one.answered
    a, b = records(tmp_path / "one"), records(tmp_path / "two")
    assert a.keys() == b.keys() and len(b) == 96  # every key once, none lost or doubled
    for key in a:
        assert a[key]["prediction"] == b[key]["prediction"]
        assert a[key]["metrics"] == b[key]["metrics"]
    # resuming a finished sharded run starts no work
    again = unseen.run(data, ["direct"], ["sim", "baseline:prior"], out=tmp_path / "two",
                       processes=2, **kw)
    assert again.done == 0 and again.skipped == 96
