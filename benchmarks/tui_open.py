"""Open time and memory of ``unseen tui`` on a run of 10,000 trajectories.

Makes a small simulated run (direct and spoe:T=3 over the test set), writes a journal of N
trajectories by repeating its records under new keys and instance ids (the dataset and
run.json are the small run's), then, in a fresh process, times (1) the index (one streaming
pass over the journal) and (2) the app up to its first screen, headless at 120x40, with the
first (model, strategy) expanded; prints both and the peak RSS (target: < 2 s, < 300 MB).

    python benchmarks/tui_open.py [--n 10000] [--dir /tmp/tui_bench]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from pathlib import Path


def make_run(root: Path, n: int) -> Path:
    import unseen
    from unseen.evals.scenefunri.sample import write_test_set

    small = root / "small"
    if not (small / "trajectories.jsonl").is_file():
        data = write_test_set(root / "d")
        unseen.run(data, ["direct", "spoe:T=3"], ["sim", "sim:noisy,unparseable=0.5"],
                   out=small, cache=False, progress=False, limit=6)
    recs = [json.loads(x) for x in (small / "trajectories.jsonl").read_text().splitlines()]
    big = root / f"big{n}"
    big.mkdir(exist_ok=True)
    (big / "run.json").write_text((small / "run.json").read_text())
    with open(big / "trajectories.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = dict(recs[i % len(recs)])
            rec["key"] = f"k{i:07d}"
            rec["instance_id"] = f"{rec['instance_id']}-{i // len(recs)}"
            fh.write(json.dumps(rec) + "\n")
    return big


def measure(run_dir: Path) -> None:
    t0 = time.perf_counter()
    from unseen.views.tui import TuiApp, build_index

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    index = build_index([run_dir])
    t_index = time.perf_counter() - t1

    async def first_screen() -> float:
        t = time.perf_counter()
        app = TuiApp(index=index)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("home", "down", "space", "down")
            await pilot.pause()
        return time.perf_counter() - t

    t_app = asyncio.run(first_screen())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    size = (run_dir / "trajectories.jsonl").stat().st_size / 2**20
    print(f"{len(index.entries)} trajectories, journal {size:.1f} MiB")
    print(f"import {t_import:.2f} s · index {t_index:.2f} s · app to first screen "
          f"{t_app:.2f} s · open total {t_import + t_index + t_app:.2f} s (target < 2 s)")
    print(f"peak RSS {rss:.0f} MB (target < 300 MB)")


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
