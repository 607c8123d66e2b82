"""The SceneFun3D build pipeline's speed: frames per second when projecting a scan of one
million annotated points and testing their occlusion against the rendered mesh, and the
wall time of building the bundled sample set from the 8 procedural rooms.

    python benchmarks/build_speed.py [--points N] [--frames N] [--sample]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from unseen.evals.scenefunri.data.build import BuildParams, mesh_depth, project, visibility
from unseen.evals.scenefunri.data.scenefun3d_types import Frame, Intrinsics
from unseen.renderers.mesh import box, merge


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--sample", action="store_true", help="also time rooms + build (~70 s)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    pts = rng.uniform([-2, 3, -1], [2, 5, 1], size=(args.points, 3))
    room = merge([box((0, 4, 0), (6, 0.1, 3), color=(0.5, 0.5, 0.5), object_id=1),
                  box((0, 2, 0), (1, 0.1, 1), color=(0.5, 0.5, 0.5), object_id=2)])
    k = Intrinsics(1920, 1440, 1500.0, 1500.0, 960.0, 720.0)
    params = BuildParams()
    times = []
    for f in range(args.frames):
        pose = np.eye(4)
        pose[:3, :3] = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]  # looking along +y
        pose[:3, 3] = [0.05 * f, 0, 0]
        frame = Frame("v", f"{f}.0", rgb=Path("x"), intrinsics=k, camera_to_world=pose)
        t0 = time.perf_counter()
        uv, z = project(pts, frame)
        depth = mesh_depth((room.vertices, room.faces), frame)
        visibility(uv, z, k.width, k.height, depth, "mesh", params)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    print(f"{args.points:,} points, 1920x1440 frames: {med * 1000:.0f} ms per frame "
          f"({1 / med:.1f} frames/s), mesh render included")
    if args.sample:
        from unseen.evals.scenefunri.data.build import build
        from unseen.evals.scenefunri.data.rooms import write_rooms

        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            write_rooms(Path(tmp) / "scans", n_rooms=8, seed=0)
            t1 = time.perf_counter()
            s = build(Path(tmp) / "scans", Path(tmp) / "out", progress=False)
            t2 = time.perf_counter()
        print(f"sample set: rooms {t1 - t0:.1f} s, build {t2 - t1:.1f} s, {s.kept} instances")


if __name__ == "__main__":
    main()
