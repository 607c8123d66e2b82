"""The run journal: ``trajectories.jsonl``, appended by one writer thread, read as a stream.

Lines are written whole, flushed and fsynced (group commit: one fsync per batch the writer
finds waiting), so a run killed at any point leaves at most one torn last line, which the
next open cuts off. Readers never load the whole file: they stream it line by line. A line
that is not a trajectory record (not UTF-8, not JSON, a field of the wrong type) anywhere but
at the torn end is a damaged journal: a :class:`JournalError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NotRequired, Required

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from .errors import UnseenError, UserFileError
from .paths import MACHINE
from .records import TrajectoryRecord, fill_top
from .redact import scrub_bytes
from .scrubbed import Cleaner, Marks
from .types import RETRYABLE, RunConfig, Trajectory
from .userfiles import first_problem, read_json_object, validated

JOURNAL = "trajectories.jsonl"
RUN_FILE = "run.json"
_STEPS = b'"steps"'

# Failures of the provider or the network are retried when a run resumes; a reply the
# model gave but that could not be used (``parse``) is a finished answer.
RESUMABLE_ERRORS = RETRYABLE | {"quota", "client", "config", "internal"}

_orjson_loads: Callable[[str | bytes], Any]
try:
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - orjson comes with langgraph
    _orjson_loads = json.loads


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


class JournalError(UserFileError):
    """A journal line that is not a trajectory record."""


class JournalWriteError(UnseenError):
    """The journal cannot be written (a full disk, a read-only file system): what it holds
    stays, and a rerun resumes from it."""

    def __init__(self, path: Path, exc: BaseException):
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        hint = MACHINE.get(getattr(exc, "errno", None) or 0, "")
        super().__init__(f"cannot write the journal {path}: {why}{f' ({hint})' if hint else ''}"
                         f"; every trajectory journaled before is kept: rerun the same command "
                         f"with --out {path.parent} to resume")


# The fields of a record that every reader relies on, checked on every line as TypedDicts
# (a third of the cost of models: nothing is built); the steps in full, as Trajectory, only
# where a view shows them (:func:`checked`).
@with_config(ConfigDict(strict=True))
class _Error(TypedDict):
    kind: str
    message: str


@with_config(ConfigDict(strict=True, extra="forbid"))  # the summaries add up every key
class _Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_input_tokens: int  # journals before it lack it: counted as 0


@with_config(ConfigDict(strict=True))
class _Reply(TypedDict, total=False):
    text: str
    usage: _Usage
    cached: bool
    latency_s: float
    error: _Error | None


@with_config(ConfigDict(strict=True))
class _Info(TypedDict, total=False):  # the request tags that summaries and views read
    calls: int
    fields: list[str]


@with_config(ConfigDict(strict=True))
class _Step(TypedDict, total=False):
    reply: Required[_Reply]  # every step has one (Step.reply); the summaries read it
    region: list[float] | None
    info: _Info


@with_config(ConfigDict(strict=True))
class _HeadFields(TypedDict):
    key: str
    instance_id: str
    strategy: str
    backend: str
    model: str
    status: Literal["answered", "unanswered"]
    sample: NotRequired[int]  # these four: Trajectory's defaults filled in by check_head
    error: NotRequired[_Error | None]
    params: NotRequired[dict[str, Any]]
    metrics: NotRequired[dict[str, float | None]]
    notes: NotRequired[dict[str, Any]]
    steps: NotRequired[list[_Step]]  # heads (RunDir.heads) stop before the steps
    simulated: NotRequired[bool]
    seconds: NotRequired[float]


_HEAD = TypeAdapter(_HeadFields)


def loads(text: str | bytes) -> Any:
    """JSON as the stdlib reads it, by orjson where orjson reads it (about three times as
    fast on a journal; it refuses NaN and integers past 64 bits, which the stdlib then
    reads)."""
    try:
        return _orjson_loads(text)
    except (ValueError, RecursionError):
        return json.loads(text)


def parse_line(path: Path, n: int, raw: bytes, clean: Callable[[str], str] | None) -> Any:
    """Line ``n`` of ``path`` as JSON, scrubbed by ``clean`` first (None: it was scrubbed when
    written, and is parsed as bytes); a line that is not UTF-8 JSON is a :class:`JournalError`."""
    if clean is None:
        try:
            return _orjson_loads(raw)
        except (ValueError, RecursionError):
            pass  # NaN, a huge integer, or damage: the stdlib reads it or says which
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JournalError(f"{path}:{n}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                           f"{exc.start + 1}): the journal is damaged") from None
    try:
        return loads(clean(line) if clean is not None else line)
    except (json.JSONDecodeError, RecursionError):
        raise JournalError(f"{path}:{n}: not a JSON record: the journal is damaged") from None


def check_head(path: Path, n: int, rec: Any) -> TrajectoryRecord:
    """``rec`` (line ``n`` of ``path``) if it is a record whose fields have their types, with
    the defaults of :class:`Trajectory` filled in where a top-level field is absent
    (``records.fill_top``)."""
    if not isinstance(rec, dict):
        raise JournalError(f"{path}:{n}: not a JSON object: the journal is damaged")
    try:
        _HEAD.validate_python(rec)
    except ValidationError as exc:
        raise JournalError(f"{path}:{n}: {first_problem(exc)}: the journal is damaged") \
            from None
    return fill_top(rec)  # what Trajectory defaults: every reader may index the record


def iter_records(path: Path) -> Iterator[TrajectoryRecord]:
    """Every record, in file order; a torn last line (no newline) is skipped. Lines written
    scrubbed (``scrubbed.Cleaner``) are not scrubbed again; older ones are."""
    for _, _, rec in iter_placed(path):
        yield rec


def iter_placed(path: Path) -> Iterator[tuple[int, int, TrajectoryRecord]]:
    """:func:`iter_records` with each record's byte offset and length in the file."""
    if not path.exists():
        return
    cleaner = Cleaner(path)  # the spans and the keys in use, looked up once for the pass
    offset = 0
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break
            yield offset, len(raw), check_head(path, n, parse_line(path, n, raw,
                                                                    cleaner.clean(offset, raw)))
            offset += len(raw)


def head_at(line: bytes) -> int:
    """Where the record's own ``"steps"`` key begins in a journal line, or -1: the first
    ``"steps"`` is the record's only where a comma comes right before it and the part before
    parses as an object (:func:`head_of`); else it is a key inside the params or the
    prediction, and the line is read whole."""
    at = line.find(_STEPS)
    return at if at > 1 and line[at - 1:at] == b"," else -1


def head_of(line: bytes, at: int) -> dict[str, Any] | None:
    """The record's fields before its steps (``at``: :func:`head_at`), or None where that
    part is no JSON object orjson reads."""
    try:
        head = _orjson_loads(line[:at - 1] + b"}")
    except (ValueError, RecursionError):
        return None
    return head if isinstance(head, dict) else None


def iter_heads(path: Path, whole: Callable[[dict[str, Any]], bool]) -> Iterator[dict[str, Any]]:
    """Every record, in file order, as :func:`iter_records` gives it, but with its steps
    parsed and checked only where ``whole(head)`` (the checked fields before them) says so;
    the others have no ``steps``. What a pass that reads the steps of few records costs: a
    study's analysis reads 170,000 heads and the token counts of real models only."""
    if not path.exists():
        return
    cleaner = Cleaner(path)
    offset = 0
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break
            clean = cleaner.clean(offset, raw)
            offset += len(raw)
            at = head_at(raw) if clean is None else -1  # a line to scrub is scrubbed whole
            head = head_of(raw, at) if at > 0 else None
            if head is not None:
                rec: dict[str, Any] = check_head(path, n, head)  # type: ignore[assignment]
                del rec["steps"]  # none in the head: fill_top put an empty list there
                if not whole(rec):
                    yield rec
                    continue
                try:  # the rest of the line: steps, seconds, finished_at
                    rec.update(_orjson_loads(b"{" + raw[at:]))
                    yield check_head(path, n, rec)  # type: ignore[misc]
                    continue
                except (ValueError, RecursionError, TypeError):
                    pass  # read whole below, which says what is wrong
            rec = check_head(path, n, parse_line(path, n, raw, clean))  # type: ignore[assignment]
            if not whole(rec):
                del rec["steps"]
            yield rec


def checked(rec: TrajectoryRecord | dict[str, Any], path: Path) -> TrajectoryRecord:
    """``rec`` (a record of the journal ``path``) validated in full, steps included, for a
    view that shows them, as the model reads it (defaults filled, unknown keys left out); a
    bad field is a :class:`JournalError` naming the line."""
    try:
        return Trajectory.model_validate(rec).model_dump()  # type: ignore[return-value]
    except ValidationError as exc:
        line = line_of(path, rec.get("key")) or 1  # looked for only when the record is bad
        raise JournalError(f"{path}:{line}: {first_problem(exc)}: the journal is damaged") \
            from None


def line_of(path: Path, key: Any) -> int | None:
    """The line of the current (last) record of ``key``, for an error message."""
    needle = json.dumps(key).encode()
    with open(path, "rb") as fh:
        found = None
        for n, raw in enumerate(fh, start=1):
            if needle in raw:
                found = n  # the last record of a key is the current one
        return found


def latest(path: Path) -> dict[str, TrajectoryRecord]:
    """The last record of each key (a resumed run may have retried a failed key)."""
    out: dict[str, TrajectoryRecord] = {}
    for rec in iter_records(path):
        out[rec["key"]] = rec
    return out


def iter_trajectories(run_dir: Path) -> Iterator[Trajectory]:
    """The current trajectory of each key, as models (streamed, last record wins)."""
    for rec in latest(Path(run_dir) / JOURNAL).values():
        yield Trajectory.model_validate(rec)


def finished_keys(path: Path) -> set[str]:
    """Keys that need no rerun: answered, or unanswered by the model's own fault (read from
    the records' heads: their steps are not parsed)."""
    done: set[str] = set()
    for rec in iter_heads(path, whole=lambda head: False):
        err = rec["error"]
        if rec["status"] == "unanswered" and err is not None and \
                err["kind"] in RESUMABLE_ERRORS:
            done.discard(rec["key"])
        else:
            done.add(rec["key"])
    return done


class JournalWriter:
    """Appends trajectories from any coroutine; a thread does the blocking I/O."""

    def __init__(self, path: Path):
        self.path = path
        repair(path)
        # which bytes this writer appends scrubbed, so that readers need not scrub them again
        self._marks = Marks(path, path.stat().st_size if path.exists() else 0)
        # unbuffered: a write that fails (a full disk) leaves at most a torn last line, which
        # the next open cuts off, and nothing held back for close() to write later
        self._fh = open(path, "ab", buffering=0)  # noqa: SIM115 - the writer thread's until close()
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
            raise JournalWriteError(self.path, self._error) from None
        self._queue.put(scrub_bytes(line) + b"\n")  # an echoed key never reaches the disk

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
                    joined = b"".join(batch)
                    data = memoryview(joined)
                    while data:  # a raw write may take part of it
                        data = data[self._fh.write(data):]
                    os.fsync(self._fh.fileno())
                    self._marks.wrote(joined)
                    self.written += len(batch)
                if stop:
                    self._marks.save()
                    return
        except BaseException as exc:  # surfaced on the next append or at close
            self._error = exc

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        try:
            self._fh.close()
        except OSError as exc:  # the last buffered bytes met a full disk
            self._error = self._error or exc
        if self._error is not None:
            raise JournalWriteError(self.path, self._error) from None


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """``run_dir/run.json`` as a dict, checked against :class:`RunConfig` (a field of the
    wrong type, bad JSON, bytes that are not UTF-8: one line naming the file)."""
    path = Path(run_dir) / RUN_FILE
    obj = read_json_object(path)
    validated(path, RunConfig, obj)
    return obj
