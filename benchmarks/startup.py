"""Start-up time of commands that run no graph, and what they import.

Runs each command ``--repeats`` times in a fresh interpreter (as hyperfine does, one warm-up
run first), interleaved with a bare ``python -c pass`` of the same interpreter, and prints
the best and median wall time and the ratio of the medians to the bare interpreter's
(targets: ``--help`` and every listing command within 4x, ``import unseen.api`` within
8x); then, from ``python -X importtime``, whether LangGraph, LangChain
core and LangSmith were imported, and the heaviest top-level imports. Figures, not
assertions: the test suite checks the behaviour (``tests/cli/test_startup.py``: no langgraph in
``sys.modules``).

    python benchmarks/startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "unseen --help": ["--help"],
    "unseen strategies": ["strategies"],
    "unseen backends": ["backends"],
    "unseen benchmarks": ["benchmarks"],
    "unseen profiles": ["profiles"],
    "unseen prices": ["prices"],
    "unseen compare --help": ["compare", "--help"],
}
TARGET = 4.0  # x a bare interpreter, for the commands above
API_TARGET = 8.0  # x a bare interpreter, for `import unseen.api`
HEAVY = ("langgraph", "langchain_core", "langsmith", "openai", "google.genai", "matplotlib",
         "textual", "statsmodels")
CLI = "from unseen.cli import main; import sys; sys.argv[0] = 'unseen'; main()"


def timed(runs: dict[str, list[str]], repeats: int, cwd: str) -> dict[str, list[float]]:
    """Wall times of each command, the commands taken in turn in every repeat (so the
    machine's drift reaches them alike), after one warm-up run of each."""
    env = {**os.environ, "COLUMNS": "100"}
    for argv in runs.values():
        subprocess.run(argv, capture_output=True, env=env, cwd=cwd, check=False)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, argv in runs.items():
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, env=env, cwd=cwd, check=False)
            times[name].append(time.perf_counter() - t0)
    return times


def imports(args: list[str], cwd: str) -> dict[str, int]:
    """Top-level package → cumulative import time in µs, from ``-X importtime``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", CLI, *args],
                          capture_output=True, text=True, cwd=cwd, check=False)
    out: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(3)) == 1:  # a top-level import of the command
            out[m.group(4)] = out.get(m.group(4), 0) + int(m.group(2))
    every = {m.group(1) for m in re.finditer(r"\|\s+\d+ \| *(\S+)", proc.stderr)}
    for name in HEAVY:
        out[f"[{name}]"] = int(any(x == name or x.startswith(name + ".") for x in every))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    cwd = tempfile.mkdtemp(prefix="unseen-startup-")  # no .env, no runs/ around
    med = statistics.median
    runs = {"python -c pass": [sys.executable, "-c", "pass"],
            "import unseen.api": [sys.executable, "-c", "import unseen.api"],
            **{name: [sys.executable, "-c", CLI, *argv] for name, argv in COMMANDS.items()}}
    times = timed(runs, args.repeats, cwd)
    bare = times.pop("python -c pass")
    print(f"python -c pass: best {min(bare):.3f} s, median {med(bare):.3f} s "
          f"({args.repeats} runs, interleaved with the commands)")
    for name, t in times.items():
        target = API_TARGET if name == "import unseen.api" else TARGET
        ratio = med(t) / med(bare)
        print(f"{name:24} best {min(t):.3f} s  median {med(t):.3f} s  ratio {ratio:5.1f} "
              f"a bare interpreter (target {target:g}x: ratio to it {ratio / target:.2f})")
    for name, argv in COMMANDS.items():
        found = imports(argv, cwd)
        heavy = [h.strip("[]") for h in found if h.startswith("[") and found[h]]
        top = sorted(((v, k) for k, v in found.items() if not k.startswith("[")), reverse=True)
        print(f"\n{name}: imports {', '.join(heavy) or 'none'} of {', '.join(HEAVY)}")
        for us, mod in top[:6]:
            print(f"  {us / 1000:7.1f} ms  {mod}")


if __name__ == "__main__":
    main()
