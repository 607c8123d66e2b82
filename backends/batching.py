"""Batch APIs under the one backend protocol: a strategy's call waits on a future that a
collector resolves, so strategies stay LangGraph graphs and every step is journaled as any.

``BatchBackend.complete(request)`` builds the provider's request body and hands it to the
:class:`Collector`, which gathers the calls of every live trajectory and submits them as one
batch when no new call has come for ``window_s`` (all trajectories are then waiting on it:
SPoE's step t of every trajectory goes in one batch, a two-turn Director condition in two),
or when a batch is full: the provider's line count or its size in bytes (``max_lines``,
``max_bytes`` of the driver). A poller per batch reads its results and resolves each call's
future with a Reply, or a typed ProviderError: a line's own error by its status (the output
and the error file are both read), a line the batch never ran or lost ``server``, a failed
batch ``client``.

**Retried in a later batch.** A line without a usable result is no longer tied to its batch
once the batch ends: the Reliable wrapper's retry (a retryable kind: 429, 5xx, a line an
expired batch never ran or a batch lost) sends it again in a later batch, up to its
``max_attempts``; a non-retryable error (a 400) is the call's typed error.

**Resumable, never twice.** Each call's ``custom_id`` is its reply-cache key (the request
and the serving identity). The ledger ``RUN_DIR/batches.jsonl`` (``batch_ledger``) records
the intent to submit before a batch is sent, the batch's id once it is, and which of its
lines had no usable result when it ends. A resumed run rebuilds its trajectories; a call
whose custom_id is in a batch of the ledger waits for that batch (polled again, its results
read again) instead of being submitted again; an intent whose batch id was never written is
looked up at the provider (its batches listed) before anything is sent.

**The cost cap.** Under ``--max-cost`` (``engine.budget``) each line's estimated cost
(``backends.tokens``, at the price table's batch price) is committed before its batch is
submitted, and the first call of a trajectory is submitted only while what the run spent and
committed is under the cap; a refused call ends its trajectory unjournaled.

A provider's side is a :class:`~.batch_status.Driver`; ``batch_openai.py`` and
``batch_gemini.py`` are the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.backend import ProviderError
from ..engine.budget import BUDGET, Budget, CostCapped
from ..engine.cache import request_key
from ..engine.errors import UnseenError
from ..engine.runner import CURRENT_KEY
from ..engine.types import Reply, Request
from . import batch_ledger
from .batch_ledger import LEDGER, BatchRecord, Recovered
from .batch_status import CANCELLED, DONE, EXPIRED, FAILED, FINAL, Driver, Status

__all__ = ["LEDGER", "BatchBackend", "BatchLedgerError", "Collector", "batch_backend"]


class BatchLedgerError(UnseenError):
    """A resume that cannot tell whether a batch it was sending reached the provider."""


@dataclass
class _Waiter:
    """One call waiting on a line: its future, its trajectory and that run's budget."""

    fut: asyncio.Future
    key: str | None
    budget: Budget | None
    estimate: float = 0.0  # committed to the budget while the line's batch runs


@dataclass
class _Line:
    encoded: Any  # as the driver sends it (Driver.encode)
    size: int
    estimate: float
    waiters: list[_Waiter]


def _missing(batch_id: str, custom_id: str, status: Status) -> ProviderError:
    """The error of a line a finished batch has no result for."""
    if status.state == FAILED:
        return ProviderError("client", f"batch {batch_id} failed: {status.error or '?'}")
    if status.state == EXPIRED:
        return ProviderError("server", f"batch {batch_id} expired before this request ran")
    if status.state == CANCELLED:
        return ProviderError("server", f"batch {batch_id} was cancelled before this request "
                                       "ran")
    return ProviderError("server", f"batch {batch_id} has no result for this request (in "
                                   "neither its output nor its error file)")


@dataclass
class Collector:
    """Gathers calls into batches, submits, polls and resolves them (one per backend)."""

    driver: Driver
    window_s: float = 2.0
    poll_s: float = 30.0
    max_lines: int = 50_000
    max_bytes: int = 200_000_000
    ledger: Path | None = None
    cost_of: Callable[[Reply], float] | None = None  # a reply's cost, for the cost cap
    pending: dict[str, _Line] = field(default_factory=dict)
    state: Recovered = field(default_factory=Recovered)
    submitted: int = 0
    _bytes: int = 0  # of the pending lines
    _timer: asyncio.TimerHandle | None = None
    _submitting: asyncio.Lock = field(default_factory=asyncio.Lock)
    _followers: dict[str, _Follower] = field(default_factory=dict)
    _tasks: set[asyncio.Task] = field(default_factory=set)

    def attach(self, run_dir: Path) -> None:
        """Read the run directory's ledger: the batches a killed run left."""
        self.ledger = Path(run_dir) / LEDGER
        self.state = batch_ledger.read(self.ledger, self.driver.name)

    async def recover(self) -> None:
        """Find the batch of each intent the ledger has without one (the process died
        between submitting and writing its id): followed if the provider has it, its lines
        free to go again if not. A ProviderError (the list failed) is raised."""
        for intent in list(self.state.intents.values()):
            bid = await self.driver.find(intent.id, intent.at)
            if bid is None:
                self._write({"event": "abandoned", "intent": intent.id})
            else:
                self._write({"event": "submitted", "batch": bid, "intent": intent.id,
                             "custom_ids": intent.custom_ids, "recovered": True})
                self.state.map(BatchRecord(bid, list(intent.custom_ids)))
            del self.state.intents[intent.id]

    def _write(self, event: dict[str, Any]) -> None:
        batch_ledger.write(self.ledger, self.driver.name, event)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)  # held: the loop keeps only a weak reference
        task.add_done_callback(self._tasks.discard)
        return task

    def _deliver(self, waiter: _Waiter, result: Reply | BaseException) -> None:
        if waiter.budget is not None:
            cost = self.cost_of(result) if isinstance(result, Reply) and self.cost_of else 0.0
            waiter.budget.settle(waiter.estimate, waiter.key, cost)
            waiter.estimate = 0.0
        if not waiter.fut.done():
            waiter.fut.set_result(result)

    async def call(self, custom_id: str, body: Any, estimate: float = 0.0) -> Reply:
        """The reply to one call, when its batch has its results (``estimate``: its cost in
        US dollars, committed under a cost cap while its batch runs)."""
        waiter = _Waiter(asyncio.get_running_loop().create_future(), CURRENT_KEY.get(),
                         BUDGET.get())
        batch = self.state.batches.get(self.state.known.get(custom_id, ""))
        if batch is not None and batch.results is not None:  # ended: its result again
            got = batch.results.get(custom_id)
            self._deliver(waiter, got if got is not None else ProviderError(
                "server", f"batch {batch.id} has no result for this request"))
        elif batch is not None:  # a running batch, or a killed run's
            self._follow(batch).waiting.setdefault(custom_id, []).append(waiter)
        elif (line := self.pending.get(custom_id)) is not None:
            line.waiters.append(waiter)  # the same request twice: one line
        else:
            encoded, size = self.driver.encode(custom_id, body)
            self.pending[custom_id] = _Line(encoded, size, estimate, [waiter])
            self._bytes += size
            self._arm()
        result = await waiter.fut
        if isinstance(result, BaseException):
            raise result
        return result

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if len(self.pending) >= self.max_lines or self._bytes >= self.max_bytes:
            self._spawn(self._submit())
            return
        self._timer = loop.call_later(self.window_s, lambda: self._spawn(self._submit()))

    async def _submit(self) -> None:
        async with self._submitting:
            while self.pending:  # every line waiting now: as many batches as they fill
                take = self._take()
                if take:
                    await self._send(take)

    def _take(self) -> list[tuple[str, _Line]]:
        """The next batch's lines, in the order they came, up to the driver's line count and
        bytes; under a cost cap, each call admitted by its budget or refused."""
        take: list[tuple[str, _Line]] = []
        size = 0
        for cid, line in list(self.pending.items()):
            if len(take) >= self.max_lines or (take and size + line.size > self.max_bytes):
                break
            del self.pending[cid]
            self._bytes -= line.size
            if line.size > self.max_bytes:  # the provider would refuse the whole batch
                for w in line.waiters:
                    self._deliver(w, ProviderError(
                        "client", f"a request of {line.size} bytes is more than a "
                        f"{self.driver.name} batch may hold ({self.max_bytes} bytes)"))
                continue
            admitted = []
            for w in line.waiters:
                if w.budget is None or w.budget.admit(w.key, line.estimate):
                    w.estimate = line.estimate if w.budget is not None else 0.0
                    admitted.append(w)
                else:
                    self._deliver(w, CostCapped(f"the cost cap of ${w.budget.cap:g} is "
                                                "reached"))
            if admitted:
                line.waiters = admitted
                take.append((cid, line))
                size += line.size
        return take

    async def _send(self, take: list[tuple[str, _Line]]) -> None:
        cids = [cid for cid, _ in take]
        intent = uuid.uuid4().hex
        at = time.time()
        self._write({"event": "intent", "intent": intent, "custom_ids": cids, "at": at})
        try:
            bid = await self.driver.submit([(cid, line.encoded) for cid, line in take], intent)
        except ProviderError as exc:
            try:  # an answer lost after the batch was made: it is found by its intent
                found = await self.driver.find(intent, at)
            except ProviderError:
                found = None  # the intent stays open: a resume looks for it again
            else:
                if found is None:
                    self._write({"event": "abandoned", "intent": intent})
            if found is None:
                for _, line in take:
                    for w in line.waiters:
                        self._deliver(w, exc)
                return
            bid = found
        self.submitted += 1
        self._write({"event": "submitted", "batch": bid, "intent": intent, "custom_ids": cids})
        batch = BatchRecord(bid, cids)
        self.state.map(batch)
        follower = self._follow(batch)
        for cid, line in take:
            follower.waiting.setdefault(cid, []).extend(line.waiters)

    def _follow(self, batch: BatchRecord) -> _Follower:
        follower = self._followers.get(batch.id)
        if follower is None or follower.finished:
            follower = _Follower(self, batch)
            self._followers[batch.id] = follower
        return follower

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _Follower:
    """Polls one batch and resolves the calls waiting on its lines."""

    def __init__(self, collector: Collector, batch: BatchRecord):
        self.collector, self.batch = collector, batch
        self.waiting: dict[str, list[_Waiter]] = {}
        self.finished = False
        self.task = collector._spawn(self._run())

    async def _run(self) -> None:
        c, b = self.collector, self.batch
        try:
            while True:
                status = await c.driver.poll(b.id)
                if status.state in FINAL:
                    break
                await asyncio.sleep(c.poll_s)
            got: dict[str, Reply | ProviderError] = {}
            if status.state in (DONE, EXPIRED, CANCELLED):
                got = await c.driver.results(status, b.custom_ids)
        except ProviderError as exc:  # the poll itself failed: the calls fail, retried
            self.finished = True
            for waiters in self.waiting.values():
                for w in waiters:
                    c._deliver(w, exc)
            return
        results: dict[str, Reply | ProviderError] = {}
        for cid in b.custom_ids:
            r = got.get(cid)
            results[cid] = r if r is not None else _missing(b.id, cid, status)
        unusable = [cid for cid, r in results.items() if isinstance(r, ProviderError)]
        b.state, b.results = status.state, results
        c.state.free(b.id, unusable)  # a later call of these sends them again
        c._write({"event": "ended", "batch": b.id, "state": status.state,
                  "provider_state": status.provider_state, "unusable": unusable})
        self.finished = True
        for cid, waiters in self.waiting.items():
            for w in waiters:
                c._deliver(w, results[cid])


def custom_id(provider: str, model: str, request: Request, serving: dict[str, Any]) -> str:
    """A call's id in a batch: its reply-cache key (64 hex characters, OpenAI's limit)."""
    return request_key(provider, model, request, serving)


_UNSET: Any = object()


class BatchBackend:
    """A backend whose calls go through its provider's batch API (``--batch``): the bare
    backend builds and reads them, its :class:`Collector` batches them."""

    batched = True  # Reliable: no per-call timeout (a batch may take its 24 h window)

    def __init__(self, inner: Any, driver: Driver, *, window_s: float = 2.0,
                 poll_s: float = 30.0):
        self.inner = inner
        self.collector = Collector(driver, window_s=window_s, poll_s=poll_s,
                                   max_lines=driver.max_lines, max_bytes=driver.max_bytes,
                                   cost_of=self._reply_cost)
        self.spec, self.provider, self.model = inner.spec, inner.provider, inner.model
        self.box_format, self.simulated = inner.box_format, inner.simulated
        self.cacheable, self.capabilities = inner.cacheable, inner.capabilities
        self.answers = getattr(inner, "answers", None)
        self.concurrency = self.collector.max_lines  # every live trajectory may wait
        self._price: Any = _UNSET
        self._rules: Any = None

    def __getattr__(self, name: str) -> Any:  # profile, image, payload, dropped, ...
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "batch": {
            "api": self.collector.driver.name, "window_s": self.collector.window_s,
            "poll_s": self.collector.poll_s, "batches": self.collector.submitted}}

    async def attach(self, run_dir: Path, todo: int) -> None:
        """The run directory's ledger: batches a killed run left are followed, not sent
        again (the runner calls this once before the first call)."""
        self.collector.attach(run_dir)
        try:
            await self.collector.recover()
        except ProviderError as exc:
            raise BatchLedgerError(
                f"{self.spec}: {run_dir} was sending a batch when it stopped, and the "
                f"provider's list of batches, which says whether it arrived, could not be "
                f"read ({exc.message}); run it again when the provider answers") from None

    async def identify(self) -> dict[str, Any]:
        return await self.inner.identify()

    def prepare(self, instances: list) -> None:
        self.inner.prepare(instances)

    def _price_of(self) -> Any:
        if self._price is _UNSET:  # at the first call: the run's price file is in use
            from .prices import price_for

            self._price = price_for(self.model)
        return self._price

    def _reply_cost(self, reply: Reply) -> float:
        price = self._price_of()
        return 0.0 if price is None else float(price.cost(reply.usage, True))

    def estimate(self, request: Request) -> float:
        """What ``request`` will cost through the batch API, in US dollars: its tokens by
        the provider's rules (``backends.tokens``, the dry run's) at the batch price."""
        price = self._price_of()
        if price is None:
            return 0.0
        from .tokens import count_request, rules_for

        if self._rules is None:
            self._rules = rules_for(self.inner)
        t = count_request(request, self._rules)
        return float(price.cost(t.usage(), True))

    async def complete(self, request: Request) -> Reply:
        serving = await self.inner.identify()
        cid = custom_id(self.provider, self.model, request, serving)
        estimate = self.estimate(request) if BUDGET.get() is not None else 0.0
        return await self.collector.call(cid, self.collector.driver.body(request), estimate)

    async def aclose(self) -> None:
        await self.collector.aclose()
        await self.inner.aclose()


def batch_backend(inner: Any, *, window_s: float = 2.0, poll_s: float = 30.0) -> BatchBackend:
    """``inner`` through its provider's batch API; a BackendConfigError for a backend that
    has none (vLLM, the simulator) or one spread over several servers."""
    from .base import BackendConfigError

    if getattr(inner, "servers", None):
        raise BackendConfigError(f"{inner.spec}: --batch sends one model's calls to one "
                                 "provider; give it one server")
    if inner.provider in ("openai", "openai-responses"):
        from .batch_openai import OpenAIBatches

        return BatchBackend(inner, OpenAIBatches(inner), window_s=window_s, poll_s=poll_s)
    if inner.provider == "gemini":
        from .batch_gemini import GeminiBatches

        return BatchBackend(inner, GeminiBatches(inner), window_s=window_s, poll_s=poll_s)
    raise BackendConfigError(f"{inner.spec}: --batch is for the openai, openai-responses and "
                             "gemini backends (their providers' batch APIs)")
