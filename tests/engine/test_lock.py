"""One process at a time writes a run directory (``engine/lock.py``): a second run is refused
with one line naming the holder, a lock left by a killed process is taken over; the same for
``run``, ``director run`` and ``director code``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import run_tiny_study, tiny_design

from unseen.api import run_async
from unseen.engine.lock import LOCK_FILE, RunDirBusy, hold

SLOW_SIM = "sim:default,delay_s=0.1"
DESIGN = tiny_design("tiny-lock")
HOLDER = ("import sys; from unseen.engine.lock import hold\n"
          "with hold(sys.argv[1], 'holder'):\n"
          "    print('held', flush=True); sys.stdin.read()\n")


def env(tmp_path: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
            "XDG_CACHE_HOME": str(tmp_path / "xdg"), "PYTHONUNBUFFERED": "1"}


def holder(folder: Path) -> subprocess.Popen:
    """A process that holds ``folder`` until its stdin closes (or it is killed)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def assert_refused(code: int, err: str, pid: int) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith("error:") and f"pid {pid}" in lines[0], lines[0]


@pytest.fixture(scope="module")
def study(tmp_path_factory, director_scenes) -> Path:
    _, run_dir = run_tiny_study(tmp_path_factory.mktemp("lock"), DESIGN, ["sim:default"],
                                director_scenes, cache=False)
    return run_dir


@pytest.mark.slow
def test_twin_runs_on_one_directory_the_second_is_refused_and_no_key_is_written_twice(
        tmp_path, sample_data, run_main):
    """The issue's reproduction: two `unseen run` on one --out at once both ran, writing
    every key twice. The second starts in-process once the first has journalled a line."""
    run_dir = tmp_path / "twin"
    argv = ["run", "--data", str(sample_data), "-s", "direct", "-b", "sim:default,delay_s=0.3",
            "--concurrency", "1", "--limit", "12", "--out", str(run_dir), "--no-cache",
            "--quiet"]
    first = subprocess.Popen([sys.executable, "-m", "unseen.cli", *argv], env=env(tmp_path),
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        journal = run_dir / "trajectories.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None and not (
                journal.exists() and journal.read_bytes().count(b"\n") >= 1):
            time.sleep(0.01)
        assert first.poll() is None, "the first run ended before the second could start"
        code, _, err = run_main(argv)
        assert_refused(code, err, first.pid)
    finally:
        _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert len(keys) == 12 == len(set(keys))


def test_run_on_a_held_directory_is_refused_then_a_killed_holder_is_taken_over(
        tmp_path, sample_data, run_main):
    run_dir = tmp_path / "held"
    proc = holder(run_dir)
    argv = ["run", "--data", str(sample_data), "-s", "direct", "--limit", "2", "--out",
            str(run_dir), "--no-cache", "-q"]
    try:
        code, _, err = run_main(argv)
        assert_refused(code, err, proc.pid)
        assert not (run_dir / "trajectories.jsonl").exists()  # nothing ran, nothing written
        assert not (run_dir / "run.json").exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    stale = json.loads((run_dir / LOCK_FILE).read_text())
    assert stale["pid"] == proc.pid  # the killed holder's record is still there
    code, _, err = run_main(argv)
    assert code == 0, err
    assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_director_run_on_a_held_directory_is_refused(tmp_path, director_scenes, run_main):
    design = tmp_path / "tiny.toml"
    design.write_text(DESIGN, encoding="utf-8")
    run_dir = tmp_path / "study"
    proc = holder(run_dir)
    try:
        code, _, err = run_main(["director", "run", str(design), "--out", str(run_dir),
                                 "--scenes", str(director_scenes), "--no-cache", "-q"])
        assert_refused(code, err, proc.pid)
        assert not (run_dir / "study.json").exists()
    finally:
        proc.communicate("", timeout=30)
    code, _, err = run_main(["director", "run", str(design), "--out", str(run_dir),
                             "--scenes", str(director_scenes), "--no-cache", "-q"])
    assert code == 0, err


def test_director_code_on_a_held_pass_is_refused(study, run_main):
    from unseen.evals.director.coding.items import pass_dir

    folder = pass_dir(study, "main")
    proc = holder(folder)
    try:
        code, _, err = run_main(["director", "code", str(study), "--no-cache", "-q"])
        assert_refused(code, err, proc.pid)
        assert not (folder / "trajectories.jsonl").exists()
    finally:
        proc.communicate("", timeout=30)
    code, _, err = run_main(["director", "code", str(study), "--no-cache", "-q"])
    assert code == 0, err


def test_two_tasks_of_one_process_on_one_directory_one_is_refused(tmp_path, sample_data):
    run_dir = tmp_path / "tasks"

    async def both():
        return await asyncio.gather(
            *(run_async(sample_data, ["direct"], [SLOW_SIM], limit=2, out=run_dir,
                        cache=False, progress=False) for _ in range(2)),
            return_exceptions=True)

    results = asyncio.run(both())
    refused = [r for r in results if isinstance(r, RunDirBusy)]
    assert len(refused) == 1, results
    done = next(r for r in results if not isinstance(r, BaseException))
    assert done.done == 2


def test_the_lock_is_reentrant_in_its_own_context_only(tmp_path):
    with hold(tmp_path / "r", "outer"), hold(tmp_path / "r", "inner"):
        info = json.loads((tmp_path / "r" / LOCK_FILE).read_text())
        assert info["command"] == "outer" and info["pid"] == os.getpid()
    with hold(tmp_path / "r"):  # released: taken again
        pass


def test_without_file_locks_a_dead_holder_is_taken_over_and_a_live_one_refuses(tmp_path,
                                                                              monkeypatch):
    """A file system without flock (some network mounts): the pid in the lock file decides."""
    import errno
    import fcntl
    import socket

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    run_dir = tmp_path / "nfs"
    run_dir.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": host}))
    with hold(run_dir):  # the holder is dead: taken over
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": os.getppid(), "host": host}))
    with pytest.raises(RunDirBusy, match=f"pid {os.getppid()}"), hold(run_dir):
        pass


def test_a_refused_run_leaves_no_directory_behind(tmp_path):
    with pytest.raises(ValueError), hold(tmp_path / "new"):
        raise ValueError("refused before anything was written")
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()
    with pytest.raises(ValueError), hold(tmp_path / "old"):
        raise ValueError("refused")
    assert (tmp_path / "old").is_dir()  # not ours to remove


def test_running_tells_a_held_lock_from_a_stale_one(tmp_path):
    from unseen.engine.lock import running

    assert not running(tmp_path)  # no lock file: no run
    with hold(tmp_path, "test"):
        assert running(tmp_path)  # held (by this process, on another descriptor)
    assert not running(tmp_path)  # released: the file stays, the run is over
    (tmp_path / LOCK_FILE).write_text(json.dumps(
        {"pid": 2**22 + 12345, "host": socket.gethostname()}) + "\n")
    assert not running(tmp_path)  # a dead pid's lock is no run
