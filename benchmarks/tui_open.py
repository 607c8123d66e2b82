"""How fast ``unseen tui`` and ``unseen show`` open a run of 10,000 trajectories.

Makes a small simulated run (direct and spoe:T=3 over the test set), writes a journal of N
trajectories by repeating its records under new keys and instance ids (the dataset and
run.json are the small run's), then times (the median of three):

- what the user waits for: ``unseen tui RUN`` started as its own process on a pseudo-terminal
  of 120x40, from the start to the first screen painted with the run's rows (its status
  line read back from the terminal), imports and index included (target: under 1 s on 2
  cores), and that process's peak RSS (target < 300 MB);
- its parts, in one fresh process: the index (``RunDir.heads()``, the fields before each
  record's steps, and the rows the run's views make of them) against reading every record
  whole, and the first group opened and its first trajectory shown (a key press, a seek);
- ``unseen show RUN``'s summary (its tables read every record whole: the bootstrap needs
  them), for scale;

and the machine's load, which the figures follow.

    python benchmarks/tui_open.py [--n 10000] [--dir /tmp/tui_bench]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import io
import json
import os
import select
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

TARGET_S = 1.0
#: the console script a user runs, beside this interpreter
UNSEEN = str(Path(sys.executable).with_name("unseen"))


def small_run(root: Path, data: str = "d") -> Path:
    """``root/small``: direct and spoe:T=3 over six test-set instances, two simulators."""
    import unseen
    from unseen.evals.scenefunri.data.sample import write_test_set

    small = root / "small"
    if not (small / "trajectories.jsonl").is_file():
        unseen.run(write_test_set(root / data), ["direct", "spoe:T=3"],
                   ["sim", "sim:noisy,unparseable=0.5"], out=small, cache=False,
                   progress=False, limit=6)
    return small


def make_run(root: Path, n: int, as_samples: bool = False) -> Path:
    """``n`` trajectories: the small run's records repeated under new keys, each round under
    new instance ids (or, ``as_samples``, as further samples of the same instances, so that
    every id stays in the data set)."""
    small = small_run(root)
    recs = [json.loads(x) for x in (small / "trajectories.jsonl").read_text().splitlines()]
    big = root / (f"samples{n}" if as_samples else f"big{n}")
    big.mkdir(exist_ok=True)
    (big / "run.json").write_text((small / "run.json").read_text())
    with open(big / "trajectories.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = dict(recs[i % len(recs)])
            rec["key"] = f"k{i:07d}"
            if as_samples:
                rec["sample"] = i // len(recs)
            else:
                rec["instance_id"] = f"{rec['instance_id']}-{i // len(recs)}"
            fh.write(json.dumps(rec) + "\n")
    return big


def _median(fn, times: int = 3) -> tuple[float, object]:
    spent, out = [], None
    for _ in range(times):
        t = time.perf_counter()
        out = fn()
        spent.append(time.perf_counter() - t)
    return statistics.median(spent), out


def first_screen(run_dir: Path, n: int, timeout_s: float = 120.0) -> tuple[float, float]:
    """Seconds from starting ``unseen tui RUN`` on a 120x40 pseudo-terminal until the first
    screen with the run's rows is painted (the status line "N of N trajectories" and the
    filter box read back from the terminal), and the process's peak RSS in MB."""
    markers = (f"{n} of {n} trajectories".encode(), b"filter: instance id")
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([UNSEEN, "tui", str(run_dir)], stdin=slave, stdout=slave,
                            stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen, took, usage = b"", float("nan"), None

    def alive() -> bool:  # reaps with wait4 (not Popen.poll), which gives the rusage
        nonlocal usage
        if usage is None:
            pid, _, ru = os.wait4(proc.pid, os.WNOHANG)
            usage = ru if pid else None
        return usage is None

    try:
        while time.perf_counter() - t0 < timeout_s and alive():
            if select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 1 << 16)
                if all(m in seen for m in markers):
                    took = time.perf_counter() - t0
                    break
        os.write(master, b"q")  # quit as a user would
        deadline = time.perf_counter() + 20
        while alive() and time.perf_counter() < deadline:
            try:  # drain, so the app's last writes never block; EIO once it has gone
                if select.select([master], [], [], 0.2)[0]:
                    os.read(master, 1 << 16)
            except OSError:
                time.sleep(0.05)
        if alive():
            proc.kill()
            usage = os.wait4(proc.pid, 0)[2]
        proc.returncode = 0  # reaped here; Popen must not wait for it again
    finally:
        os.close(master)
    return took, usage.ru_maxrss / 1024


def measure(run_dir: Path) -> None:
    from rich.console import Console

    from unseen.engine.rundir import RunDir
    from unseen.views.show import show_summary
    from unseen.views.tui import TuiApp, build_index

    t_heads, heads = _median(lambda: RunDir(run_dir).heads())
    t_index, index = _median(lambda: build_index([run_dir]))

    async def screens() -> float:
        app = TuiApp(index=index)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            t = time.perf_counter()
            await pilot.press("home", "down", "space", "down")
            await pilot.pause()
            return time.perf_counter() - t

    t_open = statistics.median(asyncio.run(screens()) for _ in range(3))
    t_whole, _ = _median(lambda: list(RunDir(run_dir).records()), times=1)
    t_show, _ = _median(lambda: show_summary(Console(file=io.StringIO(), width=120), run_dir),
                        times=1)
    size = (run_dir / "trajectories.jsonl").stat().st_size / 2**20
    print(f"{len(heads)} trajectories, journal {size:.1f} MiB; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"parts: heads {t_heads:.2f} s · every record whole {t_whole:.2f} s "
          f"(heads take {t_heads / t_whole:.2f} of it) · index (heads + rows) {t_index:.2f} s")
    print(f"first group opened and its first trajectory shown: {t_open:.2f} s more")
    print(f"unseen show RUN (summary tables, every record whole): {t_show:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/tui_bench"))
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        measure(args.measure)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    run_dir = make_run(args.dir, args.n)
    first_screen(run_dir, args.n)  # warm-up: the page cache, as a second opening finds it
    runs = [first_screen(run_dir, args.n) for _ in range(3)]
    took = statistics.median(r[0] for r in runs)
    rss = max(r[1] for r in runs)
    print(f"unseen tui RUN, a fresh process on a 120x40 terminal, to its first screen "
          f"(median of 3): {took:.2f} s, ratio {took / TARGET_S:.2f} to the {TARGET_S:g} s "
          f"target; peak RSS {rss:.0f} MB, ratio {rss / 300:.2f} to the 300 MB target")
    # the parts, in a fresh process of their own
    subprocess.run([sys.executable, __file__, "--measure", str(run_dir)], check=True)


if __name__ == "__main__":
    main()
