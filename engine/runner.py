"""The runner: every (backend, strategy, instance, sample) through its compiled graph.

Work items are made as the workers ask for them, and a fresh run counts its plan from its
sizes, so the first call starts at once and memory stays flat however long the run (a
resume walks the plan twice, item by item: once to count what is left, before the first
call, then as the workers ask; about 3 µs an item, its key's hash); concurrency per
provider is the backend's own limit; one writer appends finished trajectories to the
journal, so a rerun with the same run directory skips what is done and nothing is duplicated.

A backend with an ``attach(run_dir, todo)`` coroutine (a person's page) gets it once before
the first call, with the number of trajectories it is to answer; while a trajectory runs,
:data:`CURRENT_KEY` holds its key, so such a backend can tell which item a request is of. A
``serial`` backend runs its trajectories one at a time (see :meth:`Runner.drain`).

With a cost cap (``max_cost``, in US dollars, and ``cost_of``, what a finished trajectory
cost), the runner keeps the run's :class:`~.budget.Budget`: what the run directory spent
before (``spent_before``) and what each finished trajectory spent, with what a batch
collector has committed; once that reaches the cap it hands out no new trajectory, lets
those in flight finish and be journaled, and says so in the result
(``RunResult.cost_capped``). A trajectory whose first call a batch collector refused at the
cap (:class:`~.budget.CostCapped`) did not start: it is not journaled. A rerun with the same
run directory and a higher cap goes on.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from .backend import Backend
from .benchmark import Plan, WorkItem
from .budget import BUDGET, Budget, CostCapped
from .collector import lighter_gc
from .graph import StrategySpec
from .images import holding
from .journal import JOURNAL, RUN_FILE, JournalWriter, finished_keys
from .limits import Gauge, add_gauges, gauge, limits_text, merge
from .lock import hold
from .redact import scrub
from .results import RunResult
from .rundir import kind_of
from .types import ErrorInfo, Instance, RunConfig, Trajectory

Scorer = Callable[[Instance, Any], dict[str, float]]

#: The key of the trajectory the current task is running (None outside one).
CURRENT_KEY: ContextVar[str | None] = ContextVar("unseen_trajectory_key", default=None)


def trajectory_key(instance_id: str, strategy: str, backend: str, sample: int) -> str:
    blob = json.dumps([instance_id, strategy, backend, sample], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _who_answers(backends: Collection[Backend]) -> str:
    """The progress bar's word on who answers: the simulator and fixed rules say so (a rule
    is no simulation), a mix says both; models and people say nothing."""
    kinds = {kind_of(b.spec, b.simulated) for b in backends}
    if not kinds or not kinds <= {"sim", "rule"}:
        return ""
    return " (" + ", ".join(w for k, w in (("sim", "simulated"), ("rule", "rules"))
                            if k in kinds) + ")"


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
        shares: dict[str, int] | None = None,
        max_cost: float | None = None,
        cost_of: Callable[[Trajectory], float] | None = None,
        spent_before: float = 0.0,
    ):
        """``processes > 1`` shards the work over that many processes, each rebuilding its
        strategies and backends with ``setup(concurrency_per_process)`` (a picklable
        callable), so CPU-heavy clients and graphs use more than one core. ``order(done)``
        yields the items not yet done in a benchmark's own order (its plan), ``total``
        counting them all and ``shares`` each backend's part; without it, every backend ×
        strategy × instance × sample. Items are made as the workers ask for them. A
        strategy that cannot work with the benchmark or a backend is refused here
        (:func:`.pairing.check_pairing`) by the run pipeline, before any file is written.
        ``max_cost`` (US dollars) caps what the trajectories of this call may spend, each
        priced by ``cost_of``, with ``spent_before`` (what the run directory's journal had
        spent already); it is counted in one process (``processes`` 1)."""
        if max_cost is not None and (cost_of is None or processes > 1):
            raise ValueError("a cost cap needs cost_of and one process")
        self.max_cost = max_cost
        self.cost_of = cost_of
        self.spent_before = spent_before
        self.budget: Budget | None = None
        self.order = order
        self._total = total
        self.shares = shares
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
        # sharded: what each shard (0: this process's own) last said of its backends'
        # limits (``limits.py``: its ``gauge`` and, once done, its ``snapshot``), and the
        # backends of this process's shard while it runs
        self.shard_reports: dict[int, dict[str, Any]] = {}
        self.own_backends: list[Backend] | None = None

    def _sharded(self) -> bool:
        return self.processes > 1 and self.setup is not None

    def gauge(self) -> Gauge:
        """The backends' limits now, added up over the shards of a sharded run."""
        if not self._sharded():
            return gauge(self.backends)
        parts = [r["gauge"] for r in self.shard_reports.values() if "gauge" in r]
        if self.own_backends is not None:
            parts.append(gauge(self.own_backends))
        return add_gauges(parts)

    def shard_state(self) -> dict[str, dict[str, Any]] | None:
        """A sharded run's backends' limits and server counts, merged over its shards
        (``limits.merge``); None for a run in one process (its backends hold them)."""
        if not self._sharded():
            return None
        return merge([r["snapshot"] for r in self.shard_reports.values() if "snapshot" in r])

    @classmethod
    def from_plan(cls, plan: Plan, backends: list[Backend], run_dir: Path, **kwargs: Any) -> Self:
        """The runner of a benchmark's plan."""
        return cls(plan.instances, plan.strategies, backends, run_dir, plan.config,
                   samples=plan.samples, score=plan.score, setup=plan.setup, order=plan.order,
                   total=plan.total, shares=plan.shares, **kwargs)

    def _capped(self, items: Iterator[WorkItem], result: RunResult) -> Iterator[WorkItem]:
        """``items`` until the spent cost reaches the cap: then no new one is handed out
        (those in flight finish), and the result says the run stopped at the cap."""
        for item in items:
            if self.budget is not None and self.budget.reached():
                result.cost_capped = True
                return
            yield item

    def _items(self, done: Collection[str]) -> Iterator[WorkItem]:
        """The items not in ``done``, made one at a time as they are asked for."""
        if self.order is not None:
            return self.order(set(done))
        return self.nested(done)

    def nested(self, done: Collection[str], shard: int = 0, shards: int = 1
               ) -> Iterator[WorkItem]:
        """Every backend × strategy × instance × sample not in ``done``, in that nesting;
        with ``shards``, only every ``shards``-th of those, from the ``shard``-th: each shard
        process makes its own share, and none the whole list. A fresh run takes its share by
        position without making the others' keys; a resume deals out what is left, so the
        items a dead shard left behind spread over all the shards again."""
        n_s, n_i, n_k = len(self.strategies), len(self.instances), self.samples
        labels = [s.label for s in self.strategies]
        positions = range(len(self.backends) * n_s * n_i * n_k)
        left = 0  # on a resume: the items left so far, whose count deals them out
        for pos in positions[shard::shards] if not done else positions:
            rest, sample = divmod(pos, n_k)
            rest, i = divmod(rest, n_i)
            b, s = divmod(rest, n_s)
            backend, inst = self.backends[b], self.instances[i]
            key = trajectory_key(inst.id, labels[s], backend.spec, sample)
            if key in done:
                continue
            if done:  # the rank of this item among those left decides its shard
                left += 1
                if (left - 1) % shards != shard:
                    continue
            yield WorkItem(key, inst, self.strategies[s], backend, sample, (b, s, i))

    def total(self) -> int:
        if self._total is not None:
            return self._total
        return len(self.backends) * len(self.strategies) * len(self.instances) * self.samples

    def _shares(self) -> dict[str, int] | None:
        """Each backend's number of planned items, from the plan's sizes (None where the
        plan does not say)."""
        if self.order is None:
            each = len(self.strategies) * len(self.instances) * self.samples
            return dict(Counter({b.spec: each for b in self.backends}))
        return self.shares

    def _todo(self, done: set[str]) -> Counter[str]:
        """Each backend's items not yet done: on a fresh run, its share of the plan (no item
        is made before the first call, however large the run); on a resume, counted by
        walking the plan, one item at a time."""
        shares = self._shares()
        if not done and shares is not None:
            return Counter(shares)
        return Counter(item.backend.spec for item in self._items(done))

    def _finished(self, journal: Path) -> set[str]:
        """The keys the journal holds that need no rerun."""
        return finished_keys(journal)

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
        except (asyncio.CancelledError, CostCapped):
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
                    await one(item)

        async def one(item: WorkItem) -> None:
            try:
                traj = await self._one(item)
            except CostCapped:  # its first call refused at the cap: it never started
                if self.budget is not None:
                    self.budget.refuse(item.key)
                return
            sink(traj)

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
                await one(item)

        await asyncio.gather(workers(), *(serial(q) for q in queues.values()))

    async def run(self) -> RunResult:
        # re-entrant: the command may hold it already
        with hold(self.run_dir, "runner"), lighter_gc():
            return await self._run()

    async def _run(self) -> RunResult:
        self._write_config()
        journal_path = self.run_dir / JOURNAL
        writer = JournalWriter(journal_path)
        done = self._finished(journal_path)
        total = self.total()
        result = RunResult(run_dir=self.run_dir, total=total, max_cost=self.max_cost,
                           spent=self.spent_before, spent_before=self.spent_before)
        if self.max_cost is not None:
            self.budget = Budget(self.max_cost, before=self.spent_before)
        todo = self._todo(done)
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
                            limits=limits_text(self.gauge()))

        def report(shard: int, state: dict[str, Any]) -> None:
            with lock:  # a shard's receiver thread: the progress line reads them
                self.shard_reports.setdefault(shard, {}).update(state)

        def sink(traj: Trajectory) -> None:
            writer.append(traj)
            if self.cost_of is not None:
                cost = self.cost_of(traj)
                result.spent += cost
                if self.budget is not None:
                    self.budget.finish(traj.key, cost)
            count(traj.status, traj.error.kind if traj.error else None,
                  sum(1 for s in traj.steps if s.reply.cached),
                  traj.error.message if traj.error else "", traj.notes, traj.strategy)

        budget = BUDGET.set(self.budget)  # the calls of every trajectory see it
        try:
            with progress:
                if self._sharded():
                    from .shards import run_sharded

                    await run_sharded(self, done, sum(todo.values()), writer, count, sink,
                                      report)
                    # the shards' last word, after their last trajectories
                    progress.update(task, limits=limits_text(self.gauge()))
                else:
                    await self.drain(self._capped(self._items(done), result), sink)
        finally:
            BUDGET.reset(budget)
            writer.close()
            result.seconds = time.perf_counter() - t_start
        if self.budget is not None and self.budget.refused:
            result.cost_capped = True
        return result
