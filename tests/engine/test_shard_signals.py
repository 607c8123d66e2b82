"""Shards end quietly when their parent is gone (issue 25): a real ``unseen run --processes
3`` in its own session, then a SIGKILL of the parent or a Ctrl-C to the whole group soon
after the start (the fork server still importing). Every wait is a bounded loop on what
the processes do; nothing is timed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")


def _session(sid: int) -> dict[int, str]:
    """The live processes of session ``sid``: pid -> command line (zombies left out)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getsid(int(name)) != sid:
                continue
            stat = Path(f"/proc/{name}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            out[int(name)] = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):  # gone meanwhile
            continue
    return out


def _ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT now (``SigIgn`` in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(int(line.split()[1], 16) for line in status.splitlines()
                if line.startswith("SigIgn:"))
    return bool(mask >> (signal.SIGINT - 1) & 1)


def _until(ready, what: str, tries: int = 1200) -> None:
    for _ in range(tries):  # at most a minute
        if ready():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("how", ["SIGKILL of the parent", "Ctrl-C while the fork server imports"])
def test_shards_end_quietly_when_their_parent_goes(tmp_path, how):
    out = tmp_path / "r"
    argv = [sys.executable, "-c", "from unseen.cli import main; main()", "run", "-s", "direct",
            "-b", "sim:default,delay_s=0.2", "--processes", "3", "--samples", "20", "--no-cache",
            "-q", "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, cwd=tmp_path)
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        if how.startswith("SIGKILL"):
            journal = out / "trajectories.jsonl"
            # the parent and two shards running (with the fork server and resource tracker),
            # trajectories coming back
            _until(lambda: len(_session(proc.pid)) >= 5 and journal.is_file()
                   and journal.stat().st_size > 0, "two shards at work")
            os.kill(proc.pid, signal.SIGKILL)
        else:
            # the parent ignores SIGINT for the moment it starts the fork server (which so
            # starts ignoring it): Ctrl-C once it listens again, the fork server importing
            _until(lambda: any("forkserver" in c for c in _session(proc.pid).values())
                   and not _ignores_sigint(proc.pid), "the fork server started")
            os.killpg(proc.pid, signal.SIGINT)
        reader.join(60)  # every process of the run has closed stderr: all have ended
        assert not reader.is_alive(), _session(proc.pid)
        code = proc.wait(10)
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    text = err[0].decode(errors="replace")
    assert "Traceback" not in text and "Error" not in text, text
    _until(lambda: not _session(proc.pid), "every process of the run gone")  # exiting ones
    if how.startswith("SIGKILL"):
        assert code == -signal.SIGKILL and text == ""  # nobody left to say anything
    else:
        assert code == 130 and "interrupted" in text
