"""How fast ``unseen tui`` and ``unseen show`` open a run of 10,000 trajectories.

Makes a small simulated run (direct and spoe:T=3 over the test set), writes a journal of N
trajectories by repeating its records under new keys and instance ids (the dataset and
run.json are the small run's), then, in a fresh process, times (the median of three):

- the index: ``RunDir.heads()`` (the fields before each record's steps, one pass) and the
  rows the run's views make of them, against reading every record whole (the ratio is what
  the heads save);
- the TUI's first screen: the app mounted and painted, headless at 120x40 (target: index +
  first screen under 1 s on 2 cores);
- the first group opened and its first trajectory shown (a key press, then a seek);
- ``unseen show RUN``'s summary (its tables read every record whole: the bootstrap needs
  them), for scale;

and prints the peak RSS (target < 300 MB) and the machine's load, which the figures follow.

    python benchmarks/tui_open.py [--n 10000] [--dir /tmp/tui_bench]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def small_run(root: Path, data: str = "d") -> Path:
    """``root/small``: direct and spoe:T=3 over six test-set instances, two simulators."""
    import unseen
    from unseen.evals.scenefunri.sample import write_test_set

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


def measure(run_dir: Path) -> None:
    t0 = time.perf_counter()
    from rich.console import Console

    from unseen.engine.rundir import RunDir
    from unseen.views.show import show_summary
    from unseen.views.tui import TuiApp, build_index

    t_import = time.perf_counter() - t0
    t_heads, heads = _median(lambda: RunDir(run_dir).heads())
    t_index, index = _median(lambda: build_index([run_dir]))

    async def screens() -> tuple[float, float]:
        t = time.perf_counter()
        app = TuiApp(index=index)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            first = time.perf_counter() - t
            t = time.perf_counter()
            await pilot.press("home", "down", "space", "down")
            await pilot.pause()
            return first, time.perf_counter() - t

    runs = [asyncio.run(screens()) for _ in range(3)]
    t_first = statistics.median(r[0] for r in runs)
    t_open = statistics.median(r[1] for r in runs)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    t_whole, _ = _median(lambda: list(RunDir(run_dir).records()), times=1)
    t_show, _ = _median(lambda: show_summary(Console(file=io.StringIO(), width=120), run_dir),
                        times=1)
    size = (run_dir / "trajectories.jsonl").stat().st_size / 2**20
    print(f"{len(heads)} trajectories, journal {size:.1f} MiB; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"import {t_import:.2f} s")
    print(f"heads {t_heads:.2f} s · every record whole {t_whole:.2f} s "
          f"(heads take {t_heads / t_whole:.2f} of it)")
    print(f"index (heads + rows) {t_index:.2f} s · first screen {t_first:.2f} s · together "
          f"{t_index + t_first:.2f} s = {(t_index + t_first) / 1.0:.2f} × the 1 s target")
    print(f"first group opened and its first trajectory shown: {t_open:.2f} s more")
    print(f"peak RSS of the TUI {rss:.0f} MB (target < 300 MB)")
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
    # a fresh process, so the RSS is the viewer's alone
    subprocess.run([sys.executable, __file__, "--measure", str(run_dir)], check=True)


if __name__ == "__main__":
    main()
