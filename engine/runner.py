"""The runner: every (backend, strategy, instance, sample) through its compiled graph.

Work items are drawn lazily, so memory stays flat however long the run; concurrency per
provider is the backend's own limit; one writer appends finished trajectories to the
journal, so a rerun with the same run directory skips what is done and nothing is duplicated.

A backend with an ``attach(run_dir, todo)`` coroutine (a person's page) gets it once before
the first call, with the number of trajectories it is to answer; while a trajectory runs,
:data:`CURRENT_KEY` holds its key, so such a backend can tell which item a request is of. A
``serial`` backend runs its trajectories one at a time (see :meth:`Runner.drain`).

With a cost cap (``max_cost``, in US dollars, and ``cost_of``, what a finished trajectory
cost), the runner adds up what each finished trajectory spent; once that reaches the cap it
hands out no new trajectory, lets those in flight finish and be journaled, and says so in
the result (``RunResult.cost_capped``): a rerun with the same run directory resumes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from .backend import Backend
from .benchmark import Plan, WorkItem
from .box import no_convention
from .collector import lighter_gc
from .errors import UnseenError
from .graph import StrategySpec
from .images import holding
from .journal import JOURNAL, RUN_FILE, JournalWriter, finished_keys
from .lock import hold
from .redact import scrub
from .rundir import kind_of
from .types import ErrorInfo, Instance, RunConfig, Trajectory

Scorer = Callable[[Instance, Any], dict[str, float]]

#: The key of the trajectory the current task is running (None outside one).
CURRENT_KEY: ContextVar[str | None] = ContextVar("unseen_trajectory_key", default=None)


class PairingError(UnseenError, ValueError):
    """A strategy and a benchmark, or a strategy and a backend, that cannot work together."""


def check_pairing(strategies: list[StrategySpec], backends: list[Backend], benchmark: str,
                  accepts: Collection[str] | None = None) -> None:
    """Refuse, before any call, a strategy made for instances the benchmark does not have
    (``StrategySpec.benchmark`` not in the benchmark's ``accepts``; by default its own name)
    and a respondent without a model (a rule, the simulator) that cannot give the answers a
    strategy asks for."""
    accepts = {benchmark} if accepts is None else set(accepts)
    for s in strategies:
        if s.benchmark not in accepts:
            raise PairingError(f"strategy {s.label!r} reads {s.benchmark} instances; this run "
                               f"is on {benchmark} data")
    boxes = [s for s in strategies if "box" in s.asks]
    for b in backends:
        if boxes and b.box_format is None:  # conventions are never guessed
            desc = b.describe()
            raise PairingError(no_convention(b.model, desc.get("profile"),
                                             desc.get("profile_note") or ""))
        for s in strategies:
            missing = sorted(s.needs - capabilities(b))
            if missing:
                raise PairingError(
                    f"strategy {s.label!r} needs {', '.join(missing)}, which backend "
                    f"{b.spec!r} does not return; {NEEDS_HINT.get(missing[0], '')}".rstrip("; "))
        can = b.answers
        if can is None:
            continue
        for s in strategies:
            missing = sorted(s.asks - can)
            if missing:
                raise PairingError(
                    f"backend {b.spec!r} cannot answer strategy {s.label!r}: it answers "
                    f"{', '.join(sorted(can)) or 'no'} requests, and {s.label} asks for "
                    f"{', '.join(missing)}")


#: what a strategy can do instead, by the capability it needs and a backend lacks
NEEDS_HINT = {"logprobs": "use votes=N (the vote share is the confidence) or a backend that "
                          "returns log-probabilities (openai, vllm, vllm-local, gemini)"}


def capabilities(backend: Backend) -> frozenset[str]:
    """The names of what a backend returns natively (``Capabilities``' true fields)."""
    caps = backend.capabilities
    if caps is None:  # a stand-in without any (tests)
        return frozenset()
    return frozenset(k for k, v in caps.model_dump().items() if v is True)


def trajectory_key(instance_id: str, strategy: str, backend: str, sample: int) -> str:
    blob = json.dumps([instance_id, strategy, backend, sample], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# Error kinds that are answers, not failures: a reply that could not be used is the model's
# answer (engine.graph.ANSWER_REASONS), a person's "can't tell" a choice.
ANSWERS = ("parse", "format_mismatch", "ambiguous", "length", "skipped")


@dataclass
class RunResult:
    run_dir: Path
    total: int = 0
    skipped: int = 0
    done: int = 0
    answered: int = 0
    errors: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    first_s: float | None = None  # seconds until the first trajectory finished (start-up)
    by_error: dict[str, int] = field(default_factory=dict)
    # the same counts per strategy label: which method goes unanswered, and why
    by_strategy: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)  # the first message of each kind
    # replies cut at a length limit, and trajectories answered by a fallback, by strategy
    length_stops: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)
    # the cost cap: US dollars this call spent, the cap, and whether the run stopped at it
    spent: float = 0.0
    max_cost: float | None = None
    cost_capped: bool = False

    def add(self, status: str, error_kind: str | None, cached_steps: int,
            message: str = "", notes: dict[str, Any] | None = None,
            strategy: str = "") -> None:
        """Count one finished trajectory."""
        notes = notes or {}
        self.length_stops += int(notes.get("length_stops", 0))
        if notes.get("fallback"):
            self.fallbacks[strategy] = self.fallbacks.get(strategy, 0) + 1
        self.done += 1
        self.answered += status == "answered"
        if error_kind is not None:
            self.by_error[error_kind] = self.by_error.get(error_kind, 0) + 1
            per = self.by_strategy.setdefault(strategy, {})
            per[error_kind] = per.get(error_kind, 0) + 1
            self.errors += error_kind not in ANSWERS
            self.examples.setdefault(error_kind, message)
        self.cache_hits += cached_steps

    @property
    def failures(self) -> dict[str, int]:
        """Failed trajectories of this call by error kind, most first (see :data:`ANSWERS`)."""
        kinds = {k: n for k, n in self.by_error.items() if k not in ANSWERS}
        return dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _who_answers(backends: Collection[Backend]) -> str:
    """The progress bar's word on who answers: the simulator and fixed rules say so (a rule
    is no simulation), a mix says both; models and people say nothing."""
    kinds = {kind_of(b.spec, b.simulated) for b in backends}
    if not kinds or not kinds <= {"sim", "rule"}:
        return ""
    return " (" + ", ".join(w for k, w in (("sim", "simulated"), ("rule", "rules"))
                            if k in kinds) + ")"


def limits_text(backends: Collection[Backend]) -> str:
    """The progress line's word on rate limits, once a provider has sent a 429: the calls
    in flight each backend allows now, of its ceiling, and the 429s so far."""
    limits = [lim for b in backends if (lim := getattr(b, "limiter", None)) is not None]
    servers = [s.limit for b in backends for s in getattr(b, "servers", ())
               if getattr(s, "limit", None) is not None]
    seen = sum(lim.rate_limited for lim in [*limits, *servers])
    if not seen:
        return ""
    now = sum(lim.current for lim in (servers or limits))
    ceiling = sum(lim.ceiling for lim in limits)
    return f" · limit {min(now, ceiling)}/{ceiling} · 429s {seen}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Runner:
    """Runs work items concurrently and journals each finished trajectory."""

    def __init__(
        self,
        instances: list[Instance],
        strategies: list[StrategySpec],
        backends: list[Backend],
        run_dir: Path,
        config: RunConfig,
        samples: int = 1,
        score: Scorer | None = None,
        workers: int | None = None,
        progress: bool = True,
        processes: int = 1,
        setup: Callable[[int], tuple[list[StrategySpec], list[Backend], Scorer | None]] | None = None,
        order: Callable[[set[str]], Iterator[WorkItem]] | None = None,
        total: int | None = None,
        max_cost: float | None = None,
        cost_of: Callable[[Trajectory], float] | None = None,
    ):
        """``processes > 1`` shards the work over that many processes, each rebuilding its
        strategies and backends with ``setup(concurrency_per_process)`` (a picklable
        callable), so CPU-heavy clients and graphs use more than one core. ``order(done)``
        yields the items not yet done in a benchmark's own order (its plan), ``total``
        counting them all; without it, every backend × strategy × instance × sample. A
        strategy that cannot work with the benchmark or a backend is refused here
        (:func:`check_pairing`) by the run pipeline, before any file is written.
        ``max_cost`` (US dollars) caps what the trajectories of this call may spend, each
        priced by ``cost_of``; it is counted in one process (``processes`` 1)."""
        if max_cost is not None and (cost_of is None or processes > 1):
            raise ValueError("a cost cap needs cost_of and one process")
        self.max_cost = max_cost
        self.cost_of = cost_of
        self.order = order
        self._total = total
        self.instances = instances
        self.strategies = strategies
        self.backends = backends
        self.run_dir = Path(run_dir)
        self.config = config
        self.samples = samples
        self.score = score
        limits = [b.concurrency for b in backends]
        self.workers = workers or max(4, 2 * sum(limits))
        self.progress = progress
        self.processes = processes
        self.setup = setup

    @classmethod
    def from_plan(cls, plan: Plan, backends: list[Backend], run_dir: Path, **kwargs: Any) -> Self:
        """The runner of a benchmark's plan."""
        return cls(plan.instances, plan.strategies, backends, run_dir, plan.config,
                   samples=plan.samples, score=plan.score, setup=plan.setup, order=plan.order,
                   total=plan.total, **kwargs)

    def _capped(self, items: Iterator[WorkItem], result: RunResult) -> Iterator[WorkItem]:
        """``items`` until the spent cost reaches the cap: then no new one is handed out
        (those in flight finish), and the result says the run stopped at the cap."""
        for item in items:
            if self.max_cost is not None and result.spent >= self.max_cost:
                result.cost_capped = True
                return
            yield item

    def _items(self, done: set[str]) -> Iterator[WorkItem]:
        if self.order is not None:
            yield from self.order(done)
            return
        for b, backend in enumerate(self.backends):
            for s, strategy in enumerate(self.strategies):
                label = strategy.label
                for i, inst in enumerate(self.instances):
                    for sample in range(self.samples):
                        key = trajectory_key(inst.id, label, backend.spec, sample)
                        if key not in done:
                            yield WorkItem(key, inst, strategy, backend, sample, (b, s, i))

    def total(self) -> int:
        if self._total is not None:
            return self._total
        return len(self.backends) * len(self.strategies) * len(self.instances) * self.samples

    async def _one(self, item: WorkItem) -> Trajectory:
        t0 = time.perf_counter()
        state_in = {"instance": item.instance, "sample": item.sample, "steps": []}
        cfg = {
            "recursion_limit": item.strategy.recursion_limit,
            "configurable": {"backend": item.backend},
        }
        CURRENT_KEY.set(item.key)  # each worker is its own task: the value stays in it
        try:
            # this trajectory's decoded images and encoded overlays, let go when it ends
            with holding():
                state = await item.strategy.graph.ainvoke(state_in, config=cfg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a strategy: record it, keep the run going
            state = {
                "steps": [], "status": "unanswered",
                "error": ErrorInfo(kind="internal", message=f"{type(exc).__name__}: {exc}"),
            }
        status = state.get("status") or "unanswered"
        prediction = state.get("prediction") if status == "answered" else None
        error = state.get("error")
        if status == "unanswered" and error is None:
            error = ErrorInfo(kind="internal", message="strategy ended without an answer")
        metrics = self.score(item.instance, prediction) if self.score else {}
        steps = state.get("steps") or []
        notes: dict[str, Any] = {}
        if cut := sum(1 for s in steps if s.reply.cut):
            notes["length_stops"] = cut
        if status == "answered" and (fb := next((s.info["fallback"] for s in steps
                                                  if s.info.get("fallback")), None)):
            notes["fallback"] = fb
        return Trajectory(
            key=item.key,
            run=self.config.run,
            instance_id=item.instance.id,
            strategy=item.strategy.label,
            params=item.strategy.params.model_dump(),
            backend=item.backend.spec,
            model=item.backend.model,
            simulated=item.backend.simulated,
            sample=item.sample,
            status=status,
            error=error,
            prediction=prediction,
            metrics=metrics,
            notes=notes,
            steps=steps,
            seconds=time.perf_counter() - t0,
            finished_at=_now(),
        )

    def _write_config(self) -> None:
        path = self.run_dir / RUN_FILE
        path.write_text(scrub(self.config.model_dump_json(indent=2)) + "\n", encoding="utf-8")

    def _progress(self, total: int, completed: int):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        sim = _who_answers(self.backends)
        progress = Progress(
            SpinnerColumn(), TextColumn(f"[bold]running{sim}"), BarColumn(),
            MofNCompleteColumn(), TextColumn("{task.fields[rate]}/s"),
            TextColumn("eta"), TimeRemainingColumn(compact=True),
            TextColumn("[red]errors {task.fields[errors]}[/] · cached {task.fields[cached]}"
                       "{task.fields[limits]}"),
            disable=not self.progress, transient=False,
        )
        task = progress.add_task("run", total=total, completed=completed, errors=0, cached=0,
                                 rate="0.0", limits="")
        return progress, task

    async def drain(self, items: Iterator[WorkItem], sink: Callable[[Trajectory], None]) -> None:
        """Run items with ``self.workers`` concurrent workers; ``sink`` gets each result.

        The items of a ``serial`` backend (a person) go to a queue of their own and run one
        after another in their order, so a person answers one item at a time with its steps
        in a row, while the other backends' items run on."""
        queues: dict[int, asyncio.Queue[WorkItem | None]] = {
            id(b): asyncio.Queue() for b in self.backends if b.serial}

        async def worker() -> None:
            for item in items:  # the shared generator hands each item out once
                queue = queues.get(id(item.backend))
                if queue is not None:
                    queue.put_nowait(item)
                else:
                    sink(await self._one(item))

        async def workers() -> None:
            try:
                # never more workers than trajectories (a batch backend allows thousands)
                n = max(1, min(self.workers, self.total()))
                await asyncio.gather(*(worker() for _ in range(n)))
            finally:
                for queue in queues.values():
                    queue.put_nowait(None)  # nothing more will come

        async def serial(queue: asyncio.Queue) -> None:
            while (item := await queue.get()) is not None:
                sink(await self._one(item))

        await asyncio.gather(workers(), *(serial(q) for q in queues.values()))

    async def run(self) -> RunResult:
        # re-entrant: the command may hold it already
        with hold(self.run_dir, "runner"), lighter_gc():
            return await self._run()

    async def _run(self) -> RunResult:
        self._write_config()
        journal_path = self.run_dir / JOURNAL
        writer = JournalWriter(journal_path)
        done = finished_keys(journal_path)
        total = self.total()
        result = RunResult(run_dir=self.run_dir, total=total, max_cost=self.max_cost)
        todo = Counter(item.backend.spec for item in self._items(done))
        result.skipped = total - sum(todo.values())
        for b in self.backends:  # before the progress bar, which owns the terminal
            await b.attach(self.run_dir, todo[b.spec])
        progress, task = self._progress(total, result.skipped)
        t_start = time.perf_counter()

        lock = threading.Lock()  # shard receivers count from their own threads

        def count(status: str, error_kind: str | None, cached: int, message: str = "",
                  notes: dict[str, Any] | None = None, strategy: str = "") -> None:
            with lock:
                _count(status, error_kind, cached, message, notes, strategy)

        def _count(status: str, error_kind: str | None, cached: int, message: str,
                   notes: dict[str, Any] | None, strategy: str) -> None:
            result.add(status, error_kind, cached, message, notes, strategy)
            elapsed = time.perf_counter() - t_start
            if result.first_s is None:
                result.first_s = elapsed
            progress.update(task, advance=1, errors=result.errors, cached=result.cache_hits,
                            rate=f"{result.done / elapsed:.1f}" if elapsed > 0 else "0.0",
                            limits=limits_text(self.backends))

        def sink(traj: Trajectory) -> None:
            writer.append(traj)
            if self.cost_of is not None:
                result.spent += self.cost_of(traj)
            count(traj.status, traj.error.kind if traj.error else None,
                  sum(1 for s in traj.steps if s.reply.cached),
                  traj.error.message if traj.error else "", traj.notes, traj.strategy)

        try:
            with progress:
                if self.processes > 1 and self.setup is not None:
                    from .shards import run_sharded

                    await run_sharded(self, list(self._items(done)), writer, count, sink)
                else:
                    await self.drain(self._capped(self._items(done), result), sink)
        finally:
            writer.close()
            result.seconds = time.perf_counter() - t_start
        return result
