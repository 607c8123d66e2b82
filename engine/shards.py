"""Sharding a run over processes, so CPU-heavy clients and graphs use more than one core.

Each shard process rebuilds its strategies and backends with the runner's ``setup``
callable (compiled graphs and network clients do not cross process boundaries), makes its
share of the plan's positions (every k-th, less those done) as it goes, runs them on its own
event loop, and streams each finished trajectory back as
one JSON line; the parent alone writes the journal. A backend's concurrency limit is divided
among the shards. A shard also sends its backends' limits up the same pipe (``limits.py``,
a line that starts with ``L``): their gauge before a trajectory whenever it changed, so the
parent's progress line shows the limits and 429s of all shards, and their snapshot when it
is done, so run.json records each backend's course and 429s over all shards. A shard that
dies leaves its unfinished items for the next resume.

Shards end quietly when the parent is gone (a SIGKILL): at the next trajectory they send or
within half a second, whichever comes first, with nothing printed, since nothing could
journal their work. Ctrl-C belongs to the parent: the fork server is started with SIGINT
ignored, which it and every shard it forks inherit (an ignored signal survives ``exec``,
and Python keeps it ignored), so none of them prints a ``KeyboardInterrupt`` traceback in
the middle of its imports; the parent stops the shards.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .collector import lighter_gc
from .journal import JournalWriter
from .limits import gauge, snapshot

#: the first byte of a line that carries a shard's limits, not a trajectory (``{``)
LIMITS = b"L"

#: runs of fewer trajectories than this take one process by default: shard start-up (about
#: 3 s of interpreter, imports and clients per shard) outweighs a second core there
#: (``--processes 3`` on a 1,000-trajectory run reached 0.81x one process's rate; on
#: 10,000 it reached 0.95 of ideal, ``benchmarks/throughput.py``)
AUTO_MIN_TRAJECTORIES = 5_000
#: the most shards a default picks: on two cores three kept both busy (the parent also
#: writes the journal), more only divide the concurrency further
AUTO_MAX_PROCESSES = 3


def auto_processes(trajectories: int, cores: int, concurrency: int) -> int:
    """The default number of processes for a run: 1 below :data:`AUTO_MIN_TRAJECTORIES`
    trajectories or on one core, else ``min(AUTO_MAX_PROCESSES, cores + 1, concurrency)``
    (each shard needs at least one call in flight)."""
    if trajectories < AUTO_MIN_TRAJECTORIES or cores < 2:
        return 1
    return max(1, min(AUTO_MAX_PROCESSES, cores + 1, concurrency))


def _child(setup: Callable, instances: list, shard: tuple[int, int], done: frozenset[str],
           conn: Any, config: Any) -> None:
    Runner = config["runner_class"]  # the parent's, so this module never imports the runner

    _exit_when_orphaned()
    backends: list = []
    said: dict = {}

    def up(data: bytes) -> None:
        try:
            conn.send_bytes(data)
        except OSError:  # the parent is gone: nothing can journal this or the rest
            os._exit(0)

    def send(t: Any) -> None:
        nonlocal said
        if (now := gauge(backends)) != said:  # the limits first: the line counts this
            up(LIMITS + json.dumps({"gauge": now}).encode())
            said = now
        up(t.model_dump_json().encode())

    try:
        per_backend = max(1, math.ceil(config["_concurrency"]))
        strategies, backends, score = setup(per_backend)
        runner = Runner(instances, strategies, backends, run_dir=Path("."),
                        config=config["run_config"], samples=config["samples"], score=score,
                        progress=False)
        work = runner.nested(done, *shard)  # this shard's share, made as it goes

        async def go() -> None:
            try:
                await runner.drain(work, send)
                up(LIMITS + json.dumps({"gauge": gauge(backends),
                                        "snapshot": snapshot(backends)}).encode())
            finally:
                for backend in backends:
                    await backend.aclose()

        with lighter_gc():  # as the parent's runner has it, for this process's share
            asyncio.run(go())
    except KeyboardInterrupt:
        pass
    finally:
        conn.close()


def _exit_when_orphaned(every_s: float = 0.5) -> None:
    """End this shard, quietly, once its parent has gone (its parent process changes: the
    fork server, or the run under spawn, has exited)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


async def _own_shard(runner: Any, done: frozenset[str], shards: int, concurrency: int,
                     sink: Callable, report: Callable) -> None:
    """This process's share (shard 0), on backends rebuilt with the per-shard concurrency."""
    strategies, backends, score = runner.setup(concurrency)
    local = type(runner)(runner.instances, strategies, backends, runner.run_dir, runner.config,
                         samples=runner.samples, score=score, progress=False)
    runner.own_backends = backends  # the progress line reads their limits as they go
    try:
        await local.drain(local.nested(done, 0, shards), sink)
        report(0, {"gauge": gauge(backends), "snapshot": snapshot(backends)})
    finally:
        runner.own_backends = None
        for backend in backends:
            await backend.aclose()


def _receive(conn: Any, writer: JournalWriter, count: Callable, report: Callable) -> None:
    while True:
        try:
            line = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if line[:1] == LIMITS:
            report(json.loads(line[1:]))
            continue
        rec = json.loads(line)
        writer.append_line(line)
        err = rec.get("error")
        cached = sum(1 for s in rec.get("steps", []) if s["reply"].get("cached"))
        count(rec["status"], err["kind"] if err else None, cached,
              err.get("message", "") if err else "", rec.get("notes"), rec.get("strategy", ""))


# What a shard needs, imported once by the fork server instead of by every shard (about a
# second of CPU each, more where bytecode is not cached)
PRELOAD = ["unseen.api", "unseen.backends.openai_chat", "openai", "langgraph.graph"]


def warm_up() -> None:
    """Start the fork server now, when a run will shard: its imports of :data:`PRELOAD`
    (about a second and a half of CPU) then run on another core while this process imports
    and builds the same things, instead of after them, and the shards start at once when
    :func:`run_sharded` asks (``benchmarks/throughput.py``, ``--processes 3``). A run that is
    then refused or fails stops it (:func:`stop_fork_server`)."""
    _context()


def stop_fork_server() -> None:
    """Stop the fork server that :func:`warm_up` started, for a run refused or failed
    before its shards ran: left alone it would import for another second or two before it
    noticed. A SIGTERM, then the standard library's own stop (``ForkServer._stop``, which
    waits for it); nothing where none runs. Shards it forked end by themselves once it has
    gone (:func:`_exit_when_orphaned`)."""
    if "forkserver" not in mp.get_all_start_methods():
        return  # spawn: no server was started
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if server is None or pid is None:
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(Exception):
        server._stop()


def _context() -> Any:
    """A fork server where the platform has one, else spawn. Plain fork is unsafe with the
    journal's thread and the event loop running; the fork server forks from a clean process
    that has imported :data:`PRELOAD`, so shards start without importing. The fork server
    is started here (once: ``ensure_running`` keeps a live one), SIGINT ignored while it is
    (see the module)."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    from multiprocessing import forkserver

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    main = threading.current_thread() is threading.main_thread()  # signal.signal's rule
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        forkserver.ensure_running()  # spawns it (a few ms): its imports run in it, after
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    return ctx


async def run_sharded(runner: Any, done: set[str], todo: int, writer: JournalWriter,
                      count: Callable, sink: Callable,
                      report: Callable[[int, dict], None]) -> None:
    """Run the ``todo`` items of ``runner``'s plan not in ``done`` over ``runner.processes``
    shards, each making its own share of the plan's positions as it goes (no list of the
    items is made or sent): this process takes the first, so its work starts while the
    others start; raise if a shard could not start or died. ``report(shard, state)`` gets
    what each shard says of its backends' limits."""
    k = max(1, min(runner.processes, todo))
    finished = frozenset(done)  # sent to each shard, which skips what it holds
    ctx = _context()
    limit = max(b.concurrency for b in runner.backends)
    config = {"run_config": runner.config, "_concurrency": limit / k,
              "runner_class": type(runner), "samples": runner.samples}
    procs, threads, failures = [], [], []

    def launch() -> None:
        # the first start waits for the fork server's imports: off the event loop, so this
        # process's own shard runs meanwhile
        try:
            start_all()
        except BaseException as exc:  # re-raised on the event loop below
            failures.append(exc)

    def start_all() -> None:
        for j in range(1, k):
            recv_conn, send_conn = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(runner.setup, runner.instances, (j, k),
                                                    finished, send_conn, config), daemon=True)
            proc.start()
            send_conn.close()  # the child holds the only sending end: EOF when it exits
            thread = threading.Thread(
                target=_receive, daemon=True,
                args=(recv_conn, writer, count, functools.partial(report, j)))
            thread.start()
            procs.append(proc)
            threads.append(thread)

    launcher = threading.Thread(target=launch, daemon=True)
    launcher.start()
    try:
        await _own_shard(runner, finished, k, max(1, math.ceil(limit / k)), sink, report)
        await asyncio.to_thread(launcher.join)
        if failures:
            raise RuntimeError(f"could not start the shard processes: {failures[0]!r}") \
                from failures[0]
        await asyncio.to_thread(_join_all, threads)
        # every pipe is closed: the children are exiting; give them time to finish cleanly
        await asyncio.to_thread(lambda: [p.join(timeout=30) for p in procs])
    finally:
        launcher.join()
        for proc in procs:  # interrupted, or a child that hangs on exit
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=10)
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} of {k} shard processes failed (exit codes {failed});"
                           " finished trajectories are saved: rerun to resume")


def _join_all(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join()
