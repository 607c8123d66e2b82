"""Director Task scenes: meshes from a layout, the rendered image, and the second checker.

The first checker is analytic (``geometry``: corner segments against boxes). The second
renders an object-id buffer from the director's eye with the director's own body left out
and counts each cube's pixels: a cube is hidden iff it has none. Any disagreement between
the two, or with the layout's key, is an error, never a silent pick. The model's own id
buffer checks that every cube, and the digit on it, is in sight with enough pixels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from ....renderers.camera import Camera
from ....renderers.mesh import Mesh, box, cube, cylinder, ellipsoid, merge, plane
from ....renderers.raster import render
from ....renderers.textures import digit_texture
from .layout import (
    MODEL_EYE,
    MODEL_FOV_Y,
    MODEL_TARGET,
    PALETTE,
    TABLE_X,
    TABLE_Y,
    TABLE_Z,
    Layout,
    analytic_visibility,
)

FLOOR, TABLE, PARTITION, DIRECTOR = 1, 2, 3, 4
CUBE0, DIGIT0 = 10, 30  # cube k has id CUBE0 + k, its digit faces DIGIT0 + k
MIN_DIGIT_PIXELS = 250  # at 1024x768, a digit face smaller than this is hard to read
EYE_VIEW = (400, 300)


class SceneError(RuntimeError):
    """The two checkers disagree with each other or with the key: a bug, never skipped."""


class Unreadable(ValueError):
    """A digit shows too few pixels to the model: the layout is drawn again."""


def _digit_color(rgb: tuple[float, float, float]) -> tuple[int, int, int]:
    lum = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    return (20, 20, 20) if lum > 0.5 else (245, 245, 245)


def cube_ids(k: int) -> tuple[int, int]:
    return CUBE0 + k, DIGIT0 + k


def scene_meshes(layout: Layout) -> list[Mesh]:
    """Floor, table, partition, director and the cubes, with their object ids."""
    meshes = [plane((0, 0.3, 0), (6, 6), (0.62, 0.60, 0.57), FLOOR)]
    top = 0.04
    meshes.append(box((0, 0, TABLE_Z - top / 2), (2 * TABLE_X, 2 * TABLE_Y, top),
                      color=(0.66, 0.48, 0.32), object_id=TABLE))
    for sx in (-1, 1):
        for sy in (-1, 1):
            meshes.append(box((sx * (TABLE_X - 0.05), sy * (TABLE_Y - 0.05), (TABLE_Z - top) / 2),
                              (0.05, 0.05, TABLE_Z - top), color=(0.50, 0.36, 0.24),
                              object_id=TABLE))
    meshes.append(box(layout.partition_center, layout.partition_size, color=(0.30, 0.32, 0.36),
                      object_id=PARTITION))
    meshes.append(director_mesh(layout.director_x))
    for k, b in enumerate(layout.blocks):
        rgb = PALETTE[b.color]
        tex = digit_texture(str(b.digit), fg=_digit_color(rgb))
        m = cube(b.center, b.edge, b.yaw_deg, rgb, CUBE0 + k, texture=tex)
        m.ids = np.where(m.texture_index >= 0, DIGIT0 + k, m.ids).astype(np.int32)
        meshes.append(m)
    return meshes


def director_mesh(x: float) -> Mesh:
    """A seated figure behind the table facing the model: torso, arms, neck, head, eyes."""
    skin, shirt, dark = (0.93, 0.76, 0.62), (0.25, 0.45, 0.55), (0.08, 0.08, 0.10)
    parts = [
        box((x, 0.86, 0.98), (0.38, 0.20, 0.46), color=shirt, object_id=DIRECTOR),
        box((x - 0.23, 0.80, 0.98), (0.08, 0.10, 0.40), color=shirt, object_id=DIRECTOR),
        box((x + 0.23, 0.80, 0.98), (0.08, 0.10, 0.40), color=shirt, object_id=DIRECTOR),
        cylinder((x, 0.84, 1.20), 0.045, 0.06, color=skin, object_id=DIRECTOR),
        ellipsoid((x, 0.80, 1.27), (0.085, 0.095, 0.11), color=skin, object_id=DIRECTOR),
        ellipsoid((x, 0.82, 1.36), (0.088, 0.09, 0.05), color=(0.25, 0.17, 0.10),
                  object_id=DIRECTOR),
    ]
    for sx in (-1, 1):
        parts.append(ellipsoid((x + sx * 0.034, 0.712, 1.285), (0.016, 0.010, 0.012),
                               color=(1, 1, 1), object_id=DIRECTOR))
        parts.append(ellipsoid((x + sx * 0.034, 0.704, 1.285), (0.008, 0.006, 0.008),
                               color=dark, object_id=DIRECTOR))
    return merge(parts)


def model_camera(width: int = 1024, height: int = 768) -> Camera:
    return Camera.look_at(MODEL_EYE, MODEL_TARGET, fov_y_deg=MODEL_FOV_Y, width=width,
                          height=height)


def eye_camera(layout: Layout) -> Camera:
    """A wide camera at the director's eye looking at the table, for the id checker."""
    target = (layout.eye[0], 0.0, TABLE_Z)
    return Camera.look_at(layout.eye, target, fov_y_deg=95.0, width=EYE_VIEW[0],
                          height=EYE_VIEW[1])


def idbuffer_counts(layout: Layout, meshes: list[Mesh] | None = None) -> dict[int, int]:
    """Pixels of each cube (by digit) in an id render from the director's eye, the
    director's own body left out."""
    meshes = meshes or scene_meshes(layout)
    ids = render(meshes, eye_camera(layout), ids_only=True, exclude_ids=(DIRECTOR,)).ids
    return {b.digit: int(np.isin(ids, cube_ids(k)).sum()) for k, b in enumerate(layout.blocks)}


def check(layout: Layout, meshes: list[Mesh] | None = None) -> dict:
    """Both checkers against the layout's key; raises SceneError on any disagreement."""
    meshes = meshes or scene_meshes(layout)
    analytic = analytic_visibility(layout)
    counts = idbuffer_counts(layout, meshes)
    for b in layout.blocks:
        by_corners = analytic[b.digit] != "hidden"
        by_pixels = counts[b.digit] > 0
        if analytic[b.digit] in ("ambiguous", "partial"):
            raise SceneError(f"{layout.id}: cube {b.digit} is {analytic[b.digit]} from the eye")
        if not (by_corners == by_pixels == b.visible_to_director):
            raise SceneError(
                f"{layout.id}: cube {b.digit}: key says visible={b.visible_to_director}, "
                f"corners say {analytic[b.digit]}, id buffer counts {counts[b.digit]} px"
            )
    return {"analytic": analytic, "idbuffer_px": {str(k): v for k, v in counts.items()}}


@dataclass
class RenderedScene:
    layout: Layout
    image: Image.Image
    camera: Camera
    checks: dict


def render_scene(layout: Layout, width: int = 1024, height: int = 768,
                 supersample: int = 2) -> RenderedScene:
    """The model's view of a checked scene; SceneError when the checkers disagree,
    Unreadable when a digit is too small in the model's view."""
    meshes = scene_meshes(layout)
    checks = check(layout, meshes)
    cam = model_camera(width, height)
    shadows = [(b.center[0], b.center[1], TABLE_Z, b.edge * 0.8, 0.55) for b in layout.blocks]
    out = render(meshes, cam, supersample=supersample, contact_shadows=shadows,
                 background=(214, 222, 230))
    scale = (width * height) / (1024 * 768)
    digit_px = {}
    for k, b in enumerate(layout.blocks):
        cube_id, digit_id = cube_ids(k)
        digit_px[str(b.digit)] = int((out.ids == digit_id).sum())
        if digit_px[str(b.digit)] < MIN_DIGIT_PIXELS * scale:
            raise Unreadable(f"{layout.id}: the digit {b.digit} shows only "
                             f"{digit_px[str(b.digit)]} px to the model")
    checks["model_digit_px"] = digit_px
    assert out.color is not None  # rendered with colour
    return RenderedScene(layout, Image.fromarray(out.color), cam, checks)


def scene_record(scene: RenderedScene, image: str) -> dict:
    """One line of ``scenes.jsonl``."""
    rec = scene.layout.record()
    rec["image"] = image
    rec["camera"] = {"K": np.asarray(scene.camera.K).tolist(),
                     "world_to_camera": np.asarray(scene.camera.world_to_camera).tolist(),
                     "width": scene.camera.width, "height": scene.camera.height}
    rec["checks"] = scene.checks
    return json.loads(json.dumps(rec, default=float))


def write_scene(scene: RenderedScene, out: Path) -> dict:
    """Save the PNG under ``out/images`` and return the record."""
    rel = f"images/{scene.layout.id}.png"
    (out / "images").mkdir(parents=True, exist_ok=True)
    scene.image.save(out / rel, optimize=False)
    return scene_record(scene, rel)
