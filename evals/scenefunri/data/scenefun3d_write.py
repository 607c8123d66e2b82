"""Writing SceneFun3D visits in the public toolkit's layout (see :mod:`.scenefun3d` for the
layout and its conventions, which :func:`write_visit` writes exactly as the reader reads)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image
from plyfile import PlyData, PlyElement

from .scenefun3d_types import (
    AFFORDANCES,
    TIMESTAMP,
    VIDEO_ID,
    SceneFun3DError,
    VideoData,
    VisitData,
    matrix_to_angle_axis,
    visit_folder,
)

__all__ = ["write_visit"]


# --- writing -------------------------------------------------------------------------


def _check_rigid(m: np.ndarray, what: str) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (4, 4) or not np.isfinite(m).all():
        raise SceneFun3DError(f"{what}: expected a finite 4x4 matrix, got shape {m.shape}")
    r = m[:3, :3]
    if (not np.allclose(m[3], [0, 0, 0, 1], atol=1e-9)
            or not np.allclose(r @ r.T, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0):
        raise SceneFun3DError(f"{what}: not a rigid transform (rotation + translation)")
    return m


def _ts_ok(ts: str, what: str) -> None:
    if not isinstance(ts, str) or not TIMESTAMP.fullmatch(ts):
        raise SceneFun3DError(f"{what}: timestamp {ts!r} must be a non-empty string "
                              "without whitespace or slashes")


def _write_ply(path: Path, elements: list[PlyElement], ascii: bool) -> None:
    PlyData(elements, text=ascii, byte_order="<").write(str(path))


def _vertex_element(xyz: np.ndarray, rgb: np.ndarray | None) -> PlyElement:
    dt = [("x", "<f4"), ("y", "<f4"), ("z", "<f4")]
    if rgb is not None:
        dt += [("red", "u1"), ("green", "u1"), ("blue", "u1")]
    v = np.empty(len(xyz), dtype=dt)
    for i, c in enumerate("xyz"):
        v[c] = xyz[:, i]
    if rgb is not None:
        for i, c in enumerate(("red", "green", "blue")):
            v[c] = rgb[:, i]
    return PlyElement.describe(v, "vertex")


def _colors(c: np.ndarray, n: int, what: str) -> np.ndarray:
    c = np.asarray(c)
    if c.shape != (n, 3):
        raise SceneFun3DError(f"{what}: colours shape {c.shape}, expected ({n}, 3)")
    if c.dtype != np.uint8:
        if not np.issubdtype(c.dtype, np.integer) or (c.size and (c.min() < 0 or c.max() > 255)):
            raise SceneFun3DError(f"{what}: colours must be uint8")
        c = c.astype(np.uint8)
    return c


def _xyz_in(p: np.ndarray, what: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or not np.isfinite(p).all():
        raise SceneFun3DError(f"{what}: expected finite (N, 3) coordinates, got {p.shape}")
    return p


def _fmt(x: float) -> str:
    return repr(float(x))


def _check_video(v: VideoData) -> None:
    """Every check on a video's data, before anything is written."""
    vid = v.video_id
    if not isinstance(vid, str) or not VIDEO_ID.fullmatch(vid):
        raise SceneFun3DError(f"video_id must be 8 digits, got {vid!r}")
    _check_rigid(v.laser_to_arkit, f"video {vid} laser_to_arkit")
    stamps = [f.timestamp for f in v.frames]
    if len(set(stamps)) != len(stamps):
        raise SceneFun3DError(f"video {vid}: duplicate frame timestamps")
    for f in v.frames:
        what = f"video {vid} frame {f.timestamp!r}"
        _ts_ok(f.timestamp, what)
        rgb = np.asarray(f.rgb)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise SceneFun3DError(f"{what}: rgb must be (H, W, 3) uint8, "
                                  f"got {rgb.shape} {rgb.dtype}")
        k = f.intrinsics
        if (k.width, k.height) != (rgb.shape[1], rgb.shape[0]):
            raise SceneFun3DError(f"{what}: intrinsics {k.width}x{k.height} but image "
                                  f"{rgb.shape[1]}x{rgb.shape[0]}")
        _check_rigid(f.camera_to_world, f"{what} camera_to_world")
        if f.depth_m is not None and np.ndim(f.depth_m) != 2:
            raise SceneFun3DError(f"{what}: depth must be (H, W), got {np.shape(f.depth_m)}")
    if v.mesh_vertices is not None:
        verts = _xyz_in(v.mesh_vertices, f"video {vid} mesh vertices")
        if v.mesh_faces is not None:
            faces = np.asarray(v.mesh_faces)
            if (faces.ndim != 2 or faces.shape[1] != 3
                    or (faces.size and not np.issubdtype(faces.dtype, np.integer))):
                raise SceneFun3DError(f"video {vid} mesh faces: expected (F, 3) ints, "
                                      f"got {faces.shape} {faces.dtype}")
            if faces.size and (faces.min() < 0 or faces.max() >= len(verts)):
                raise SceneFun3DError(f"video {vid} mesh faces: index out of range")
        if v.mesh_colors is not None:
            _colors(v.mesh_colors, len(verts), f"video {vid} mesh")
    elif v.mesh_faces is not None or v.mesh_colors is not None:
        raise SceneFun3DError(f"video {vid}: mesh faces/colours given without vertices")


def _write_video(vdir: Path, v: VideoData, ascii: bool) -> None:
    vid = v.video_id
    wide, intr, depth = vdir / "hires_wide", vdir / "hires_wide_intrinsics", vdir / "hires_depth"
    wide.mkdir(parents=True)
    intr.mkdir()
    traj: list[str] = []
    for f in v.frames:
        name = f"{vid}_{f.timestamp}"
        Image.fromarray(np.asarray(f.rgb)).save(wide / f"{name}.jpg", quality=95)
        k = f.intrinsics
        (intr / f"{name}.pincam").write_text(
            f"{int(k.width)} {int(k.height)} {_fmt(k.fx)} {_fmt(k.fy)} {_fmt(k.cx)} {_fmt(k.cy)}\n",
            encoding="utf-8")
        c2w = np.asarray(f.camera_to_world, dtype=np.float64)
        r = c2w[:3, :3].T  # world→camera rotation
        t = -r @ c2w[:3, 3]
        traj.append(" ".join([f.timestamp, *map(_fmt, matrix_to_angle_axis(r)),
                              *map(_fmt, t)]) + "\n")
        if f.depth_m is not None:
            d = np.asarray(f.depth_m, dtype=np.float64)
            ok = np.isfinite(d) & (d > 0)
            mm = np.zeros(d.shape, np.uint16)
            mm[ok] = np.clip(np.rint(d[ok] * 1000.0), 0, 65535).astype(np.uint16)
            depth.mkdir(exist_ok=True)
            Image.fromarray(mm).save(depth / f"{name}.png")  # uint16 → mode "I;16"
    (vdir / "hires_poses.traj").write_text("".join(traj), encoding="utf-8")
    np.save(vdir / f"{vid}_transform.npy", np.asarray(v.laser_to_arkit, dtype=np.float64))
    if v.mesh_vertices is not None:
        verts = np.asarray(v.mesh_vertices, dtype=np.float64)
        faces = np.zeros((0, 3), np.int64) if v.mesh_faces is None else np.asarray(v.mesh_faces)
        cols = None if v.mesh_colors is None else _colors(v.mesh_colors, len(verts), "mesh")
        fa = np.empty(len(faces), dtype=[("vertex_indices", "<i4", (3,))])
        fa["vertex_indices"] = faces
        face_el = PlyElement.describe(fa, "face", len_types={"vertex_indices": "u1"})
        _write_ply(vdir / f"{vid}_arkit_mesh.ply", [_vertex_element(verts, cols), face_el], ascii)


def write_visit(root: Path | str, data: VisitData, *, ascii: bool = False,
                overwrite: bool = False) -> Path:
    """Write ``data`` as ``<root>/<visit_id>/`` in the layout :func:`read_visit` reads.

    The laser scan and meshes are little-endian binary PLY (``ascii=True``: ASCII PLY);
    frames JPEG quality 95; depth uint16 millimetres (rounded, clipped to 65535, 0 where
    unknown: non-finite or <= 0). An existing non-empty visit folder is an error unless
    ``overwrite`` (which deletes it first). Returns the visit folder.
    """
    vdir = visit_folder(root, data.visit_id)
    vis = data.visit_id
    pts = _xyz_in(data.points, f"visit {vis} points")
    cols = _colors(data.colors, len(pts), f"visit {vis} points")
    crop = None
    if data.crop_mask is not None:
        crop = np.asarray(data.crop_mask)
        if crop.shape != (len(pts),):
            raise SceneFun3DError(f"visit {vis}: crop mask shape {crop.shape}, "
                                  f"expected ({len(pts)},)")
        crop = crop.astype(bool)
    ids: set[str] = set()
    annots = []
    for a in data.annotations:
        idx = np.asarray(a.indices).reshape(-1)
        if a.label not in AFFORDANCES:
            raise SceneFun3DError(f"visit {vis} annotation {a.annot_id!r}: label {a.label!r}")
        if idx.size and (not np.issubdtype(idx.dtype, np.integer)
                         or idx.min() < 0 or idx.max() >= len(pts)):
            raise SceneFun3DError(f"visit {vis} annotation {a.annot_id!r}: indices out of range")
        if a.annot_id in ids:
            raise SceneFun3DError(f"visit {vis}: duplicate annot_id {a.annot_id!r}")
        ids.add(a.annot_id)
        annots.append({"annot_id": a.annot_id, "indices": [int(i) for i in idx],
                       "label": a.label})
    descs = []
    for d in data.descriptions:
        unknown = [x for x in d.annot_ids if x not in ids]
        if unknown:
            raise SceneFun3DError(f"visit {vis} description {d.desc_id!r}: "
                                  f"unknown annotation {unknown[0]!r}")
        descs.append({"desc_id": d.desc_id, "annot_id": list(d.annot_ids),
                      "description": d.text})
    if len({v.video_id for v in data.videos}) != len(data.videos):
        raise SceneFun3DError(f"visit {vis}: duplicate video ids")
    for v in data.videos:
        _check_video(v)
    if vdir.exists() and any(vdir.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{vdir} exists and is not empty (pass overwrite=True)")
        shutil.rmtree(vdir)
    vdir.mkdir(parents=True, exist_ok=True)
    _write_ply(vdir / f"{vis}_laser_scan.ply", [_vertex_element(pts, cols)], ascii)
    if crop is not None:
        np.save(vdir / f"{vis}_crop_mask.npy", crop)
    (vdir / f"{vis}_annotations.json").write_text(
        json.dumps({"visit_id": vis, "annotations": annots}), encoding="utf-8")
    (vdir / f"{vis}_descriptions.json").write_text(
        json.dumps({"visit_id": vis, "descriptions": descs}, ensure_ascii=False),
        encoding="utf-8")
    if data.motions is not None:
        (vdir / f"{vis}_motions.json").write_text(json.dumps(data.motions), encoding="utf-8")
    for v in data.videos:
        _write_video(vdir / v.video_id, v, ascii)
    return vdir
