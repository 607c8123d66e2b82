"""Director scenes: median seconds per scene at 1024x768 with 2x supersampling (target
<= 1 s on one core), including both visibility checks, and the wall time of a whole set.

    python benchmarks/director_scenes.py [--scenes N] [--full]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from unseen.evals.director.scenes.layout import make_layout
from unseen.evals.director.scenes.render import render_scene
from unseen.evals.director.scenes.sets import build_set

TARGET_S = 1.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=10)
    ap.add_argument("--full", action="store_true", help="also time the whole main set (160)")
    args = ap.parse_args()
    times = []
    for i in range(args.scenes):
        lay = make_layout("main", i, 0)
        t0 = time.perf_counter()
        render_scene(lay, 1024, 768, supersample=2)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"per scene (render + both checks), median of {args.scenes}: {med:.3f} s; "
          f"ratio to the {TARGET_S:g} s target: {med / TARGET_S:.2f}")
    if args.full:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            build_set("main", tmp, progress=False)
            print(f"whole main set (160 scenes, PNGs written): {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
