"""Build SceneFunRI instances from SceneFun3D visits (paper §3.3–3.4).

Frames are the public toolkit's (SceneFun3D/scenefun3d): the hires poses and the laser scan
share the laser-scan frame, so a description's annotated scan points are projected with the
frame's intrinsics and pose as they are (``examples/project_rgb_on_laser_scan.py``); the
ARKit mesh is moved into the laser frame with the inverse of ``transform.npy`` (laser →
ARKit, ``examples/show_annotations.py``). Pinhole: u = fx·x/z + cx, v = fy·y/z + cy.

- V, projection visibility: the share of points in front of the camera and inside the image;
- V_o, occlusion visibility: the share of those points not occluded by scene geometry, from
  the mesh rendered to a depth buffer (``occlusion="mesh"``: a point is visible when it lies
  no more than ``mesh_tol_m`` behind the rendered surface) or from the frame's depth PNG with
  the toolkit's rule |d − z| ≤ 0.25·d at the rounded pixel (``occlusion="depth"``,
  ``utils/fusion_util.py``, ``PointCloudToImageMapper.compute_mapping``).

A (frame, description) pair is a candidate when V ≥ ``v_min`` (1.0) and V_o ≤ ``vo_max``
(0.0); its box is the bounding box of the projected points. Quality control then drops
repeated instructions in a visit and boxes smaller than ``min_box_px``, keeps one frame per
(visit, description) and drops images that are near-duplicates (perceptual hash) of an image
already kept in the visit.

The frame rule does not look where the target is: the description's remaining frames are
ordered by (video, timestamp) and the one at index sha256("visit|desc|seed") mod n is kept
(:func:`pick_index`). ``review.jsonl`` has one entry per kept instance: the rule, the pick,
and what a person should still look at, and the person's decision once reviewed
(``review.py``: a rejected instance stays out of ``instances.jsonl`` through rebuilds); ``build.json`` the whole funnel from frames to kept
instances with every drop reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ....engine.images import load_image
from .review import carry_over
from .scenefun3d import list_visits, read_depth, read_mesh, read_visit, timestamp_order
from .scenefun3d_types import Frame, Video, Visit

Occlusion = Literal["mesh", "depth"]
BUILD_FILE = "build.json"
# why a (frame, description) pair is not a candidate; every other drop is quality control
BEHIND, OUTSIDE, SEEN = "target behind the camera", "not inside the view (V)", "not fully occluded (V_o)"
PAIR_DROPS = (BEHIND, OUTSIDE, SEEN)
FRAME_RULE = ("of the n frames of a description that pass V, V_o and the box size, ordered "
              "by (video, timestamp), the one at index sha256('<visit>|<desc>|<seed>') mod n; "
              "where the target lies plays no part")


@dataclass(frozen=True)
class BuildParams:
    v_min: float = 1.0
    vo_max: float = 0.0
    stride: int = 1
    occlusion: Occlusion = "mesh"
    depth_tol_rel: float = 0.25  # the toolkit's |depth − z| ≤ 0.25·depth
    mesh_tol_m: float = 0.02
    min_box_px: float = 8.0
    dedupe_images: bool = True
    phash_max_distance: int = 4
    seed: int = 0  # of the frame pick


@dataclass
class Candidate:
    visit_id: str
    video_id: str
    timestamp: str
    rgb: Path
    width: int
    height: int
    desc_id: str
    instruction: str
    annot_ids: list[str]
    label: str
    v: float
    v_o: float
    box: list[float]
    pick: dict[str, Any] = field(default_factory=dict)  # how the frame was chosen


@dataclass
class BuildSummary:
    """The funnel: frames → (frame, description) pairs → candidates → kept."""

    visits: int = 0
    frames: int = 0
    frames_skipped: int = 0  # jpgs without a pose or intrinsics (the reader skips them)
    descriptions: int = 0
    descriptions_unusable: int = 0  # naming only "exclude" annotations
    pairs: int = 0
    candidates: int = 0
    kept: int = 0
    rejected_in_review: int = 0  # kept, but a person rejected it (review.jsonl): left out
    dropped: Counter = field(default_factory=Counter)

    def to_json(self, params: BuildParams) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "dropped"}
        return {**out, "dropped": dict(self.dropped.most_common()), "frame_rule": FRAME_RULE,
                "params": asdict(params)}


def project(points: np.ndarray, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (N, 2) and camera depth z (N,) of points in the poses' frame (the
    laser-scan frame): u = fx·x/z + cx, v = fy·y/z + cy in camera coordinates."""
    w2c = frame.world_to_camera
    cam = points @ w2c[:3, :3].T + w2c[:3, 3]
    z = cam[:, 2]
    k = frame.intrinsics
    with np.errstate(divide="ignore", invalid="ignore"):
        u = k.fx * cam[:, 0] / z + k.cx
        v = k.fy * cam[:, 1] / z + k.cy
    return np.stack([u, v], axis=1), z


def arkit_to_laser(vertices: np.ndarray, laser_to_arkit: np.ndarray) -> np.ndarray:
    """ARKit-frame points in the laser frame: the inverse of ``transform.npy`` applied, as
    the toolkit moves its ARKit mesh (``examples/show_annotations.py``)."""
    inv = np.linalg.inv(laser_to_arkit)
    return vertices @ inv[:3, :3].T + inv[:3, 3]


def mesh_depth(mesh: tuple[np.ndarray, np.ndarray], frame: Frame) -> np.ndarray:
    """The mesh's depth buffer seen from the frame's camera (metres, inf where empty); the
    vertices in the poses' (laser) frame."""
    from ....renderers.camera import Camera
    from ....renderers.mesh import Mesh
    from ....renderers.raster import render

    vertices, faces = mesh
    m = Mesh(vertices=vertices, faces=faces, colors=np.full((len(faces), 3), 0.5),
             ids=np.zeros(len(faces), dtype=np.int32))
    k = frame.intrinsics
    cam = Camera(K=k.K, world_to_camera=frame.world_to_camera, width=k.width, height=k.height)
    # both sides count as occluders: a scan's mesh is not reliably wound
    return render([m, m.flipped()], cam, ids_only=True).depth


def visibility(uv: np.ndarray, z: np.ndarray, width: int, height: int,
               depth: np.ndarray, mode: Occlusion, params: BuildParams) -> tuple[float, float, np.ndarray]:
    """(V, V_o, mask of points in view). ``depth`` is the mesh render or the depth PNG.

    The mesh render is ours (pixel i covers [i, i + 1)): its pixel is floor(u). The depth PNG
    is looked up as the toolkit does, at round(u), with |d − z| ≤ ``depth_tol_rel``·d; an
    unknown depth (NaN) hides nothing and shows nothing, so the point counts as not visible.
    """
    n = len(z)
    in_front = z > 1e-6
    inside = in_front & (uv[:, 0] >= 0) & (uv[:, 0] < width) & (uv[:, 1] >= 0) & (uv[:, 1] < height)
    v = float(inside.sum()) / n if n else 0.0
    if not inside.any():
        return v, 0.0, inside
    uv_in = uv[inside] if mode == "mesh" else np.round(uv[inside])  # mesh: u >= 0, so int() floors
    cols = np.clip(uv_in[:, 0].astype(int), 0, width - 1)
    rows = np.clip(uv_in[:, 1].astype(int), 0, height - 1)
    d = depth[rows, cols]
    zi = z[inside]
    if mode == "mesh":
        visible = zi <= d + params.mesh_tol_m
    else:
        known = np.isfinite(d) & (d > 0)
        visible = known & (np.abs(d - zi) <= params.depth_tol_rel * d)
    return v, float(visible.sum()) / int(inside.sum()), inside


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _targets(visit: Visit, summary: BuildSummary) -> list[tuple]:
    """(description, annotation ids, label, laser points) of each usable description."""
    out = []
    for d in visit.descriptions:
        summary.descriptions += 1
        anns = [a for a in (visit.annotation(x) for x in d.annot_ids) if a.label != "exclude"]
        if not anns:
            summary.descriptions_unusable += 1
            continue
        idx = np.unique(np.concatenate([a.indices for a in anns]))
        out.append((d, [a.annot_id for a in anns], anns[0].label, visit.points[idx]))
    return out


def frame_candidates(visit: Visit, video: Video, params: BuildParams, summary: BuildSummary,
                     targets: list[tuple] | None = None) -> Iterator[Candidate]:
    """Every (frame, description) pair of a video that passes the V and V_o thresholds."""
    if targets is None:
        targets = _targets(visit, summary)
    mesh = None
    if params.occlusion == "mesh":
        if video.mesh_path is None:
            raise ValueError(f"visit {visit.visit_id} video {video.video_id}: no mesh for "
                             "--occlusion mesh (use --occlusion depth)")
        vertices, faces, _ = read_mesh(video.mesh_path)
        mesh = (arkit_to_laser(vertices, video.laser_to_arkit), faces)
    for frame in video.frames[:: params.stride]:
        summary.frames += 1
        k = frame.intrinsics
        depth = None
        for d, annot_ids, label, pts in targets:
            summary.pairs += 1
            uv, z = project(pts, frame)
            if not (z > 0).any():
                summary.dropped[BEHIND] += 1
                continue
            if depth is None:
                if mesh is not None:
                    depth = mesh_depth(mesh, frame)
                else:
                    if frame.depth is None:
                        raise ValueError(f"{frame.rgb}: no depth PNG for --occlusion depth")
                    depth = read_depth(frame)
            v, v_o, inside = visibility(uv, z, k.width, k.height, depth, params.occlusion, params)
            if v < params.v_min:
                summary.dropped[OUTSIDE] += 1
                continue
            if v_o > params.vo_max:
                summary.dropped[SEEN] += 1
                continue
            xy = uv[inside]
            box = [float(xy[:, 0].min()), float(xy[:, 1].min()),
                   float(xy[:, 0].max()), float(xy[:, 1].max())]
            summary.candidates += 1
            yield Candidate(visit.visit_id, video.video_id, frame.timestamp, frame.rgb, k.width,
                            k.height, d.desc_id, d.text, annot_ids, label, v, v_o, box)


def pick_index(visit_id: str, desc_id: str, seed: int, n: int) -> int:
    """The frame rule: index sha256("visit|desc|seed") mod n. It sees only the ids, the seed
    and how many frames there are, never where the target lies in them."""
    digest = hashlib.sha256(f"{visit_id}|{desc_id}|{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def select(cands: list[Candidate], params: BuildParams, summary: BuildSummary) -> list[Candidate]:
    """Quality control within one visit (see the module docstring)."""
    first_desc: dict[str, str] = {}
    by_desc: dict[str, list[Candidate]] = {}
    for c in cands:
        key = _norm(c.instruction)
        if first_desc.setdefault(key, c.desc_id) != c.desc_id:
            summary.dropped["repeated instruction"] += 1
            continue
        if min(c.box[2] - c.box[0], c.box[3] - c.box[1]) < params.min_box_px:
            summary.dropped["box too small"] += 1
            continue
        by_desc.setdefault(c.desc_id, []).append(c)
    chosen = []
    for desc_id, group in by_desc.items():
        group.sort(key=lambda c: (c.video_id, timestamp_order(c.timestamp)))
        k = pick_index(group[0].visit_id, desc_id, params.seed, len(group))
        c = group[k]
        c.pick = {"rule": FRAME_RULE, "seed": params.seed, "n": len(group), "index": k}
        chosen.append(c)
        summary.dropped["another frame chosen for the description"] += len(group) - 1
    if not params.dedupe_images:
        return chosen
    import imagehash

    kept: list[tuple[Candidate, Any]] = []
    for c in sorted(chosen, key=lambda c: (c.desc_id, c.timestamp)):
        h = imagehash.phash(load_image(c.rgb))  # an unreadable frame: one line naming it
        if any(h - other <= params.phash_max_distance for _, other in kept):
            summary.dropped["near-duplicate image"] += 1
            continue
        kept.append((c, h))
    return [c for c, _ in kept]


def review_reasons(c: Candidate) -> list[str]:
    """Why a person should look at an instance a program kept."""
    reasons = []
    x1, y1, x2, y2 = c.box
    if min(x1, y1, c.width - x2, c.height - y2) < 5:
        reasons.append("box touches the image border")
    if (x2 - x1) * (y2 - y1) > 0.1 * c.width * c.height:
        reasons.append("box covers over 10 % of the image")
    if len(c.annot_ids) > 1:
        reasons.append("the description names several annotations")
    return reasons


def build(root: str | Path, out: str | Path, params: BuildParams = BuildParams(),
          progress: bool = True) -> BuildSummary:
    """Build a SceneFunRI folder (``instances.jsonl``, ``images/``, ``review.jsonl``,
    ``build.json``)."""
    root, out = Path(root), Path(out)
    visits = list_visits(root)
    if not visits:
        raise ValueError(f"{root}: no SceneFun3D visits (folders of 6 digits) found")
    (out / "images").mkdir(parents=True, exist_ok=True)
    summary = BuildSummary()
    lines, review = [], []
    from rich.progress import Progress

    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("building", total=len(visits))
        for visit_id in visits:
            skipped: dict[str, int] = {}
            visit = read_visit(root, visit_id, skipped=skipped)
            summary.visits += 1
            summary.frames_skipped += sum(skipped.values())
            targets = _targets(visit, summary)
            cands = [c for video in visit.videos
                     for c in frame_candidates(visit, video, params, summary, targets)]
            for c in select(cands, params, summary):
                load_image(c.rgb)  # an empty or undecodable frame: one line naming it
                name = f"{c.visit_id}_{c.video_id}_{c.timestamp}{c.rgb.suffix}"
                shutil.copyfile(c.rgb, out / "images" / name)
                iid = f"{c.visit_id}-{c.desc_id}"
                lines.append({
                    "id": iid, "image": f"images/{name}", "instruction": c.instruction,
                    "box": [round(v, 2) for v in c.box],
                    "meta": {"visit": c.visit_id, "video": c.video_id,
                             "timestamp": c.timestamp, "annotations": c.annot_ids,
                             "affordance": c.label, "V": c.v, "V_o": c.v_o},
                })
                review.append({"id": iid, "reasons": review_reasons(c), "frame": c.pick})
            bar.advance(task)
    summary.kept = len(lines)
    # a person's decisions (`unseen data review`) survive the rebuild, by instance id
    lines, review = carry_over(out, lines, review)
    summary.rejected_in_review = summary.kept - len(lines)
    with open(out / "instances.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in lines)
    with open(out / "review.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in review)
    (out / BUILD_FILE).write_text(json.dumps(summary.to_json(params), indent=1) + "\n",
                                  encoding="utf-8")
    return summary
