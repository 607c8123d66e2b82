"""Exit codes of the commands that run models (``run``, ``director run``, ``director code``): a
call in which every new trajectory failed exits 1 with a count by error kind; one with some
failures says how many in its last line and exits 0, or 1 with ``--strict``."""

from __future__ import annotations

import itertools
import threading

import pytest
from fake_providers import Error, Reply
from helpers import run_tiny_study, tiny_design

KEY = "sk-test-exit-codes-0123456789"
DESIGN = tiny_design("tiny-exit", seed=2)
QUOTA = Error(429, body={"error": {"message": "You exceeded your current quota, please check "
                                   "your plan and billing details.",
                                   "type": "insufficient_quota", "code": "insufficient_quota"}})


def last_line(text: str) -> str:
    return [line for line in text.splitlines() if line.strip()][-1]


def every_other_fails():
    """A behaviour: the first request fails with a 401, the second succeeds, and so on."""
    counter, lock = itertools.count(), threading.Lock()

    def behave(rec):
        with lock:
            n = next(counter)
        return Error(401) if n % 2 == 0 else Reply('{"box": [100, 100, 400, 400]}')

    return behave


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def run_argv(fp, sample_data, out, *extra):
    return ["run", "--data", str(sample_data), "-s", "direct", "-b", "openai:fake-model,box_format=norm1000",
            "--base-url", fp.openai_base_url, "--limit", "2", "--out", str(out), "--no-cache",
            "--concurrency", "1", *extra]


@pytest.mark.parametrize("failure, kind", [(Error(401), "client 2"), (QUOTA, "quota 2")])
def test_a_run_in_which_every_call_failed_exits_1_with_counts(tmp_path, fp, keyed, sample_data,
                                                                run_main, failure, kind):
    """The issue: a run in which every call failed (401, quota) exited 0."""
    fp.reset(failure)
    code, out, err = run_main(run_argv(fp, sample_data, tmp_path / "r"))
    assert code == 1, (out, err)
    line = last_line(err)
    assert line.startswith("error: all 2 new trajectories failed: ") and kind in line
    assert "HTTP 4" in line and "rerun" in line
    code, out, err = run_main(run_argv(fp, sample_data, tmp_path / "r", "--quiet"))
    assert code == 1 and out.strip() == str(tmp_path / "r") and kind in last_line(err)


def test_some_failures_are_counted_in_the_last_line_and_strict_makes_them_fatal(
        tmp_path, fp, keyed, sample_data, run_main):
    fp.reset(every_other_fails())
    code, out, err = run_main(run_argv(fp, sample_data, tmp_path / "r"))
    assert code == 0, err
    assert last_line(out) == ("1 of 2 new trajectories failed: client 1; rerun the same command "
                              "to retry them")
    fp.reset(every_other_fails())  # the failed one is retried, and fails again
    code, out, err = run_main(run_argv(fp, sample_data, tmp_path / "r2", "--strict", "-q"))
    assert code == 1 and out.strip() == str(tmp_path / "r2")
    assert last_line(err).startswith("1 of 2 new trajectories failed: client 1")
    fp.reset(Reply('{"box": [100, 100, 400, 400]}'))
    code, out, err = run_main(run_argv(fp, sample_data, tmp_path / "r3", "--strict"))
    assert code == 0 and "failed" not in out + err


def test_a_director_run_whose_every_call_failed_exits_1(tmp_path, fp, keyed, director_scenes,
                                                       run_main):
    design = tmp_path / "d.toml"
    design.write_text(DESIGN, encoding="utf-8")
    fp.reset(Error(401))
    argv = ["director", "run", str(design), "-b", "openai:fake-model", "--base-url",
            fp.openai_base_url, "--scenes", str(director_scenes), "--out", str(tmp_path / "s"),
            "--no-cache"]
    code, out, err = run_main(argv)
    assert code == 1 and last_line(err).startswith("error: all 2 new calls failed: client 2")
    fp.reset(every_other_fails())
    code, out, err = run_main([*argv, "--strict"])  # the resume retries both: one fails
    assert code == 1 and last_line(out).startswith("1 of 2 new calls failed: client 1")


def test_director_code_whose_every_batch_failed_exits_1(tmp_path, fp, keyed, director_scenes,
                                                       run_main):
    _, study = run_tiny_study(tmp_path, DESIGN, ["sim:director-strong,dir_answer_rate=1.0"],
                              director_scenes, cache=False)
    fp.reset(Error(401))
    code, out, err = run_main(["director", "code", str(study), "--coder", "openai:fake-model",
                               "--base-url", fp.openai_base_url, "--no-cache", "--tests", "2"])
    assert code == 1, (out, err)
    assert last_line(err).startswith("error: all 1 new batches failed: client 1")
