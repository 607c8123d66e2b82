"""Throughput and memory of ``unseen run`` against a local server that answers after 200 ms.

Starts the fake OpenAI server (tests/fake_providers.py) in its own process, then runs the
command a user runs, ``unseen run -s direct -b openai:gpt-4o --concurrency 32 --quiet``, as a
fresh process, twice: the first ``--small`` trajectories with one process, and ``--large``
with ``--processes`` shards (default 3). The ideal is 32 / 0.2 s = 160 trajectories/s; each
rate counts from the command's start (interpreter, imports, planning and, with shards, their
start-up included) to the moment the journal holds that many trajectories (targets: at
least 0.90 of ideal over the first 1,000 with one process, 0.95 over 10,000 with three).

Memory: the peak resident set (``VmHWM`` in ``/proc/PID/status``) of every process of the
command (the command itself, and with shards the fork server and each shard, which are the
fork server's children), sampled while it runs; for the sharded run also each one's resident
set when the journal reached ``--small`` trajectories, against its peak over the whole run
(target: flat, ratio ~1.0).

Beside them, two floors measured in the same run: how long a fresh interpreter takes to
import LangGraph and the openai SDK (with that before the first call, the best ratio the
first ``--small`` can reach), and how fast a bare openai-SDK client (``bare_client.py``)
makes the same numbers of calls to the same server, from its start to its exit.

First, CPU per call of ``unseen run`` beside a bare openai-SDK client making the same calls to
the same (instant) server (``cpu_per_call.py``; target: 2.5 ms, and the ratio). ``--before
REF`` runs everything on the code of commit REF too (``before.py``), in the same run.

    python benchmarks/throughput.py [--small N] [--large N] [--processes K] [--before REF]
                                    [--rounds N] [--cpu-rounds N] [--cpu-only | --no-cpu]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from before import env_with, tree
from cpu_per_call import UNSEEN, bare_argv, compare, import_floor, report, start_server, usage_of

from unseen.evals.scenefunri.data.sample import write_test_set

DELAY_S = 0.2
CONCURRENCY = 32
IDEAL = CONCURRENCY / DELAY_S
INSTANCES = 24  # the test set's


def _status(pid: int, field: str) -> float | None:
    """A ``/proc/PID/status`` field in MB (None: the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Watch:
    """The command's processes by role, their peak resident sets, and their resident sets
    when the journal reached each mark."""

    def __init__(self, pid: int):
        self.pid = pid
        self.roles: dict[int, str] = {pid: "command"}
        self.peak: dict[int, float] = {}
        self.at: dict[int, dict[int, float]] = {}

    def sample(self) -> None:
        for child in _children(self.pid):
            if child not in self.roles and "forkserver" in _cmdline(child):
                self.roles[child] = "fork server"
        for server in [p for p, r in self.roles.items() if r == "fork server"]:
            for shard in _children(server):
                if shard not in self.roles:
                    n = sum(r.startswith("shard") for r in self.roles.values())
                    self.roles[shard] = f"shard {n + 1}"
        for pid in self.roles:
            hwm = _status(pid, "VmHWM")
            if hwm is not None:
                self.peak[pid] = max(self.peak.get(pid, 0.0), hwm)

    def mark(self, n: int) -> None:
        self.at[n] = {pid: rss for pid in self.roles
                      if (rss := _status(pid, "VmRSS")) is not None}


def timed_run(total: int, processes: int, data: Path, url: str, out: Path,
              env: dict[str, str], marks: tuple[int, ...] = ()) -> dict:
    """Run the command to ``total`` trajectories; seconds from its start to each mark and to
    ``total`` in the journal, to its exit, and what ``Watch`` saw."""
    samples = -(-total // INSTANCES)
    argv = [UNSEEN, "run", "--data", str(data), "-s", "direct", "-b", "openai:gpt-4o",
            "--base-url", url + "/v1", "--samples", str(samples), "--concurrency",
            str(CONCURRENCY), "--fixed-concurrency", "--no-cache", "--timeout", "30",
            "--processes", str(processes), "--quiet", "--out", str(out)]
    journal = out / "trajectories.jsonl"
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=out.parent, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    watch = Watch(proc.pid)
    reached: dict[int, float] = {}
    lines, fh = 0, None
    todo = sorted({1, *marks, total})
    last_sample = 0.0
    while proc.poll() is None or fh is None or lines < total:
        now = time.perf_counter()
        if now - last_sample > 0.05:
            watch.sample()
            last_sample = now
        if fh is None and journal.exists():
            fh = journal.open("rb")
        if fh is not None:
            lines += fh.read().count(b"\n")
            while todo and lines >= todo[0]:
                reached[todo[0]] = time.perf_counter() - t0
                watch.mark(todo.pop(0))
        if proc.poll() is not None and (fh is None or lines >= total or not fh.read(1)):
            break
        time.sleep(0.01)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.wait()
    exit_s = time.perf_counter() - t0
    if fh is not None:
        fh.close()
    if proc.returncode != 0 or total not in reached:
        raise SystemExit(f"the run failed ({proc.returncode}, {lines} lines): {err[-2000:]}")
    return {"reached": reached, "exit_s": exit_s, "watch": watch}


def bare_run(n: int, data: Path, url: str) -> float:
    """Seconds from start to exit of a bare openai-SDK client (``bare_client.py``) making
    ``n`` calls at the same concurrency to the same server: what the SDK alone reaches."""
    return usage_of(bare_argv(url, data, n))[0]


def print_floor(small: int, floor_s: float) -> None:
    """What the dependencies' imports alone leave of the first ``small``: a run that did
    nothing else before its first call, then ran at ideal, reaches this ratio at best."""
    best = small / (floor_s + small / IDEAL) / IDEAL
    print(f"floor: a fresh interpreter importing langgraph.graph and openai takes "
          f"{floor_s:.2f} s here, now; with that before the first call and ideal after it, "
          f"the first {small} reach {best:.3f} of ideal at best")


def print_runs(tag: str, first: dict, big: dict, small: int, large: int,
               processes: int) -> None:
    t1 = first["reached"][small]
    print(f"{tag}first {small} with 1 process: {t1:.2f} s from the command's start, "
          f"{small / t1:.1f}/s, ratio to ideal {small / t1 / IDEAL:.3f} (target >= 0.90); "
          f"the first trajectory after {first['reached'][1]:.2f} s, the rest at "
          f"{(small - 1) / (t1 - first['reached'][1]) / IDEAL:.3f} of ideal; "
          f"exit after {first['exit_s']:.2f} s; peak RSS "
          f"{max(first['watch'].peak.values()):.0f} MB")
    t2 = big["reached"][large]
    print(f"{tag}{large} with --processes {processes}: {t2:.2f} s from the command's start, "
          f"{large / t2:.1f}/s, ratio to ideal {large / t2 / IDEAL:.3f} (target >= 0.95); "
          f"the first {small}: {big['reached'][small]:.2f} s")
    w = big["watch"]
    for pid, role in w.roles.items():
        at = w.at.get(small, {}).get(pid)
        peak = w.peak.get(pid)
        if peak is None:
            continue
        flat = f"; at {small}: {at:.0f} MB, peak / that {peak / at:.3f}" if at else ""
        print(f"{tag}  {role:12} peak RSS {peak:.0f} MB over {large}{flat}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10000)
    # three shards on two cores: the parent also writes the journal and receives the
    # shards' lines, so a third event loop keeps both cores busy (measured: 2 → 0.87, 3 → 0.89)
    ap.add_argument("--processes", type=int, default=3, help="shards of the large run")
    ap.add_argument("--before", metavar="REF", help="also run the code of this commit")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each, interleaved")
    ap.add_argument("--cpu-rounds", type=int, default=3, help="rounds of the CPU comparison")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--cpu-only", action="store_true", help="only the CPU comparison")
    which.add_argument("--no-cpu", action="store_true", help="no CPU comparison")
    args = ap.parse_args()
    before = tree(args.before) if args.before else None
    if not args.no_cpu:
        report(compare(1008, args.cpu_rounds, before))
    if args.cpu_only:
        return
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key", "COLUMNS": "100"}
    proc, url = start_server(DELAY_S)
    trees = {"before: ": before, "": None} if before else {"": None}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = write_test_set(Path(tmp) / "data")
            results: dict[str, list[tuple[dict, dict]]] = {tag: [] for tag in trees}
            for r in range(args.rounds):
                # the order alternates, so the machine's drift reaches both alike
                for tag in list(trees) if r % 2 == 0 else list(trees)[::-1]:
                    where = env_with(trees[tag], env)
                    name = f"{tag.strip(': ') or 'after'}{r}"
                    first = timed_run(args.small, 1, data, url, Path(tmp) / f"{name}-small",
                                      where)
                    big = timed_run(args.large, args.processes, data, url,
                                    Path(tmp) / f"{name}-large", where, marks=(args.small,))
                    results[tag].append((first, big))
            print_floor(args.small, import_floor(5)[0])
            for n in (args.small, args.large):
                t = bare_run(n, data, url)
                print(f"a bare openai client making {n} such calls in one process: {t:.2f} s "
                      f"from its start to its exit, ratio to ideal {n / t / IDEAL:.3f}")
            print(f"ideal {IDEAL:.0f} trajectories/s ({CONCURRENCY} in flight, "
                  f"{DELAY_S * 1000:.0f} ms each); of {args.rounds} round(s), the median run "
                  "of each")
            for tag, runs in results.items():
                mid = len(runs) // 2
                first = sorted((f for f, _ in runs), key=lambda f: f["reached"][args.small])[mid]
                big = sorted((b for _, b in runs), key=lambda b: b["reached"][args.large])[mid]
                print_runs(tag, first, big, args.small, args.large, args.processes)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
