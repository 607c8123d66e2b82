"""A room as a SceneFun3D visit: lay out, scan, plan, render, check, and write."""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .....renderers.camera import Camera
from .....renderers.mesh import merge
from .....renderers.raster import render
from .....renderers.rooms3d import RoomLayout, room_meshes
from ..scenefun3d_types import Description, FrameData, Intrinsics, VideoData, VisitData
from .cameras import Check, check_hidden, geometry_scene, make_camera, planned_views, primary_pixels
from .furniture import make_room
from .scan import annot_id, desc_id, sample_scan

LIGHT: dict[str, Any] = {"light_dir": (0.25, -0.35, 1.0), "ambient": 0.6}


@dataclass
class Intended:
    """A frame chosen so that the description's target is inside it and fully hidden."""

    desc_id: str
    text: str
    annot_ids: list[str]
    timestamp: str
    camera_to_world: np.ndarray
    check: Check


@dataclass
class RoomBuild:
    visit: VisitData
    layout: RoomLayout
    intended: list[Intended]
    dropped: int = 0  # planned hidden views that failed the check at the output size
    seconds: dict = field(default_factory=dict)


def visit_id(index: int) -> str:
    return f"{100000 + index:06d}"


def video_id(index: int) -> str:
    return f"{40000000 + index:08d}"


def contact_shadows(layout: RoomLayout) -> list[tuple[float, float, float, float, float]]:
    """Soft discs under furniture on the floor and under things standing on furniture."""
    out = []
    for it in layout.items:
        w, d, _ = it.size
        z = float(it.base[2])
        if it.solid and z < 0.01:
            out.append((it.center[0], it.center[1], 0.0, 0.42 * max(w, d), 0.3))
        elif it.kind in ("lamp", "laptop", "tv", "phone"):
            out.append((it.center[0], it.center[1], z, 0.5 * max(w, d), 0.35))
    return out


def shadows_in_view(shadows, camera: Camera) -> list:
    """The discs whose reach shows in the image. The rasterizer shades a disc that reaches
    behind the camera over the whole image, which costs more than the disc is worth."""
    out = []
    for x, y, z, r, s in shadows:
        e = 1.5 * r
        sq = np.array([[x - e, y - e, z], [x + e, y - e, z], [x + e, y + e, z], [x - e, y + e, z]])
        uv, depth = camera.project(sq)
        if (depth <= camera.near).any():
            continue
        if (uv[:, 0].max() < 0 or uv[:, 0].min() > camera.width or uv[:, 1].max() < 0
                or uv[:, 1].min() > camera.height):
            continue
        out.append((x, y, z, r, s))
    return out


def laser_to_arkit(rng) -> np.ndarray:
    """A rigid transform that is never the identity: a turn about z and a shift."""
    yaw = math.radians(rng.uniform(20, 340))
    t = np.eye(4)
    t[:3, :3] = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0],
                          [0, 0, 1]])
    t[:3, 3] = (rng.uniform(-4, 4), rng.uniform(-4, 4), rng.uniform(-0.5, 0.5))
    return t


def build_visit(index: int, seed: int = 0, size=(640, 480), color: bool = True) -> RoomBuild:
    """Lay out, scan, plan, render and check one room; the visit as data, not yet files.
    ``color=False`` renders depth and ids only (black frames): the same views and checks,
    for tests that need geometry only."""
    t0 = time.perf_counter()
    layout = make_room(index, seed)
    meshes = room_meshes(layout)
    scene, flat = merge(meshes), geometry_scene(layout, meshes)
    points, colors, annotations = sample_scan(meshes, layout, np.random.default_rng([seed, index, 1]))
    t1 = time.perf_counter()
    views = planned_views(layout, np.random.default_rng([seed, index, 2]), meshes)
    t2 = time.perf_counter()
    by_name = {it.name: it for it in layout.items}
    ann = {a.annot_id: a for a in annotations}
    shadows = contact_shadows(layout)
    frames: list[FrameData] = []
    intended: list[Intended] = []
    dropped = 0
    width, height = size
    for v in views:
        cam = make_camera(v.camera_to_world, width, height)
        if color:
            r = render(scene, cam, supersample=2,
                       contact_shadows=shadows_in_view(shadows, cam), **LIGHT)
        else:
            r = render(flat, cam, ids_only=True)
            r.color = np.zeros((height, width, 3), np.uint8)
        chk = None
        if v.task is not None:
            target = by_name[v.task.target]
            pts = points[ann[annot_id(layout, target.name)].indices]
            refs = [by_name[n].object_id for n in v.task.reference]
            ref_mesh = meshes[layout.items.index(by_name[v.task.reference[0]])]
            chk = check_hidden(r, cam, pts, target.object_id, refs,
                               functools.partial(primary_pixels, ref_mesh, cam))
            if not chk.ok:
                dropped += 1
                continue
        ts = f"{1000 + 0.1 * len(frames):.3f}"
        k = Intrinsics(width, height, cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2])
        assert r.color is not None and r.depth is not None  # rendered in full
        frames.append(FrameData(ts, r.color, r.depth, k, v.camera_to_world))
        if chk is not None and v.task is not None:
            intended.append(Intended(desc_id(layout, v.task), v.task.text,
                                     [annot_id(layout, v.task.target)], ts, v.camera_to_world, chk))
    t3 = time.perf_counter()
    # the toolkit's frames: the room's own frame is the laser scan's, where the scan and the
    # hires poses live; only the mesh is written in the ARKit frame, l2a applied
    l2a = laser_to_arkit(np.random.default_rng([seed, index, 3]))
    arkit_vertices = scene.vertices @ l2a[:3, :3].T + l2a[:3, 3]
    vcol = np.zeros((len(scene.vertices), 3))
    for j in range(3):  # vertices take their faces' colours (the last face written wins)
        vcol[scene.faces[:, j]] = scene.colors
    video = VideoData(video_id(index), frames, l2a, arkit_vertices, scene.faces.copy(),
                      np.clip(np.rint(vcol * 255), 0, 255).astype(np.uint8))
    descriptions = [Description(desc_id(layout, t), [annot_id(layout, t.target)], t.text)
                    for t in layout.tasks]
    visit = VisitData(visit_id(index), points, colors, points[:, 2] < layout.height - 0.01,
                      annotations, descriptions, [video])
    secs = {"layout_scan": t1 - t0, "plan": t2 - t1, "render": t3 - t2}
    return RoomBuild(visit, layout, intended, dropped, secs)


def _write_one(args) -> str:
    from ..scenefun3d import write_visit

    root, index, seed, size, overwrite = args
    b = build_visit(index, seed, size)
    write_visit(root, b.visit, overwrite=overwrite)
    return b.visit.visit_id


def write_rooms(root: str | Path, n_rooms: int = 8, seed: int = 0, size=(640, 480),
                overwrite: bool = True, workers: int | None = None,
                progress: bool = False) -> list[str]:
    """Write rooms 0 .. n_rooms - 1 as SceneFun3D visits under ``root`` (visit ids
    100000 + index, so two seeds need two roots); returns the visit ids. Rooms are
    independent, so ``workers`` processes (default: one per CPU) give the same files.
    ``progress``: a bar on stderr, a room at a time (each takes seconds)."""
    from rich.console import Console
    from rich.progress import Progress

    jobs = [(str(root), i, seed, tuple(size), overwrite) for i in range(n_rooms)]
    workers = min(n_rooms, workers or os.cpu_count() or 1)
    with Progress(console=Console(stderr=True), disable=not progress, transient=True) as bar:
        task = bar.add_task("rendering rooms", total=n_rooms)
        if workers <= 1:
            done = []
            for j in jobs:
                done.append(_write_one(j))
                bar.advance(task)
            return done
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            done = []
            for visit in pool.map(_write_one, jobs):  # in order, as each room is written
                done.append(visit)
                bar.advance(task)
            return done
