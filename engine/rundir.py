"""A run directory, read and written through one typed class: :class:`RunDir`.

``runs/<run>/`` holds ``run.json`` (:class:`RunConfig`), ``trajectories.jsonl`` (one record a
line, the last record of a key current), ``run.lock`` while a process writes it, and the
files its benchmark keeps beside them (the Director's ``study.json``). Views and reports open
a run only through ``RunDir``: the configuration as a model, the current records streamed
(checked and scrubbed of secrets by the journal's reader), and an index of light
:class:`Head` records (everything before a record's steps, with the record's place in the
file) that a summary of 10,000 trajectories reads without parsing a single step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import UnseenError
from .journal import (
    JOURNAL,
    RUN_FILE,
    JournalError,
    check_head,
    checked,
    head_at,
    head_of,
    iter_heads,
    iter_placed,
    parse_line,
    read_run_json,
)
from .lock import hold
from .records import TrajectoryRecord
from .redact import scrub
from .scrubbed import Cleaner
from .types import RunConfig
from .userfiles import read_json_object


class RunDirError(UnseenError, ValueError):
    """A path that is not a run directory, or a run of another benchmark than a view reads."""


@dataclass(frozen=True)
class Head:
    """A current record without its steps, and where the whole record lies in the journal."""

    key: str
    instance_id: str
    model: str
    strategy: str
    backend: str
    sample: int
    status: str
    simulated: bool
    params: dict[str, Any]
    metrics: dict[str, Any]
    prediction: Any
    error_kind: str | None
    error_message: str
    offset: int
    length: int
    notes: dict[str, Any] = field(default_factory=dict)  # Trajectory.notes

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    @property
    def kind(self) -> str:
        """Who answered: ``model``, ``sim``, ``rule`` or ``human`` (:func:`kind_of`)."""
        return kind_of(self.backend, self.simulated)


def kind_of(backend: str, simulated: bool) -> str:
    """``rule`` for a baseline rule, ``human`` for a person, ``sim`` for the simulator, else
    ``model``: the one place that tells them apart, for tables and views alike."""
    if backend.startswith("baseline"):
        return "rule"
    if backend.startswith("human"):
        return "human"
    return "sim" if simulated else "model"


def who(model: str, kind: str, *, loud: bool = False) -> str:
    """The model as every table and view names it: a rule by its rule (``center (rule)``), a
    person ``(human)``, the simulator ``(sim)``, or ``(SIMULATED)`` where a heading must
    shout it (``loud``); a model by its name."""
    if kind == "rule":
        return model.removeprefix("baseline-") + " (rule)"
    if kind == "sim":
        return model + (" (SIMULATED)" if loud else " (sim)")
    if kind == "human":
        return model + " (human)"
    return model


def _head(line: bytes) -> dict[str, Any] | None:
    """The record's fields before ``steps``, parsed without the steps (the whole record when
    they cannot be cut off); None for a line that is not a JSON object."""
    at = head_at(line)
    if at > 0 and (head := head_of(line, at)) is not None:
        return head
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


def _damaged(journal: Path, n: int, line: bytes) -> JournalError:
    """Why line ``n`` is no record, as the journal's own reader says it."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JournalError(f"{journal}:{n}: not UTF-8 (byte 0x{line[exc.start]:02x} at column "
                            f"{exc.start + 1}): the journal is damaged")
    return JournalError(f"{journal}:{n}: not a JSON record: the journal is damaged")


def _message(rec: TrajectoryRecord) -> str:
    err = rec["error"]
    return err["message"] if err else ""


def _head_record(rec: TrajectoryRecord, offset: int, length: int, message: str) -> Head:
    """The :class:`Head` of a checked record (``message``: its error's, scrubbed)."""
    err = rec["error"]
    return Head(key=rec["key"], instance_id=str(rec["instance_id"]), model=rec["model"],
                strategy=rec["strategy"], backend=rec["backend"], sample=int(rec["sample"]),
                status=rec["status"], simulated=bool(rec["simulated"]),
                params=rec["params"] or {}, metrics=rec["metrics"] or {},
                prediction=rec["prediction"], error_kind=err["kind"] if err else None,
                error_message=message, offset=offset, length=length, notes=rec["notes"] or {})


class RunDir:
    """One run directory. ``RunDir(path)`` checks nothing; :meth:`open` checks that it is
    a run (a journal is there) and, with ``benchmark``, that it is a run of that one."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._records: tuple[tuple[int, int], list[TrajectoryRecord],
                             list[tuple[int, int]]] | None = None
        self._cleaners: tuple[tuple[int, int], Cleaner] | None = None

    @classmethod
    def open(cls, path: str | Path, benchmark: str | None = None) -> RunDir:
        run = cls(path)
        if not run.journal.is_file():
            raise RunDirError(f"{path}: not a run directory (no {JOURNAL})")
        if benchmark is not None and run.benchmark != benchmark:
            raise RunDirError(f"{path} is a {run.benchmark} run, not a {benchmark} run")
        return run

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # --- files ---------------------------------------------------------------------------

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    @property
    def config_file(self) -> Path:
        return self.path / RUN_FILE

    def file(self, name: str) -> Path:
        """A file the run's benchmark keeps beside the journal."""
        return self.path / name

    # --- run.json ------------------------------------------------------------------------

    @cached_property
    def config(self) -> RunConfig | None:
        """``run.json`` as a model (checked: a bad field is one line naming the file), or None
        for a run directory without one (made by hand, or before the first record)."""
        if not self.config_file.is_file():
            return None
        raw = read_run_json(self.path)
        if raw.get("benchmark") is not None:  # the usual case: run.json is read once
            return RunConfig.model_validate(raw)
        return RunConfig.model_validate({"benchmark": self.benchmark, **raw})

    @cached_property
    def benchmark(self) -> str:
        """The benchmark the run belongs to: the one ``run.json`` names, or for a run directory
        made by hand (without ``run.json``, or whose ``run.json`` names none) the installed
        default (``engine.benchmark.default``). Only this field is read: a table that needs
        no more opens a ``run.json`` written by hand; :attr:`config` checks the whole file."""
        name = read_json_object(self.config_file).get("benchmark") \
            if self.config_file.is_file() else None
        if name is None:
            from .benchmark import default  # loads the benchmarks' entry points: only here

            return default().name
        if not isinstance(name, str):
            raise RunDirError(f"{self.config_file}:1: benchmark: not a string")
        return name

    def write_config(self, config: RunConfig) -> None:
        """Write ``run.json`` (scrubbed of any secret a description might carry)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(scrub(config.model_dump_json(indent=2)) + "\n",
                                    encoding="utf-8")
        self.__dict__.pop("config", None)
        self.__dict__.pop("benchmark", None)

    def write_file(self, name: str, text: str) -> None:
        """A benchmark's own file beside the journal (scrubbed)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.file(name).write_text(scrub(text), encoding="utf-8")

    # --- the journal ---------------------------------------------------------------------

    def records(self) -> Iterator[TrajectoryRecord]:
        """The current (last) record of each key, whole, in journal order of first sight:
        every top-level field there (``records.TrajectoryRecord``), steps as written. The
        journal is read once per ``RunDir`` (a command's tables, curves and pages share the
        pass, and :meth:`heads` with ``from_records``) and again only once it has changed;
        treat the records as read-only. The journal is read when this is called."""
        return iter(self._read()[1])

    def _read(self) -> tuple[tuple[int, int], list[TrajectoryRecord], list[tuple[int, int]]]:
        """The records of :meth:`records` and where each lies in the journal."""
        stamp = self._stamp()
        if self._records is None or self._records[0] != stamp:
            last: dict[str, tuple[int, int, TrajectoryRecord]] = {}
            for offset, length, rec in iter_placed(self.journal):
                last[rec["key"]] = (offset, length, rec)
            self._records = (stamp, [r for _, _, r in last.values()],
                             [(o, n) for o, n, _ in last.values()])
        return self._records

    def records_with_steps(self, whole: Callable[[dict[str, Any]], bool]
                           ) -> list[dict[str, Any]]:
        """The current record of each key, as :meth:`records` gives them but with its steps
        parsed only where ``whole(head)`` (its fields before them) says so: a summary of a
        study of 170,000 replies that reads the steps of few. Not kept: each call reads, but
        for records :meth:`records` has read whole (and the journal has not changed since),
        which it hands out instead."""
        if self._records is not None and self._records[0] == self._stamp():
            return list(self._records[1])  # type: ignore[arg-type]  # steps and all
        last: dict[str, dict[str, Any]] = {}
        for rec in iter_heads(self.journal, whole):
            last[rec["key"]] = rec
        return list(last.values())

    def _cleaner(self) -> Cleaner:
        """The journal's :class:`Cleaner`, made again only once the journal has changed (a
        view reads record after record: each made one read the spans file and the journal's
        span ends again)."""
        stamp = self._stamp()
        if self._cleaners is None or self._cleaners[0] != stamp:
            self._cleaners = (stamp, Cleaner(self.journal))
        return self._cleaners[1]

    def _stamp(self) -> tuple[int, int]:
        st = self.journal.stat()
        return st.st_size, st.st_mtime_ns

    def record(self, head: Head) -> TrajectoryRecord:
        """The whole record of ``head``, steps included, validated as a
        :class:`~.types.Trajectory` (every field there): what a view that shows the steps
        reads."""
        return checked(self.read(head), self.journal)

    def heads(self, from_records: bool = False) -> list[Head]:
        """The current record of each key as a :class:`Head` (one pass, steps not parsed);
        ``from_records``: from the records :meth:`records` reads whole, for a view that
        reads both (one pass, not two)."""
        if from_records:
            _, recs, places = self._read()
            return [_head_record(rec, offset, length, _message(rec))
                    for rec, (offset, length) in zip(recs, places, strict=True)]
        last: dict[str, Head] = {}
        offset = 0
        cleaner = Cleaner(self.journal)  # the keys in use, looked up once for the whole pass
        journal = self.journal
        with open(journal, "rb") as fh:
            for n, line in enumerate(fh, start=1):
                size = len(line)
                if not line.endswith(b"\n"):
                    break  # a torn last line
                raw = _head(line)
                if raw is None:
                    raise _damaged(journal, n, line)
                rec = check_head(journal, n, raw)
                message = _message(rec)
                clean = cleaner.clean(offset, line) if message else None
                last[rec["key"]] = _head_record(rec, offset, size,
                                                clean(message) if clean else message)
                offset += size
        return list(last.values())

    def read(self, head: Head) -> TrajectoryRecord:
        """The whole record of ``head`` (one seek, one line)."""
        with open(self.journal, "rb") as fh:
            fh.seek(head.offset)
            raw = fh.read(head.length)
        try:
            rec = parse_line(self.journal, 0, raw, self._cleaner().clean(head.offset, raw))
        except JournalError:  # changed since the heads were read
            raise JournalError(f"{self.journal}: the record at byte {head.offset} is no "
                               "longer readable: the journal is damaged") from None
        return check_head(self.journal, 0, rec)

    # --- writing -------------------------------------------------------------------------

    def lock(self, what: str = "unseen"):
        """Hold the run directory for this process (see :mod:`.lock`)."""
        return hold(self.path, what)


def serving_text(desc: dict[str, Any] | None) -> str:
    """How a backend sent its images and read its boxes, from its run.json description:
    ``detail=low, max_side=512`` (image settings), ``max_pixels=...`` (Qwen2.5-VL's resize)."""
    if not desc:
        return ""
    items = dict(desc.get("image") or {})
    for k, v in (desc.get("box_settings") or {}).items():
        items.setdefault(k, v)
    return ", ".join(f"{k}={v}" for k, v in items.items())


def serving_lines(serving: dict[str, str], dropped: dict[str, list[str]]) -> list[str]:
    """The legend lines that say how each model was asked: ``images: MODEL SETTINGS; ...``
    and ``rejected by the provider and dropped: MODEL PARAMS; ...`` (one wording in every
    table, report, curve and page)."""
    lines = []
    if serving:
        lines.append("images: " + "; ".join(f"{m} {s}" for m, s in serving.items()))
    if dropped:
        lines.append("rejected by the provider and dropped: " + "; ".join(
            f"{m} {', '.join(ps)}" for m, ps in dropped.items()))
    return lines


def run_serving(config: Any, names: dict[str, str] | None = None
                ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each model's image settings (:func:`serving_text`) and the parameters its provider
    rejected, from a run's run.json backends, by the model's name as recorded (or as
    ``names`` gives it by backend spec: a Director design's names); the first backend of a
    name wins."""
    serving: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    for desc in getattr(config, "backends", None) or []:
        model = (names or {}).get(desc.get("spec", "")) or str(
            desc.get("model") or desc.get("spec") or "?")
        if text := serving_text(desc):
            serving.setdefault(model, text)
        if desc.get("dropped_params"):
            dropped.setdefault(model, [str(p) for p in desc["dropped_params"]])
    return serving, dropped


def run_serving_lines(config: Any) -> list[str]:
    """:func:`serving_lines` of a run from its run.json backends (model names as recorded)."""
    return serving_lines(*run_serving(config))
