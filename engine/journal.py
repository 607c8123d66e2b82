"""The run journal: ``trajectories.jsonl``, appended by one writer thread, read as a stream.

Lines are written whole, flushed and fsynced (group commit: one fsync per batch the writer
finds waiting), so a run killed at any point leaves at most one torn last line, which the
next open cuts off. Readers never load the whole file: they stream it line by line.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .types import RETRYABLE, Trajectory

JOURNAL = "trajectories.jsonl"
RUN_FILE = "run.json"

# Failures of the provider or the network are retried when a run resumes; a reply the
# model gave but that could not be used (``parse``) is a finished answer.
RESUMABLE_ERRORS = RETRYABLE | {"quota", "client", "config", "internal"}


def repair(path: Path) -> int:
    """Cut a torn last line left by a killed writer; returns the bytes removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return 0
        # find the last newline; everything after it is a partial record
        pos, chunk = size, 65536
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            data = fh.read(pos - start)
            idx = data.rfind(b"\n")
            if idx >= 0:
                cut = start + idx + 1
                break
            pos = start
        else:
            cut = 0
        fh.truncate(cut)
        return size - cut


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every well-formed record, in file order; a torn line is skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def latest(path: Path) -> dict[str, dict[str, Any]]:
    """The last record of each key (a resumed run may have retried a failed key)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in iter_records(path):
        out[rec["key"]] = rec
    return out


def iter_trajectories(run_dir: Path) -> Iterator[Trajectory]:
    """The current trajectory of each key, as models (streamed, last record wins)."""
    for rec in latest(Path(run_dir) / JOURNAL).values():
        yield Trajectory.model_validate(rec)


def finished_keys(path: Path) -> set[str]:
    """Keys that need no rerun: answered, or unanswered by the model's own fault."""
    done: set[str] = set()
    for rec in iter_records(path):
        err = rec.get("error") or {}
        if rec.get("status") == "unanswered" and err.get("kind") in RESUMABLE_ERRORS:
            done.discard(rec["key"])
        else:
            done.add(rec["key"])
    return done


class JournalWriter:
    """Appends trajectories from any coroutine; a thread does the blocking I/O."""

    def __init__(self, path: Path):
        self.path = path
        repair(path)
        self._fh = open(path, "ab")  # noqa: SIM115 - owned by the writer thread until close()
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="journal", daemon=True)
        self._thread.start()
        self.written = 0

    def append(self, traj: Trajectory) -> None:
        self.append_line(traj.model_dump_json().encode())

    def append_line(self, line: bytes) -> None:
        """Append one serialized trajectory (no newline)."""
        if self._error is not None:
            raise RuntimeError(f"journal writer failed: {self._error}") from self._error
        self._queue.put(line + b"\n")

    def _loop(self) -> None:
        try:
            while True:
                item = self._queue.get()
                batch, stop = [], item is None
                if item is not None:
                    batch.append(item)
                while not stop:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                    else:
                        batch.append(nxt)
                if batch:
                    self._fh.write(b"".join(batch))
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                    self.written += len(batch)
                if stop:
                    return
        except BaseException as exc:  # surfaced on the next append or at close
            self._error = exc

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._fh.close()
        if self._error is not None:
            raise RuntimeError(f"journal writer failed: {self._error}") from self._error
