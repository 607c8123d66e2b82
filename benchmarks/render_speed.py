"""Speed of the numpy rasterizer on a tabletop like the Director Task's (~3,000 triangles).

A table, four textured digit cubes, a partition, a director (head with eyes, neck, torso) and a
floor, seen from the model's seat at 1024x768 with 2x supersampling (target: median <= 1 s on
one core), and the same scene's id buffer from the director's eye at 400x300 (``ids_only``).
Saves the image to /tmp/render_bench.png.

    python benchmarks/render_speed.py [--repeats N] [--out PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time

from PIL import Image

from unseen.renderers import mesh as M
from unseen.renderers.camera import Camera
from unseen.renderers.raster import render
from unseen.renderers.textures import digit_texture

TABLE_TOP = 0.75
EDGE = 0.07
HEAD = (0.0, 0.72, 1.32)
DIRECTOR = 100  # object ids of the director's body parts: 100..


def scene() -> tuple[list[M.Mesh], list[tuple[float, float, float, float, float]]]:
    meshes = [
        M.plane((0, 0, 0), (8, 8), (0.55, 0.52, 0.5), object_id=0),
        M.box((0, 0, TABLE_TOP - 0.025), (1.2, 0.8, 0.05), 0, (0.62, 0.44, 0.28), object_id=1),
        M.box((0, 0.12, TABLE_TOP + 0.11), (0.42, 0.02, 0.22), 0, (0.35, 0.4, 0.55), object_id=2),
    ]
    cubes = [((-0.3, -0.15), 10, (0.85, 0.2, 0.2), "3"), ((-0.1, 0.3), -15, (0.2, 0.6, 0.3), "7"),
             ((0.12, -0.2), 30, (0.25, 0.4, 0.85), "5"), ((0.33, 0.05), 0, (0.95, 0.8, 0.2), "9")]
    shadows = []
    for k, ((x, y), yaw, color, digit) in enumerate(cubes):
        meshes.append(M.cube((x, y, TABLE_TOP + EDGE / 2), EDGE, yaw, color, object_id=10 + k,
                             texture=digit_texture(digit)))
        shadows.append((x, y, TABLE_TOP, EDGE * 0.6, 0.55))
    hx, hy, hz = HEAD
    skin, eye_white, dark = (0.93, 0.78, 0.65), (0.97, 0.97, 0.97), (0.1, 0.1, 0.12)
    meshes += [
        M.ellipsoid(HEAD, (0.09, 0.1, 0.12), skin, DIRECTOR, segments=48),
        M.ellipsoid((hx - 0.035, hy - 0.085, hz + 0.02), 0.018, eye_white, DIRECTOR + 1, 12),
        M.ellipsoid((hx + 0.035, hy - 0.085, hz + 0.02), 0.018, eye_white, DIRECTOR + 1, 12),
        M.ellipsoid((hx - 0.035, hy - 0.1, hz + 0.02), 0.008, dark, DIRECTOR + 2, 8),
        M.ellipsoid((hx + 0.035, hy - 0.1, hz + 0.02), 0.008, dark, DIRECTOR + 2, 8),
        M.cylinder((hx, hy, hz - 0.2), 0.04, 0.1, skin, DIRECTOR + 3, segments=24),
        M.cylinder((hx, hy + 0.03, 0.6), 0.17, 0.57, (0.3, 0.45, 0.6), DIRECTOR + 4, 64),
    ]
    return meshes, shadows


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="/tmp/render_bench.png")
    args = parser.parse_args()
    meshes, shadows = scene()
    n = sum(m.n_faces for m in meshes)
    seat = Camera.look_at((0, -0.95, 1.25), (0, 0.25, 0.95), fov_y_deg=55, width=1024, height=768)
    eye = Camera.look_at((HEAD[0], HEAD[1] - 0.1, HEAD[2] + 0.02), (0, -0.1, TABLE_TOP),
                         fov_y_deg=60, width=400, height=300)
    out = {}

    def full():
        out["r"] = render(meshes, seat, supersample=2, contact_shadows=shadows)

    def ids():
        render(meshes, eye, ids_only=True, exclude_ids=range(DIRECTOR, DIRECTOR + 5))

    full_s = timed(full, args.repeats)
    ids_s = timed(ids, args.repeats)
    Image.fromarray(out["r"].color).save(args.out)
    print(f"{n} triangles")
    print(f"render 1024x768, supersample 2: median {full_s:.3f} s over {args.repeats}")
    print(f"ids_only 400x300: median {ids_s * 1000:.1f} ms over {args.repeats}")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
