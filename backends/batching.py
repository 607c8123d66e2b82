"""Batch APIs under the one backend protocol: a strategy's call waits on a future that a
collector resolves, so strategies stay LangGraph graphs and every step is journaled as any.

``BatchBackend.complete(request)`` builds the provider's request body and hands it to the
:class:`Collector`, which gathers the calls of every live trajectory and submits them as one
batch when no new call has come for ``window_s`` (all trajectories are then waiting on it:
SPoE's step t of every trajectory goes in one batch, a two-turn Director condition in two),
or when ``max_lines`` are waiting. A poller per batch reads its results and resolves each
call's future with a Reply, or a typed ProviderError (a line's own error, by its status; a
line an expired batch never ran: ``server``, retried in a later batch; a failed batch:
``client``).

**Resumable, never twice.** Each call's ``custom_id`` is its reply-cache key (the request
and the serving identity), and the ledger ``RUN_DIR/batches.jsonl`` records every batch
submitted (its id and custom_ids) before its results are read and when it ends. A resumed run
rebuilds its trajectories; a call whose custom_id is in a batch of the ledger that has not
failed or expired waits for that batch (polled again, its results read again) instead of
being submitted again.

A provider's side is a :class:`Driver`: ``body(request)``, ``submit(lines)``, ``poll(id)``
and ``results(batch)``; ``batch_openai.py`` and ``batch_gemini.py`` are the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.backend import ProviderError
from ..engine.cache import request_key
from ..engine.types import Reply, Request
from .batch_status import CANCELLED, DONE, EXPIRED, FAILED, FINAL, Driver, Status

LEDGER = "batches.jsonl"


@dataclass
class _Batch:
    id: str
    custom_ids: list[str]
    task: asyncio.Task | None = None
    state: str = "running"


@dataclass
class Collector:
    """Gathers calls into batches, submits, polls and resolves them (one per backend)."""

    driver: Driver
    window_s: float = 2.0
    poll_s: float = 30.0
    max_lines: int = 50_000
    ledger: Path | None = None
    clock: Callable[[], float] = time.monotonic
    pending: dict[str, tuple[dict[str, Any], list[asyncio.Future]]] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)  # custom_id → batch id (the ledger)
    submitted: int = 0
    _timer: asyncio.TimerHandle | None = None
    _submitting: asyncio.Lock = field(default_factory=asyncio.Lock)

    def attach(self, run_dir: Path) -> None:
        """Read the run directory's ledger: the batches a killed run left."""
        self.ledger = Path(run_dir) / LEDGER
        if not self.ledger.exists():
            return
        for line in self.ledger.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if not isinstance(event, dict) or event.get("driver") != self.driver.name:
                continue
            bid = str(event.get("batch", ""))
            if event.get("event") == "submitted":
                self.batches.setdefault(bid, _Batch(bid, list(event.get("custom_ids", []))))
                for cid in event.get("custom_ids", []):
                    self.known[cid] = bid
            elif event.get("event") == "ended" and bid in self.batches:
                self.batches[bid].state = str(event.get("state", DONE))
                if event.get("state") in (FAILED, EXPIRED, CANCELLED):
                    for cid in self.batches[bid].custom_ids:
                        if self.known.get(cid) == bid:
                            del self.known[cid]

    def _write(self, event: dict[str, Any]) -> None:
        if self.ledger is None:
            return
        with open(self.ledger, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"driver": self.driver.name, **event}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())  # a batch paid for is never forgotten

    async def call(self, custom_id: str, body: dict[str, Any]) -> Reply:
        """The reply to one call, when its batch has its results."""
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        bid = self.known.get(custom_id)
        if bid is not None and self.batches.get(bid) and self.batches[bid].state != DONE:
            self._follow(self.batches[bid]).add(custom_id, fut)  # a killed run's batch
        elif bid is not None and self.batches.get(bid):
            self._follow(self.batches[bid]).add(custom_id, fut)  # ended: its results again
        elif custom_id in self.pending:
            self.pending[custom_id][1].append(fut)  # the same request twice: one line
        else:
            self.pending[custom_id] = (body, [fut])
            self._arm()
        result = await fut
        if isinstance(result, ProviderError):
            raise result
        return result

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
        if len(self.pending) >= self.max_lines:
            loop.create_task(self._submit())
            return
        self._timer = loop.call_later(self.window_s, lambda: loop.create_task(self._submit()))

    async def _submit(self) -> None:
        async with self._submitting:
            if not self.pending:
                return
            take = dict(list(self.pending.items())[: self.max_lines])
            for cid in take:
                del self.pending[cid]
            lines = [(cid, body) for cid, (body, _) in take.items()]
            try:
                bid = await self.driver.submit(lines)
            except ProviderError as exc:
                for _, futs in take.values():
                    for f in futs:
                        if not f.done():
                            f.set_result(exc)
                return
            self.submitted += 1
            self._write({"event": "submitted", "batch": bid, "custom_ids": list(take),
                         "at": time.time()})
            batch = _Batch(bid, list(take))
            self.batches[bid] = batch
            for cid in take:
                self.known[cid] = bid
            follower = self._follow(batch)
            for cid, (_, futs) in take.items():
                for f in futs:
                    follower.add(cid, f)
            if self.pending:
                self._arm()

    def _follow(self, batch: _Batch) -> _Follower:
        follower = _FOLLOWERS.get((id(self), batch.id))
        if follower is None or follower.finished:
            follower = _Follower(self, batch)
            _FOLLOWERS[(id(self), batch.id)] = follower
        return follower

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for (owner, _), follower in list(_FOLLOWERS.items()):
            if owner == id(self) and follower.task is not None:
                follower.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task


class _Follower:
    """Polls one batch and resolves the futures waiting on its lines."""

    def __init__(self, collector: Collector, batch: _Batch):
        self.collector, self.batch = collector, batch
        self.waiting: dict[str, list[asyncio.Future]] = {}
        self.finished = False
        self.task: asyncio.Task | None = asyncio.get_running_loop().create_task(self._run())

    def add(self, custom_id: str, fut: asyncio.Future) -> None:
        self.waiting.setdefault(custom_id, []).append(fut)

    async def _run(self) -> None:
        c, b = self.collector, self.batch
        try:
            while True:
                status = await c.driver.poll(b.id)
                if status.state in FINAL:
                    break
                await asyncio.sleep(c.poll_s)
            results: dict[str, Reply | ProviderError] = {}
            if status.state in (DONE, EXPIRED, CANCELLED):
                results = await c.driver.results(status, b.custom_ids)
            b.state = status.state
            c._write({"event": "ended", "batch": b.id, "state": status.state,
                      "provider_state": status.provider_state, "at": time.time()})
            if status.state != DONE:
                for cid in b.custom_ids:
                    if c.known.get(cid) == b.id:
                        del c.known[cid]
        except ProviderError as exc:  # the poll itself failed: the calls fail, retried
            status, results = Status("running"), {}
            self._resolve_all(exc)
            return
        finally:
            self.finished = True
        for cid, futs in self.waiting.items():
            got = results.get(cid)
            if got is None:
                why = {FAILED: ("client", f"batch {b.id} failed: {status.error or '?'}"),
                       EXPIRED: ("server", f"batch {b.id} expired before this request ran"),
                       CANCELLED: ("server", f"batch {b.id} was cancelled before this "
                                             "request ran")}.get(
                    status.state, ("malformed", f"batch {b.id} has no result for {cid}"))
                got = ProviderError(*why)
            for f in futs:
                if not f.done():
                    f.set_result(got)

    def _resolve_all(self, exc: ProviderError) -> None:
        for futs in self.waiting.values():
            for f in futs:
                if not f.done():
                    f.set_result(exc)


_FOLLOWERS: dict[tuple[int, str], _Follower] = {}


def custom_id(provider: str, model: str, request: Request, serving: dict[str, Any]) -> str:
    """A call's id in a batch: its reply-cache key (64 hex characters, OpenAI's limit)."""
    return request_key(provider, model, request, serving)


class BatchBackend:
    """A backend whose calls go through its provider's batch API (``--batch``): the bare
    backend builds and reads them, its :class:`Collector` batches them."""

    batched = True  # Reliable: no per-call timeout (a batch may take its 24 h window)

    def __init__(self, inner: Any, driver: Driver, *, window_s: float = 2.0,
                 poll_s: float = 30.0):
        self.inner = inner
        self.collector = Collector(driver, window_s=window_s, poll_s=poll_s,
                                   max_lines=getattr(driver, "max_lines", 50_000))
        self.spec, self.provider, self.model = inner.spec, inner.provider, inner.model
        self.box_format, self.simulated = inner.box_format, inner.simulated
        self.cacheable, self.capabilities = inner.cacheable, inner.capabilities
        self.answers = getattr(inner, "answers", None)
        self.concurrency = self.collector.max_lines  # every live trajectory may wait

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

    async def identify(self) -> dict[str, Any]:
        return await self.inner.identify()

    def prepare(self, instances: list) -> None:
        self.inner.prepare(instances)

    async def complete(self, request: Request) -> Reply:
        serving = await self.inner.identify()
        cid = custom_id(self.provider, self.model, request, serving)
        return await self.collector.call(cid, self.collector.driver.body(request))

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
