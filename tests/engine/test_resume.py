"""Resuming runs: a killed run, a torn journal, a finished run, retryable failures, other data.

The journal (``trajectories.jsonl``) is append-only: a rerun into the same run directory
skips finished keys, cuts a torn last line, retries provider failures, and the latest record
of a key is the one every report reads.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from unseen.api import run as api_run
from unseen.evals.scenefunri.data.sample import TEST_SET_SIZE, write_test_set

SLOW_SIM = "sim:default,delay_s=0.1"
N = TEST_SET_SIZE  # 24 instances, one strategy, one backend, one sample


def journal(run_dir: Path) -> Path:
    return run_dir / "trajectories.jsonl"


def records(run_dir: Path) -> list[dict]:
    """Every line of the journal, each of which must be whole JSON."""
    text = journal(run_dir).read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def outcome(recs: list[dict]) -> dict[str, tuple]:
    """What a trajectory produced, per instance (the latest record of each key)."""
    latest = {r["key"]: r for r in recs}
    return {r["instance_id"]: (r["status"], r["prediction"], r["metrics"]) for r in latest.values()}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("OPENAI_API_KEY", None)
    e["PYTHONUNBUFFERED"] = "1"
    return e


@pytest.fixture(scope="module")
def finished(tmp_path_factory, cache_dir, sample_data) -> Path:
    """A finished default run (sample set, direct, sim), copied by each test that edits it."""
    out = tmp_path_factory.mktemp("finished") / "R"
    result = api_run(sample_data, out=out, cache_dir=cache_dir, progress=False)
    assert result.done == N and result.errors == 0
    return out


@pytest.fixture
def run_copy(finished, tmp_path) -> Path:
    dst = tmp_path / "R"
    shutil.copytree(finished, dst)
    return dst


def resume(run_main, run_dir: Path, cache_dir: Path, *extra: str) -> str:
    """``unseen run`` into ``run_dir`` again, in-process, on the data its run.json names;
    must succeed: its stdout."""
    data = json.loads((run_dir / "run.json").read_text())["data"]
    code, out, err = run_main(["run", "--data", data, "-s", "direct", "--out", str(run_dir),
                               "--cache-dir", str(cache_dir), *extra])
    assert code == 0, err
    return out


# --- Ctrl-C ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_exits_130_with_a_resume_hint_and_leaves_a_resumable_run(tmp_path, cache_dir,
                                                                       sample_data):
    run_dir = tmp_path / "interrupted"
    cmd = [sys.executable, "-m", "unseen.cli", "run", "--data", str(sample_data), "-s", "direct", "--backend", SLOW_SIM, "--concurrency", "2",
           "--out", str(run_dir), "--cache-dir", str(cache_dir), "--quiet"]
    proc = subprocess.Popen(cmd, env=env(), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    path = journal(run_dir)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and f"--out {run_dir}" in err
    n = len(records(run_dir))
    assert 3 <= n < N
    done = subprocess.run(cmd, env=env(), cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    keys = [r["key"] for r in records(run_dir)]
    assert len(keys) == N == len(set(keys))


# --- a run killed with SIGKILL ------------------------------------------------------------


@pytest.mark.slow
def test_sigkill_midway_then_resume_matches_uninterrupted(tmp_path, cache_dir, sample_data):
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "unseen.cli", "run", "--data", str(sample_data), "-s", "direct", "--backend", SLOW_SIM, "--concurrency", "2",
           "--out", str(run_dir), "--cache-dir", str(cache_dir), "--quiet"]
    proc = subprocess.Popen(cmd, env=env(), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    path = journal(run_dir)
    deadline = time.monotonic() + 60
    lines = 0
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            lines = path.read_bytes().count(b"\n") if path.exists() else 0
            if lines >= 5:
                break
            time.sleep(0.005)
        assert proc.poll() is None, f"run ended before it could be killed ({lines} lines)"
        assert lines >= 5, "the run wrote too few lines before the deadline"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None and lines < 5:
            proc.kill()
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    before = path.read_bytes()
    whole = before[: before.rfind(b"\n") + 1]  # a torn last line, if any, is cut on resume
    n_killed = whole.count(b"\n")
    assert 5 <= n_killed < N, "the kill must land midway"
    killed_keys = [json.loads(line)["key"] for line in whole.splitlines()]
    assert len(set(killed_keys)) == n_killed

    done = subprocess.run(cmd, env=env(), cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    after = path.read_bytes()
    assert after.startswith(whole), "resume must only append"
    recs = records(run_dir)
    keys = [r["key"] for r in recs]
    assert len(recs) == N and len(set(keys)) == N, "exactly one line per key"
    assert keys[:n_killed] == killed_keys

    # the same command, uninterrupted, into another directory
    ref_dir = tmp_path / "uninterrupted"
    api_run(sample_data, backends=[SLOW_SIM], out=ref_dir, cache_dir=cache_dir, concurrency=8, progress=False)
    ref = records(ref_dir)
    assert {r["key"] for r in ref} == set(keys)
    assert outcome(recs) == outcome(ref)
    assert json.loads((run_dir / "run.json").read_text())["dataset_fingerprint"] == json.loads(
        (ref_dir / "run.json").read_text())["dataset_fingerprint"]


# --- a torn last line ---------------------------------------------------------------------


def test_torn_last_line_of_finished_run_is_cut(run_copy, cache_dir, run_main):
    path = journal(run_copy)
    original = path.read_bytes()
    first = original.splitlines()[0]
    with open(path, "ab") as fh:
        fh.write(first[: len(first) // 2])  # half a record, no newline
    resume(run_main, run_copy, cache_dir, "--quiet")
    assert path.read_bytes() == original


def test_torn_record_of_unfinished_key_is_rerun_once(run_copy, finished, cache_dir, run_main):
    path = journal(run_copy)
    lines = path.read_bytes().splitlines(keepends=True)
    last = lines[-1]
    path.write_bytes(b"".join(lines[:-1]) + last[: len(last) // 2])  # the writer died mid-line
    resume(run_main, run_copy, cache_dir, "--quiet")
    recs = records(run_copy)
    assert len(recs) == N and len({r["key"] for r in recs}) == N
    assert recs[-1]["key"] == json.loads(last)["key"]
    assert outcome(recs) == outcome(records(finished))


# --- finished runs and retryable failures ---------------------------------------------------


def test_rerunning_a_finished_run_adds_nothing(run_copy, cache_dir, run_main):
    path = journal(run_copy)
    original = path.read_bytes()
    out = resume(run_main, run_copy, cache_dir)
    assert path.read_bytes() == original
    assert f"resumed: {N} trajectories were already done" in out
    assert "0 new trajectories" in out


def _compare_json(run_main, run_dir: Path) -> list[dict]:
    code, out, err = run_main(["compare", str(run_dir), "--format", "json"])
    assert code == 0, err
    return json.loads(out)


def test_retryable_failure_is_retried_and_latest_record_wins(run_copy, finished, cache_dir,
                                                             run_main):
    path = journal(run_copy)
    recs = records(run_copy)
    failed, parse_failed = recs[3], recs[7]
    # a trajectory whose backend gave up with 503s: retried on resume
    edited = dict(failed, status="unanswered", prediction=None,
                  error={"kind": "server", "message": "HTTP 503 after 6 attempts",
                         "status": 503, "attempts": 6},
                  metrics={"cacc75": 0.0, "cacc50": 0.0, "iou": 0.0, "dist": 1.0})
    # a reply the model gave but that could not be parsed is a finished answer: not retried
    parsed = dict(parse_failed, status="unanswered", prediction=None,
                  error={"kind": "parse", "message": "no box in the reply", "attempts": 1})
    recs[3], recs[7] = edited, parsed
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")

    [row] = _compare_json(run_main, run_copy)
    assert row["n"] == N and row["answered"] == pytest.approx(100 * (N - 2) / N)

    resume(run_main, run_copy, cache_dir, "--quiet")
    after = records(run_copy)
    assert len(after) == N + 1, "only the server failure is retried"
    assert after[:N] == recs
    retried = after[-1]
    assert retried["key"] == failed["key"] and retried["status"] == "answered"
    assert retried["error"] is None
    assert retried["prediction"] == failed["prediction"]
    assert retried["metrics"] == failed["metrics"]

    # compare reads the latest record of each key: the retry, not the failure
    [row] = _compare_json(run_main, run_copy)
    [ref] = _compare_json(run_main, finished)
    assert row["n"] == N
    assert row["answered"] == pytest.approx(100 * (N - 1) / N)  # the parse failure stays
    latest = {r["key"]: r for r in after}
    assert latest[failed["key"]] is retried
    expect_dist = 100 * sum(r["metrics"]["dist"] for r in latest.values()) / N
    assert row["dist"] == pytest.approx(expect_dist)
    assert row["miou"] == pytest.approx(ref["miou"])  # the edited parse record kept its metrics

    # and a second resume has nothing left to do
    resume(run_main, run_copy, cache_dir, "--quiet")
    assert len(records(run_copy)) == N + 1


# --- other data -----------------------------------------------------------------------------


def test_resume_into_run_dir_of_other_data_fails(run_copy, tmp_path, run_main):
    other = write_test_set(tmp_path / "other")
    inst = other / "instances.jsonl"
    inst.write_text("".join(inst.read_text().splitlines(keepends=True)[:5]))  # a different set
    journal_before = journal(run_copy).read_bytes()
    config_before = (run_copy / "run.json").read_bytes()

    code, out, err = run_main(["run", "-s", "direct", "--data", str(other), "--out", str(run_copy),
                               "--cache-dir", str(tmp_path / "c2"), "--quiet"])
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "other data" in lines[0] and "--out" in lines[0]
    assert "Traceback" not in err + out
    assert journal(run_copy).read_bytes() == journal_before
    assert (run_copy / "run.json").read_bytes() == config_before
