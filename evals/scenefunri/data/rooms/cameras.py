"""Cameras for a room: views from which each hidden target is inside the frame and fully
occluded while its reference is seen, the target planned into every part of the image
(``planned_views``), and the check of "hidden" itself."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .....renderers.camera import Camera
from .....renderers.mesh import Mesh, merge
from .....renderers.raster import render
from .....renderers.rooms3d import RoomLayout, Task, item_mesh, room_meshes
from .scan import part_points

FOV_Y_DEG = 52.0  # about the hires_wide camera of the SceneFun3D captures
EYE_HEIGHT = (0.9, 1.8)  # a person crouching by low furniture, sitting, standing
ROLL_DEG = 10.0  # a hand-held camera is rolled up to this either way
MARGIN_FRAC = 20 / 640  # a hidden target keeps this share of the width from every edge
MIN_BOX_FRAC = 8.5 / 640  # and its box is at least this wide and tall (the pipeline: 8 px)
HIDE_GAP_M = 0.02
MIN_REFERENCE_FRAC = 0.01  # the named references cover at least this share of the image
SCREEN_SIZE = (160, 120)  # id buffers for choosing cameras
AIM_RANGE = ((0.05, 0.95), (0.06, 0.94))  # where a hidden target's centre is put: u/w, v/h
CELL_TRIES = 4  # cells of the 3x3 grid tried per task, the least used in the room first
EDGE_PULL = 3.0  # in an outer third, the aim's distance from the edge is a third × U**3
NEAREST_M = 1.0  # the nearest a camera stands to a hidden target (the farthest: its reach)


@dataclass
class View:
    """A camera (4x4 camera→world, x right, y down, z forward) and the hidden-target task it
    was chosen for (None: a generic view)."""

    camera_to_world: np.ndarray
    task: Task | None = None


@dataclass
class Check:
    ok: bool
    why: str = ""
    box: tuple[float, float, float, float] | None = None
    gap_m: float = math.nan  # smallest depth gap between a target point and what hides it


def make_camera(camera_to_world: np.ndarray, width: int, height: int,
                fov_y_deg: float = FOV_Y_DEG) -> Camera:
    f = (height / 2) / math.tan(math.radians(fov_y_deg) / 2)
    K = np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1.0]])
    return Camera(K, np.linalg.inv(camera_to_world), width, height)


def check_hidden(rendered, camera: Camera, points: np.ndarray, target_id: int,
                 reference_ids=(), primary_alone: int | Callable[[], int] | None = None,
                 occluder_id: int | None = None, margin_frac=MARGIN_FRAC,
                 min_box_frac=MIN_BOX_FRAC, gap_m=HIDE_GAP_M,
                 min_reference_frac=MIN_REFERENCE_FRAC, min_occluder_share=0.0,
                 max_occluder_frac=1.0) -> Check:
    """Whether ``points`` of the target (world) lie inside the frame with a margin and are
    fully hidden (see the module docstring), and the references are seen: all together on
    ``min_reference_frac`` of the image, the first (``reference_ids[0]``) on at least half
    of the ``primary_alone`` pixels it covers when rendered alone (a callable is only
    called when every other test passed)."""
    w, h = camera.width, camera.height
    uv, z = camera.project(points)
    if not (z > camera.near).all():
        return Check(False, "behind the camera")
    m = margin_frac * w
    if (uv[:, 0] < m).any() or (uv[:, 0] > w - m).any() or (uv[:, 1] < m).any() \
            or (uv[:, 1] > h - m).any():
        return Check(False, "not inside the frame with the margin")
    box = (float(uv[:, 0].min()), float(uv[:, 1].min()), float(uv[:, 0].max()),
           float(uv[:, 1].max()))
    if min(box[2] - box[0], box[3] - box[1]) < min_box_frac * w:
        return Check(False, "box too small", box)
    if (rendered.ids == target_id).any():
        return Check(False, "target seen", box)
    cols, rows = uv[:, 0].astype(int), uv[:, 1].astype(int)
    far = _max3(rendered.depth)  # the farthest surface around each pixel must still hide
    gap = z - far[rows, cols]
    if not (gap >= gap_m).all():
        return Check(False, "not fully hidden", box, float(gap.min()))
    g = float(gap.min())
    if occluder_id is not None:
        if np.mean(rendered.ids[rows, cols] == occluder_id) < min_occluder_share:
            return Check(False, "hidden by something else", box, g)
        if np.mean(rendered.ids == occluder_id) > max_occluder_frac:
            return Check(False, "occluder fills the view", box, g)
    if reference_ids:
        if np.isin(rendered.ids, list(reference_ids)).sum() < min_reference_frac * w * h:
            return Check(False, "reference not seen", box, g)
        if primary_alone is not None:
            if callable(primary_alone):
                primary_alone = primary_alone()
            seen = int((rendered.ids == reference_ids[0]).sum())
            if seen < 0.5 * primary_alone or seen < 0.0005 * w * h:
                return Check(False, "reference mostly hidden", box, g)
    return Check(True, "", box, g)


def primary_pixels(mesh: Mesh, camera: Camera) -> int:
    """Pixels a mesh covers rendered alone on a canvas three times the image's width and
    height around it, so a reference cut off by the frame counts as partly unseen."""
    K = camera.K.copy()
    K[:2, 2] += (camera.width, camera.height)
    wide = Camera(K, camera.world_to_camera, 3 * camera.width, 3 * camera.height)
    return int((render(mesh, wide, ids_only=True).ids >= 0).sum())


def _max3(a: np.ndarray) -> np.ndarray:
    """The maximum over each pixel's 3x3 neighbourhood (edges repeat)."""
    p = np.pad(a, 1, mode="edge")
    h, w = a.shape
    return np.max([p[i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=0)


def _look(eye, target, roll_deg: float) -> np.ndarray:
    """camera→world for a camera at ``eye`` looking at ``target``, rolled about its axis."""
    cam = Camera.look_at(eye, target, fov_y_deg=FOV_Y_DEG, width=4, height=3)
    c, s = math.cos(math.radians(roll_deg)), math.sin(math.radians(roll_deg))
    roll = np.eye(4)
    roll[:2, :2] = [[c, s], [-s, c]]
    return np.linalg.inv(roll @ cam.world_to_camera)


def aim(eye, target, at: tuple[float, float], roll_deg: float = 0.0) -> np.ndarray:
    """camera→world for a 4:3 camera at ``eye`` (vertical field ``FOV_Y_DEG``) that sees
    ``target`` at ``at`` = (u/width, v/height) of its image.

    A camera looking at ``target`` sees it along e_z; the one wanted sees it along
    d ∝ (x/z, y/z, 1) with x/z = (a − ½)·(W/H)·2·tan(fov/2), y/z = (b − ½)·2·tan(fov/2). Its
    rotation is the look-at rotation times Q, the shortest rotation taking d onto e_z
    (Q = I + [v]× + [v]×²/(1 + c), v = d × e_z, c = d·e_z)."""
    t = math.tan(math.radians(FOV_Y_DEG) / 2)
    d = np.array([(at[0] - 0.5) * (4 / 3) * 2 * t, (at[1] - 0.5) * 2 * t, 1.0])
    d /= np.linalg.norm(d)
    v, c = np.cross(d, (0.0, 0.0, 1.0)), float(d[2])
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    q = np.eye(3) + vx + vx @ vx / (1 + c)
    c2w = _look(eye, target, roll_deg)
    c2w[:3, :3] = c2w[:3, :3] @ q
    return c2w


def _free(layout: RoomLayout, xy, margin: float = 0.45, keep_off=(), far: float = 0.8) -> bool:
    """Whether a person can stand at ``xy``: inside the room, ``margin`` from furniture and
    ``far`` from the items named in ``keep_off`` (so an occluder does not fill the view)."""
    x, y = xy
    if not (0.4 <= x <= layout.width - 0.4 and 0.4 <= y <= layout.depth - 0.4):
        return False
    for it in layout.items:
        if it.solid or it.name in keep_off:
            e = far if it.name in keep_off else margin
            x0, y0, x1, y1 = it.footprint()
            if x0 - e < x < x1 + e and y0 - e < y < y1 + e:
                return False
    return True


def planned_views(layout: RoomLayout, rng, meshes: list[Mesh] | None = None,
                  per_task=(2, 3), generic: int = 3, tries: int = 30,
                  stats: dict | None = None) -> list[View]:
    """Cameras for each task with an occluder: 2 or 3 from which the target is inside the
    frame, fully hidden (mostly by its occluder) and the reference seen, checked on a small
    id buffer with stricter thresholds; then ``generic`` views across the room. ``stats``
    collects, per task key, why candidate cameras were turned down.

    Where the target lands is planned, so that no fixed box finds the targets: each task
    puts its target in one cell of the image's 3x3 grid, the cell whose row and column the
    room's earlier tasks used least (ties at random; the next such cell when ``tries`` / 4
    renders find no view there), at a point of the cell drawn towards the image's edge in
    the outer thirds. Eye height, distance, roll, and the pitch and yaw that aim the target
    there vary per view, so the same kind of target lands anywhere from one room to the
    next, while where it is in the room (sockets low behind furniture, handles at hand
    height) stays as rooms have it."""
    meshes = room_meshes(layout) if meshes is None else meshes
    scene = geometry_scene(layout, meshes)
    views: list[View] = []
    rows, cols = [0, 0, 0], [0, 0, 0]  # tasks placed in each third of the height, width
    for task in layout.tasks:
        if task.occluder is not None:
            found: list[np.ndarray] = []
            cells = sorted(range(9), key=lambda k: (rows[k // 3] + cols[k % 3], rng.random()))
            for k in cells[:CELL_TRIES]:  # the least used cells first
                found = _task_views(layout, meshes, scene, task, rng, tries // CELL_TRIES,
                                    stats, divmod(k, 3))
                if found:
                    rows[k // 3] += 1
                    cols[k % 3] += 1
                    break
            if stats is not None:
                why = stats.setdefault(task.key, {})
                why["tasks"] = why.get("tasks", 0) + 1
                why["tasks with a view"] = why.get("tasks with a view", 0) + bool(found)
            want = per_task[0] + int(rng.random() < 0.3) * (per_task[1] - per_task[0])
            views += [View(v, task) for v in _spread(found, want)]
    for _ in range(generic):
        for _ in range(50):
            eye_xy = rng.uniform((0.5, 0.5), (layout.width - 0.5, layout.depth - 0.5))
            if _free(layout, eye_xy):
                break
        wall_pt = rng.uniform((0, 0), (layout.width, layout.depth))
        axis = int(rng.integers(2))
        wall_pt[axis] = (layout.width, layout.depth)[axis] * int(rng.integers(2))
        look = np.r_[wall_pt, rng.uniform(0.6, 1.3)]
        eye = np.r_[eye_xy, rng.uniform(*EYE_HEIGHT)]
        if np.linalg.norm(look[:2] - eye[:2]) > 0.5:
            views.append(View(_look(eye, look, rng.uniform(-ROLL_DEG, ROLL_DEG)), None))
    return views


def _task_views(layout: RoomLayout, meshes: list[Mesh], scene: Mesh, task: Task, rng,
                tries: int, stats: dict | None, cell: tuple[int, int]) -> list[np.ndarray]:
    """Up to 4 cameras that pass the screening for ``task`` with its target in ``cell``
    (row, column) of the image's 3x3 grid, from at most ``tries`` renders."""
    by_name = {it.name: (m, it) for m, it in zip(meshes, layout.items, strict=True)}
    mesh, target = by_name[task.target]
    pts = part_points(mesh, target, 64, np.random.default_rng(target.object_id))
    ref_ids = [by_name[r][1].object_id for r in task.reference]
    ref_mesh = by_name[task.reference[0]][0]
    assert task.occluder is not None  # planned_views gives views to occluded tasks only
    occ = by_name[task.occluder][1].object_id
    c = np.asarray(target.center)
    front = target.front[:2] / np.linalg.norm(target.front[:2])
    # near enough for a box of MIN_BOX_FRAC (+ 30 %); f: focal length in pixels at 640x480
    f = 240 / math.tan(math.radians(FOV_Y_DEG) / 2)
    reach = min(3.6, f * sorted(target.size)[1] / (MIN_BOX_FRAC * 640 * 1.2))
    sw, sh = SCREEN_SIZE
    why = stats.setdefault(task.key, {}) if stats is not None else {}
    found: list[np.ndarray] = []
    renders = 0
    row, col = cell
    for _ in range(tries * 6):  # most draws are cheap misses (inside furniture)
        if renders >= tries or len(found) >= 4:
            break
        ang = math.radians(rng.uniform(-60, 60))
        d = np.array([front[0] * math.cos(ang) - front[1] * math.sin(ang),
                      front[0] * math.sin(ang) + front[1] * math.cos(ang)])
        eye_xy = c[:2] + d * rng.uniform(min(NEAREST_M, reach - 0.3), reach)
        if not _free(layout, eye_xy, keep_off=(task.occluder,)):
            continue
        eye = np.r_[eye_xy, rng.uniform(*EYE_HEIGHT)]
        # the target in its cell, not where the camera looks: a fixed guess must not find it
        c2w = aim(eye, c, (_in_third(rng, col, AIM_RANGE[0]), _in_third(rng, row, AIM_RANGE[1])),
                  rng.uniform(-ROLL_DEG, ROLL_DEG))
        cam = make_camera(c2w, sw, sh)
        uv, z = cam.project(pts)
        m = MARGIN_FRAC * sw + 1
        if not (z > 0.3).all() or (uv[:, 0] < m).any() or (uv[:, 0] > sw - m).any() \
                or (uv[:, 1] < m).any() or (uv[:, 1] > sh - m).any():
            continue
        renders += 1
        chk = check_hidden(render(scene, cam, ids_only=True), cam, pts, target.object_id,
                           ref_ids, functools.partial(primary_pixels, ref_mesh, cam), occ, gap_m=0.03,
                           min_box_frac=MIN_BOX_FRAC * 1.12, min_occluder_share=0.5,
                           max_occluder_frac=0.35)
        why[chk.why or "ok"] = why.get(chk.why or "ok", 0) + 1
        if chk.ok:
            found.append(c2w)
    return found


def _in_third(rng, k: int, span: tuple[float, float]) -> float:
    """A point of the ``k``-th third of the image (0, 1, 2) along one axis, within ``span``:
    uniform in the middle third, drawn towards the image's edge in the outer ones (more of
    those views fail: a reference by the edge is cut off)."""
    lo, hi = max(span[0], k / 3), min(span[1], (k + 1) / 3)
    t = rng.random()
    if k == 1:
        return lo + t * (hi - lo)
    t = t ** EDGE_PULL
    return lo + t * (hi - lo) if k == 0 else hi - t * (hi - lo)


def geometry_scene(layout: RoomLayout, meshes: list[Mesh]) -> Mesh:
    """The room merged for depth and id buffers: the floor as one quad instead of boards
    (the same surface; hundreds of large triangles cost time and add nothing there)."""
    flat = [item_mesh(replace(it, params={})) if it.kind == "floor" else m
            for m, it in zip(meshes, layout.items, strict=True)]
    return merge(flat)


def _spread(c2ws: list[np.ndarray], k: int) -> list[np.ndarray]:
    """Up to ``k`` of the cameras, greedily far apart (the first one first)."""
    if not c2ws:
        return []
    chosen = [c2ws[0]]
    rest = c2ws[1:]
    while rest and len(chosen) < k:
        d = [min(np.linalg.norm(r[:3, 3] - c[:3, 3]) for c in chosen) for r in rest]
        j = int(np.argmax(d))
        if d[j] < 0.25:
            break
        chosen.append(rest.pop(j))
    return chosen


