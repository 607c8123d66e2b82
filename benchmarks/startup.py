"""Start-up time of commands that run no graph, and what they import.

Runs each command ``--repeats`` times in a fresh interpreter (as hyperfine does, one warm-up
run first), interleaved with a bare ``python -c pass`` of the same interpreter, and prints
the median wall time and CPU time (user + system) and their ratios to the bare
interpreter's (targets: ``--help`` and every listing command within 4x, ``import
unseen.api`` within 8x), and beside them, as a floor, the ``--help`` of a two-command typer
app that imports nothing of unseen. A help or a listing is replayed from its record after its first
run (``unseen/cli_replay.py``): "warm" is that, what a user meets from the second time on;
"cold" (``UNSEEN_CLI_CACHE=0``) runs the command afresh, as the first time after a change.
``--before REF`` times the same commands on the code of commit REF too (``before.py``), in
the same rounds. Then, from ``python -X importtime``, what each cold command imports of
the heavy packages, and its heaviest top-level imports. Figures, not assertions: the test
suite checks the behaviour (``tests/cli/test_startup.py``).

    python benchmarks/startup.py [--repeats 15] [--before REF]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from before import env_with, tree
from cpu_per_call import usage_of

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
         "textual", "statsmodels", "numpy", "PIL", "pydantic", "typer", "rich")
CLI = "from unseen.cli import main; import sys; sys.argv[0] = 'unseen'; main()"
#: a floor beside the commands: typer's rich help of a two-command app, nothing of unseen
TYPER_HELP = ("import typer\napp = typer.Typer(add_completion=False)\n"
              "@app.command()\ndef run(n: int = 1):\n    'Run.'\n"
              "@app.command()\ndef show(x: str = ''):\n    'Show.'\napp()")
SWITCH = "UNSEEN_CLI_CACHE"  # 0: no replay (unseen/cli_replay.py)


def timed(runs: dict[str, tuple[list[str], dict[str, str]]], repeats: int, cwd: str
          ) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) of each run, the runs taken in turn in every repeat (so the machine's
    drift reaches them alike), after one warm-up run of each (which records the warm
    runs' output)."""
    for argv, env in runs.values():
        usage_of(argv, env, cwd)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (argv, env) in runs.items():
            times[name].append(usage_of(argv, env, cwd))
    return times


def imports(args: list[str], cwd: str, env: dict[str, str]) -> dict[str, int]:
    """Top-level package → cumulative import time in µs, from ``-X importtime``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", CLI, *args],
                          capture_output=True, text=True, cwd=cwd, check=False, env=env)
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
    ap.add_argument("--before", metavar="REF", help="also time the code of this commit")
    args = ap.parse_args()
    cwd = tempfile.mkdtemp(prefix="unseen-startup-")  # no .env, no runs/ around
    base = {**os.environ, "COLUMNS": "100",
            # a record of its own: the warm runs replay what this run's warm-up recorded
            "XDG_CACHE_HOME": os.path.join(cwd, "cache")}
    base.pop(SWITCH, None)
    cold = {**base, SWITCH: "0"}
    trees: dict[str, str | None] = {"": None}
    if args.before:
        trees = {"before ": tree(args.before), "": None}
    runs: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], base),
        "a bare typer app's --help (floor)": ([sys.executable, "-c", TYPER_HELP, "--help"],
                                              base)}
    for tag, path in trees.items():
        runs[f"{tag}import unseen.api"] = ([sys.executable, "-c", "import unseen.api"],
                                           env_with(path, base))
        for name, argv in COMMANDS.items():
            cmd = [sys.executable, "-c", CLI, *argv]
            if path is None:
                runs[f"{name} (warm)"] = (cmd, base)
                runs[f"{name} (cold)"] = (cmd, cold)
            else:
                runs[f"{tag}{name}"] = (cmd, env_with(path, base))
    times = timed(runs, args.repeats, cwd)
    med = statistics.median
    bare = times.pop("python -c pass")
    bare_wall, bare_cpu = med(t for t, _ in bare), med(c for _, c in bare)
    print(f"python -c pass: median wall {bare_wall:.3f} s, CPU {bare_cpu:.3f} s "
          f"({args.repeats} runs, interleaved with the commands)")
    print(f"{'':34} {'wall':>7} {'ratio':>6} {'CPU':>7} {'ratio':>6}  target")
    for name, t in times.items():
        target = API_TARGET if name.endswith("import unseen.api") else TARGET
        wall, cpu = med(w for w, _ in t), med(c for _, c in t)
        print(f"{name:34} {wall:6.3f}s {wall / bare_wall:5.1f}x {cpu:6.3f}s "
              f"{cpu / bare_cpu:5.1f}x  {'-' if name.endswith('(floor)') else f'{target:g}x'}")
    for name, argv in COMMANDS.items():
        found = imports(argv, cwd, cold)
        heavy = [h.strip("[]") for h in found if h.startswith("[") and found[h]]
        top = sorted(((v, k) for k, v in found.items() if not k.startswith("[")), reverse=True)
        print(f"\n{name} (cold): imports {', '.join(heavy) or 'none'} of {', '.join(HEAVY)}")
        for us, mod in top[:6]:
            print(f"  {us / 1000:7.1f} ms  {mod}")


if __name__ == "__main__":
    main()
