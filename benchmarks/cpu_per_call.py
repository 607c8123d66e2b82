"""CPU per call of ``unseen run`` beside a bare openai-SDK client, same server, same run.

Both run as fresh processes (start-up included, as a user pays it) against one local fake
OpenAI server that answers at once; each makes ``--calls`` chat calls (the `direct` strategy
over the 24-image test set for unseen; one image and a short text each for the bare client,
``bare_client.py``) at concurrency 32. A process's CPU is its user + system time from
``os.wait4``; rounds interleave the two, so the machine's drift hits both alike. Prints each
round, the medians, the ratio unseen / bare, and unseen's CPU per call against the 2.5 ms
target. ``--before REF`` runs the code of commit REF too (``before.py``), in the same
rounds. ``throughput.py`` runs this too.

    python benchmarks/cpu_per_call.py [--calls 1008] [--rounds 3] [--before REF]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 2.5
CONCURRENCY = 32
#: the console script a user runs, beside this interpreter
UNSEEN = str(Path(sys.executable).with_name("unseen"))


def usage_of(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None
             ) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of the process ``argv`` (and nothing else). A run
    that fails stops the benchmark: one that fails at once would time as fast as a bare
    interpreter (a stale install of unseen measured 1.0x)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")  # to its end: it cannot fill the pipe
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if (code := os.waitstatus_to_exitcode(status)) != 0:
        raise SystemExit(f"{' '.join(argv[1:3])} failed ({code}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def cpu_of(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """User + system CPU seconds of the process ``argv`` (and nothing else)."""
    return usage_of(argv, env, cwd)[1]


def bare_argv(url: str, data: Path, n: int) -> list[str]:
    """The bare openai-SDK client (``bare_client.py``) making ``n`` calls to the server at
    ``url`` at :data:`CONCURRENCY`."""
    return [sys.executable, str(ROOT / "benchmarks" / "bare_client.py"), url + "/v1",
            str(data), str(n), str(CONCURRENCY)]


#: what no run of unseen can avoid importing: its graph library and the provider's SDK
FLOOR_IMPORTS = "import langgraph.graph, openai"


def import_floor(rounds: int = 3, stmt: str = FLOOR_IMPORTS) -> tuple[float, float]:
    """Median (wall, CPU) seconds of a fresh interpreter that runs ``stmt`` and exits: the
    start-up that unseen's dependencies alone cost on this machine, now."""
    walls, cpus = zip(*(usage_of([sys.executable, "-c", stmt]) for _ in range(rounds)),
                      strict=True)
    return statistics.median(walls), statistics.median(cpus)


def start_server(delay: float = 0.0, text: str = '{"box": [100, 100, 300, 300]}'
                 ) -> tuple[subprocess.Popen, str]:
    """The fake OpenAI server in its own process, answering ``text`` after ``delay`` s."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_providers.py"), "--delay", str(delay),
         "--text", text], stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1"):
        proc.kill()
        raise SystemExit(f"fake server did not start: {url!r}")
    return proc, url


def compare(calls: int, rounds: int, before: str | None = None) -> dict[str, list[float]]:
    """Per-call CPU (ms) of each round, for "unseen", "bare" and, with ``before`` (a
    folder from ``before.tree``), "before"."""
    from before import env_with

    from unseen.evals.scenefunri.data.sample import write_test_set

    proc, url = start_server()
    out: dict[str, list[float]] = {"unseen": [], "bare": []}
    if before:
        out["before"] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = write_test_set(Path(tmp) / "data")
            n_inst = sum(1 for _ in (data / "images").glob("*.png"))
            samples = -(-calls // n_inst)
            n = samples * n_inst
            env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key",
                   "COLUMNS": "100"}
            bare = bare_argv(url, data, n)
            for r in range(rounds):
                def run(name: str, r: int = r) -> list[str]:
                    return [UNSEEN, "run", "--data", str(data),
                            "-s", "direct", "-b", "openai:gpt-4o", "--base-url", url + "/v1",
                            "--samples", str(samples), "--concurrency", str(CONCURRENCY),
                            "--fixed-concurrency", "--no-cache", "--processes", "1",
                            "--out", str(Path(tmp) / f"{name}{r}")]

                # alternate the order, so none always meets a warmer page cache
                order = [("bare", bare, env), ("unseen", run("unseen"), env)]
                if before:
                    order.append(("before", run("before"), env_with(before, env)))
                for name, argv, where in order if r % 2 == 0 else order[::-1]:
                    out[name].append(cpu_of(argv, where, tmp) / n * 1000)
            out["calls"] = [n]
            # LangGraph's import, beside the SDK's that the bare client pays too
            out["langgraph_import"] = [import_floor(rounds, FLOOR_IMPORTS)[1]
                                       - import_floor(rounds, "import openai")[1]]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def report(res: dict[str, list[float]]) -> None:
    med = statistics.median
    n = res["calls"][0]
    names = [k for k in ("before", "unseen", "bare") if k in res]
    for name in names:
        vals = " ".join(f"{v:.2f}" for v in res[name])
        print(f"{name:7} CPU per call over {n} calls, start-up included: median "
              f"{med(res[name]):.2f} ms (rounds: {vals})")
    b = med(res["bare"])
    for name in names[:-1]:
        u = med(res[name])
        print(f"{name} / bare openai SDK: ratio {u / b:.2f}; its own share {u - b:.2f} ms "
              f"per call; against the {TARGET_MS} ms target: ratio {u / TARGET_MS:.2f}")
    if "langgraph_import" in res:
        lg = res["langgraph_import"][0] / n * 1000
        u = med(res["unseen"])
        print(f"of unseen's share, importing LangGraph (a fresh interpreter's `import "
              f"langgraph.graph, openai` less `import openai`, once per run) is {lg:.2f} ms "
              f"per call; the rest {u - b - lg:.2f} ms, unseen less that import / bare "
              f"{(u - lg) / b:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1008)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", metavar="REF", help="also run the code of this commit")
    args = ap.parse_args()
    from before import tree

    report(compare(args.calls, args.rounds, tree(args.before) if args.before else None))


if __name__ == "__main__":
    main()
