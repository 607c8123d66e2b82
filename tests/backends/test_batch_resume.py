"""``--batch`` runs killed and resumed, and batch replies against a run without (issue 24,
section 2), against the fake batch servers of tests/fake_batches.py.

A run killed between submitting and reading results (a real ``unseen run --batch`` process
given SIGKILL; an in-process run cancelled for Gemini, SPoE and a Director study, between
their batches) resumes: no request is sent twice and every trajectory is journaled once.
Gemini's and a Director study's batch replies match those of a run without ``--batch``.

The fake's batches are told when to finish (``fp.batch_polls``, read when a batch is made,
and ``in_progress_polls`` of a stored batch): no test races a clock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_helpers import FAST, answer, batches_made, finish_all, ledger, sent, stable
from helpers import read_journal, run_tiny_study, tiny_design

import unseen
from unseen import run_study_async
from unseen.api import run_async
from unseen.evals.director.study.design import load_design


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-batch")


def hold_later_batches(fp):
    """``answer``, and once the first batch's lines have run, every batch made after stays
    running (until ``finish_all``)."""
    def behaviour(rec):
        fp.batch_polls = 10_000
        return answer(rec)
    return behaviour


def once_each(fp) -> None:
    """No request reached the provider twice (a batched request's id is its custom_id)."""
    ids = [r.custom_id for r in fp.requests]
    assert None not in ids and len(ids) == len(set(ids)), ids


def journaled_once(run_dir: Path, n: int) -> list[dict]:
    rows = read_journal(run_dir)
    assert len(rows) == n and len({r["key"] for r in rows}) == n
    assert all(r["status"] == "answered" for r in rows), [r["error"] for r in rows]
    return rows


async def cancel_after(make, run_dir: Path, batches: int) -> None:
    """Start ``make()`` and cancel it once its ledger records ``batches`` batches sent
    (bounded: 30 s); a cancelled run leaves what a killed one does, with its batches sent."""
    task = asyncio.ensure_future(make())
    for _ in range(1500):
        if sent(run_dir) >= batches or task.done():
            break
        await asyncio.sleep(0.02)
    assert sent(run_dir) >= batches, ledger(run_dir)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def kill_and_resume(fp, run_dir: Path, make, *, kill_at: int, batches: int,
                    trajectories: int, steps: int) -> None:
    """Run ``make()``, kill it once ``kill_at`` batches are sent (no trajectory journaled
    yet), let every batch finish and run ``make()`` again to its end: ``batches`` batches
    made in all, no request twice, each of the ``trajectories`` journaled once with its
    ``steps``."""
    asyncio.run(cancel_after(make, run_dir, kill_at))
    assert len(batches_made(fp)) == kill_at and not read_journal(run_dir)
    finish_all(fp)
    fp.default, fp.batch_polls = answer, 0
    asyncio.run(make())
    assert len(batches_made(fp)) == batches
    once_each(fp)
    rows = journaled_once(run_dir, trajectories)
    assert all(len(r["steps"]) == steps for r in rows)


def test_a_sigkilled_batch_process_resumes_without_sending_a_request_twice(fp, sample_data,
                                                                           tmp_path):
    fp.default = answer
    fp.batch_polls = 10_000  # the batch runs until the process is gone
    out = tmp_path / "r"
    argv = [str(Path(sys.executable).with_name("unseen")), "run", "--data", str(sample_data),
            "-s", "direct", "-s", "spoe:T=2", "-b", "openai:gpt-4o", "--base-url",
            fp.openai_base_url, "--batch", "--batch-window", "0.2", "--batch-poll", "0.1",
            "--limit", "3", "--no-cache", "--out", str(out)]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-batch"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # start-up imports included; bounded
        while sent(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sent(out) == 1, proc.stderr.read().decode() if proc.poll() is not None else ""
        os.kill(proc.pid, signal.SIGKILL)  # between the submit and the results
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert len(batches_made(fp)) == 1 and fp.requests == [] and not read_journal(out)
    finish_all(fp)
    fp.batch_polls = 0
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # the killed run's batch followed (direct and spoe's first steps), then spoe's second
    assert len(batches_made(fp)) == 2
    once_each(fp)
    journaled_once(out, 6)
    assert [e["event"] for e in ledger(out)] == ["intent", "submitted", "ended", "intent",
                                                 "submitted", "ended"]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_spoe_run_killed_between_its_batches_resumes(fp, sample_data, tmp_path, provider):
    """Killed while step 2's batch runs: the resume reads step 1's finished batch again,
    follows step 2's and sends step 3's."""
    fp.default = hold_later_batches(fp)
    fp.batch_polls = 0
    spec, url = (("gemini:gemini-2.5-flash", fp.gemini_base_url) if provider == "gemini"
                 else ("openai:gpt-4o", fp.openai_base_url))
    out = tmp_path / "r"

    def run():
        return run_async(sample_data, ["spoe:T=3"], [spec], base_url=url, out=out, limit=3,
                         batch=True, **FAST)

    # steps 1 and 2 not sent again: one batch more, step 3's
    kill_and_resume(fp, out, run, kill_at=2, batches=3, trajectories=3, steps=3)


def test_a_gemini_run_killed_between_submit_and_results_resumes(fp, sample_data, tmp_path):
    fp.default = answer
    fp.batch_polls = 10_000
    out = tmp_path / "r"

    def run():
        return run_async(sample_data, ["direct"], ["gemini:gemini-2.5-flash"],
                         base_url=fp.gemini_base_url, out=out, limit=4, batch=True, **FAST)

    kill_and_resume(fp, out, run, kill_at=1, batches=1, trajectories=4, steps=1)


def test_a_director_study_killed_between_its_two_turns_resumes(fp, tmp_path, director_scenes):
    fp.default = hold_later_batches(fp)
    fp.batch_polls = 0
    design_file = tmp_path / "tiny.toml"
    design_file.write_text(tiny_design("two-turn", batches={"b1": ["mean/twoturn"]}, seed=5,
                                       n=3), encoding="utf-8")
    out = tmp_path / "run"
    backend = [f"openai:gpt-5.5@{fp.openai_base_url}"]
    kw = dict(scenes=director_scenes, progress=False, batch=True, batch_window_s=0.2,
              batch_poll_s=0.02, cache=False, backoff_base_s=0.01)

    def run():
        return run_study_async(load_design(design_file), backend, out, **kw)

    # killed once the second turns' batch is sent: both followed, nothing sent again
    kill_and_resume(fp, out, run, kill_at=2, batches=2, trajectories=3, steps=2)


def test_gemini_batch_replies_match_a_run_without(fp, sample_data, tmp_path):
    fp.default = answer
    fp.batch_polls = 1
    kw = dict(base_url=fp.gemini_base_url, limit=3, **FAST)
    res = unseen.run(sample_data, ["direct", "spoe:T=2"], ["gemini:gemini-2.5-flash"],
                     out=tmp_path / "b", batch=True, **kw)
    assert res.answered == 6 and len(batches_made(fp)) == 2
    assert all(r.batch_id for r in fp.requests)
    batched = stable(read_journal(tmp_path / "b"))
    fp.reset(answer)
    unseen.run(sample_data, ["direct", "spoe:T=2"], ["gemini:gemini-2.5-flash"],
               out=tmp_path / "s", **kw)
    assert fp.batch_calls == [] and stable(read_journal(tmp_path / "s")) == batched


def test_director_batch_replies_match_a_run_without(fp, tmp_path, director_scenes):
    fp.default = answer
    fp.batch_polls = 1
    design = tiny_design("two-turn", batches={"b1": ["mean/twoturn", "move"]}, seed=5, n=3)
    backend = [f"openai:gpt-5.5@{fp.openai_base_url}"]
    (tmp_path / "b").mkdir()
    _, run_dir = run_tiny_study(tmp_path / "b", design, backend, director_scenes, batch=True,
                                batch_window_s=0.2, batch_poll_s=0.02, cache=False)
    batched = read_journal(run_dir)
    assert len(batched) == 6 and all(r["status"] == "answered" for r in batched)
    assert len(batches_made(fp)) == 2  # every first turn (and move's one), every second
    fp.reset(answer)
    (tmp_path / "s").mkdir()
    _, plain = run_tiny_study(tmp_path / "s", design, backend, director_scenes, cache=False)
    assert fp.batch_calls == [] and stable(read_journal(plain)) == stable(batched)
