"""A run's work items are made as the workers ask for them: a huge run (samples in the
hundreds of thousands) makes a handful before its first trajectory is journaled, instead of
every one of them first (the Director's 1,000,000 calls took 64 s and 467 MB before the first
journal line). Counted, not timed: the journal stops the run at its first record, and the
test counts the trajectory keys made by then."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import tiny_design

from unseen import run_study
from unseen.api import run
from unseen.engine import journal, runner
from unseen.evals.director.study import runner as director_runner
from unseen.evals.director.study.design import load_design

CALLS = 100_000  # planned by each run below


class FirstRecord(Exception):
    """Raised by the journal once it has written one record."""


@pytest.fixture
def made(monkeypatch) -> list[int]:
    """How many trajectory keys (one per work item) the planners made: [runner, director];
    the journal stops the run after its first record."""
    counts = [0, 0]

    def counting(slot: int, real: Any) -> Any:
        def key(*args: Any) -> str:
            counts[slot] += 1
            return real(*args)
        return key

    monkeypatch.setattr(runner, "trajectory_key", counting(0, runner.trajectory_key))
    monkeypatch.setattr(director_runner, "trajectory_key",
                        counting(1, director_runner.trajectory_key))
    real_append = journal.JournalWriter.append

    def append(self: Any, traj: Any) -> None:
        real_append(self, traj)
        raise FirstRecord

    monkeypatch.setattr(journal.JournalWriter, "append", append)
    return counts


def test_a_huge_run_journals_its_first_trajectory_having_made_a_handful(
        made, sample_data, tmp_path):
    with pytest.raises(FirstRecord):
        run(sample_data, ["direct"], ["sim"], samples=CALLS // 2, limit=2, processes=1,
            out=tmp_path / "r", cache=False, progress=False)
    assert 0 < made[0] < 200, made  # the workers' first items, not 100,000


def test_a_huge_director_study_journals_its_first_call_having_made_a_handful(
        made, director_scenes, tmp_path):
    design = tmp_path / "d.toml"
    design.write_text(tiny_design(samples=CALLS // 2), encoding="utf-8")  # 2 scenes, 1 condition
    with pytest.raises(FirstRecord):
        run_study(load_design(design), ["sim"], tmp_path / "r", scenes=director_scenes,
                  cache=False, progress=False)
    assert 0 < made[1] < 200, made


def test_the_shards_share_the_plan_without_overlap(sample_data, tmp_path):
    """Each shard makes its own positions of the plan: together every item once, those
    done left out."""
    from unseen.backends import connect
    from unseen.engine.types import RunConfig
    from unseen.evals.scenefunri import load_dataset
    from unseen.strategies import build

    instances = load_dataset(sample_data).instances[:3]
    plan = runner.Runner(instances, [build("direct"), build("cot")],
                         [connect("sim"), connect("baseline:prior")], tmp_path,
                         RunConfig.model_construct(), samples=2, progress=False)
    every = [it.key for it in plan.nested(set())]
    done = set(every[::5])
    shares = [[it.key for it in plan.nested(done, j, 3)] for j in range(3)]
    assert len(every) == 24 == len(set(every))
    assert sorted(k for share in shares for k in share) == sorted(set(every) - done)
    # a resume after shard 2 of 3 died: what it left spreads over all three again
    dead = {it.key for it in plan.nested(set(), 2, 3)}
    resumed = [len(list(plan.nested(set(every) - dead, j, 3))) for j in range(3)]
    assert resumed == [3, 3, 2]
