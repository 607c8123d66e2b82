"""Throughput and memory against a local server that answers after 200 ms.

Starts the fake OpenAI server (tests/fake_providers.py) in its own process, then runs the
`direct` strategy through the real `openai` SDK at concurrency 32. The ideal is
32 / 0.2 s = 160 requests/s (target: at least 90 %). The client is CPU-bound (the openai
SDK and LangGraph cost ~8 ms of CPU per trajectory here), so the run is sharded over three
processes (``--processes``); the rates include the ~3 s the shards take to start. Memory:
resident set size after 1,000 trajectories and after growing the same run to 10,000
(target: flat), for the parent and the largest shard. First, CPU per call of ``unseen run``
beside a bare openai-SDK client making the same calls to the same (instant) server, both
fresh processes, start-up included (``cpu_per_call.py``; target: 2.5 ms, and the ratio).

    python benchmarks/throughput.py [--small N] [--large N] [--processes K] [--cpu-only]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import unseen
from unseen.evals.scenefunri.data.sample import write_test_set

ROOT = Path(__file__).resolve().parents[1]
DELAY_S = 0.2
CONCURRENCY = 32


def child_peak_mb() -> float:
    """Largest resident set of any finished child process (the shards), in MB."""
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_providers.py"), "--delay", str(DELAY_S),
         "--text", '{"box": [100, 100, 300, 300]}'],
        stdout=subprocess.PIPE, text=True,
    )
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1"):
        proc.kill()
        raise SystemExit(f"fake server did not start: {url!r}")
    return proc, url


async def run_to(total: int, data: Path, out: Path, url: str, processes: int = 1
                 ) -> tuple[float, int, float]:
    samples = -(-total // 24)  # the sample set has 24 instances
    t0 = time.perf_counter()
    res = await unseen.run_async(
        data, ["direct"], ["openai:gpt-4o"], samples=samples, out=out, concurrency=CONCURRENCY,
        cache=False, base_url=url + "/v1", progress=False, timeout_s=30, processes=processes,
    )
    wall = time.perf_counter() - t0
    steady = (res.done - 1) / (res.seconds - res.first_s) if res.done > 1 else float("nan")
    return wall, res.done, steady


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10000)
    # three shards on two cores: the parent also writes the journal and receives the
    # shards' lines, so a third event loop keeps both cores busy (measured: 2 → 0.87, 3 → 0.89)
    ap.add_argument("--processes", type=int, default=3, help="shards")
    ap.add_argument("--cpu-rounds", type=int, default=3, help="rounds of the CPU comparison")
    ap.add_argument("--cpu-only", action="store_true", help="only the CPU comparison")
    args = ap.parse_args()
    from cpu_per_call import compare, report

    report(compare(1008, args.cpu_rounds))
    if args.cpu_only:
        return
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    proc, url = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = write_test_set(Path(tmp) / "data")
            # warm up: imports and connection set-up are not what is measured
            asyncio.run(run_to(CONCURRENCY * 2, data, Path(tmp) / "warm", url))
            out = Path(tmp) / "run"
            sec, done, steady = asyncio.run(run_to(args.small, data, out, url, args.processes))
            rate = done / sec
            ideal = CONCURRENCY / DELAY_S
            rss_small, child_small = rss_mb(), child_peak_mb()
            print(f"{done} trajectories in {sec:.1f} s: {rate:.1f} req/s; ideal "
                  f"{CONCURRENCY / DELAY_S:.0f}; ratio {rate / (CONCURRENCY / DELAY_S):.3f} "
                  f"(target >= 0.90); after start-up {steady:.1f} req/s, ratio {steady / ideal:.3f}")
            print(f"RSS after {done}: parent {rss_small:.0f} MB, largest shard {child_small:.0f} MB")
            sec2, done2, steady2 = asyncio.run(run_to(args.large, data, out, url, args.processes))
            rss_large, child_large = rss_mb(), child_peak_mb()
            rate2 = done2 / sec2
            print(f"+{done2} more in {sec2:.1f} s: {rate2:.1f} req/s; ratio "
                  f"{rate2 / ideal:.3f}; after start-up {steady2:.1f} req/s, ratio {steady2 / ideal:.3f}")
            print(f"RSS after {done + done2}: parent {rss_large:.0f} MB (ratio "
                  f"{rss_large / rss_small:.3f}), largest shard {child_large:.0f} MB (ratio "
                  f"{child_large / child_small:.3f}) (target: flat, ~1.0)")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
