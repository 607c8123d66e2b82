"""SPoE and its variants on the bundled sample set with the simulator at several skills.

Prints, per skill and strategy: CAcc@75, CAcc@50, mIoU, Dist (×100) and calls per
instance, plus the oracle ceiling. Simulated respondents: the numbers show what each
variant does with a chooser of a given per-step accuracy, not how any model behaves.
Also times overlay drawing at 1920x1440 (target: median under 10 ms per step).

    python benchmarks/spoe_evidence.py [--samples N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

import unseen
from unseen.evals.scenefunri import summarize
from unseen.renderers import overlay

STRATEGIES = ["direct", "spoe", "spoe:share=0.6", "spoe:min_area=0.02", "spoe:T=4",
              "spoe:T=6,share=0.6", "spoe:unsure=true", "spoe:T=5,finish=direct",
              "spoe-grid", "spoe-grid:rows=3,cols=3,T=2", "spoe:votes=5", "spoe-search"]
SKILLS = [0.6, 0.75, 0.9, 1.0]


def overlay_ms(n: int = 30) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "big.jpg")
        rng = np.random.default_rng(0)
        Image.fromarray((rng.random((1440, 1920, 3)) * 255).astype("uint8")).save(path, quality=90)
        spec = {"boxes": [[0, 0, 960, 1440], [960, 0, 1920, 1440]], "labels": ["A", "B"]}
        base = overlay._image(path)
        draw, encode = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            overlay.draw(base, spec)
            draw.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            overlay.render_overlay(path, spec)
            encode.append((time.perf_counter() - t0) * 1000)
    return statistics.median(draw), statistics.median(encode)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=3)
    args = ap.parse_args()
    d, e = overlay_ms()
    print(f"overlay at 1920x1440: draw {d:.1f} ms (target < 10; ratio {d / 10:.2f}), "
          f"draw + JPEG encode {e:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        for skill in SKILLS:
            out = Path(tmp) / f"s{skill}"
            backend = f"sim:flat,skill={skill},format_noise=0,unparseable=0,spread=0.3"
            unseen.run(None, STRATEGIES, [backend], samples=args.samples, out=out, cache=False,
                       progress=False)
            print(f"\nsim skill {skill} (SIMULATED chooser; per-step accuracy "
                  f"{skill + (1 - skill) / 2:.3f})")
            print(f"{'strategy':<22}{'CAcc@75':>9}{'CAcc@50':>9}{'mIoU':>8}{'Dist':>8}{'calls':>7}")
            for r in summarize([out]):
                print(f"{r['strategy']:<22}{r['cacc75']:>9.2f}{r['cacc50']:>9.2f}"
                      f"{r['miou']:>8.2f}{r['dist']:>8.2f}{r['calls']:>7.2f}")
        from unseen.evals.scenefunri.report.curves import curves

        print("\noracle ceiling (perfect chooser), Dist ×100 and alive % at t = T:")
        for r in curves([Path(tmp) / "s1.0"], ceiling=True):
            if r["model"].startswith("oracle") and r["t"] in (4, 6, 8):
                print(f"  {r['strategy']:<18} t={r['t']}  Dist {r['dist']:.2f}  "
                      f"CAcc@50 {r['cacc50']:.2f}  alive {r['alive']:.1f}")


if __name__ == "__main__":
    main()
