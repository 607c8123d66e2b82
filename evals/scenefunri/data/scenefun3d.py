"""Read and write SceneFun3D visits in the public toolkit's layout (``utils/data_parser.py``).

Layout (``visit_id``: 6 digits, ``video_id``: 8 digits)::

    <root>/<visit_id>/
      <visit_id>_laser_scan.ply        XYZRGB points (binary or ASCII PLY)     required
      <visit_id>_crop_mask.npy         bool over the points                    optional
      <visit_id>_annotations.json      {"visit_id", "annotations": [...]}      required
      <visit_id>_descriptions.json     {"visit_id", "descriptions": [...]}     required
      <visit_id>_motions.json          anything                                optional
      <video_id>/
        hires_wide/<video_id>_<ts>.jpg                                         required folder
        hires_wide_intrinsics/<video_id>_<ts>.pincam   "w h fx fy cx cy"       required folder
        hires_depth/<video_id>_<ts>.png                uint16 millimetres      optional
        hires_poses.traj               "ts ax ay az tx ty tz", world→camera    required
        <video_id>_transform.npy       4x4, laser scan → ARKit                 required
        <video_id>_arkit_mesh.ply      mesh, ARKit frame                       optional

Conventions:

- ``<ts>`` is the text after the first ``_`` of a file name (without extension); a frame's
  jpg, pincam and depth files share it as text. Its pose is the traj line with the same
  text, else the one nearest in numeric value; a frame before the first or after the last
  pose has none (``DataParser.get_nearest_pose``, which the toolkit's examples call with no
  time threshold: the traj keys are ``str(float(ts))``, so ``"100.50"`` finds ``100.5``).
  Frames are ordered by the timestamp's numeric value.
- A jpg frame without a pincam file or without a traj line is skipped, not an error; the
  count is returned by :func:`read_video` and, per video, in ``read_visit(..., skipped=d)``.
- The traj pose is world→camera (angle-axis via Rodrigues, translation in metres); it is
  inverted to ``Frame.camera_to_world``, as the toolkit does (``DataParser.TrajStringToMatrix``).
  The writer writes the inverse of ``FrameData.camera_to_world``.
- Frames, as the toolkit uses them: the hires poses' world is the laser scan's frame
  (``examples/project_rgb_on_laser_scan.py`` projects the scan with them, untransformed);
  ``transform.npy`` maps laser → ARKit (``get_transform``) and the ARKit mesh is in the ARKit
  frame, reaching the laser frame through the inverse (``examples/show_annotations.py``).
  Reader and writer store what they are given; these are the frames they are meant in.
- :func:`read_depth` returns float32 metres with NaN where the PNG holds 0 (unknown).
- The writer stores the laser scan and mesh vertices as float32 (as the real data does).
- Every malformed or missing required file raises :class:`SceneFun3DError` with one line
  ``<path>[:<line>[:<column>]]: <why>``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from plyfile import PlyData, PlyListProperty

from .scenefun3d_types import (
    AFFORDANCES,
    VIDEO_ID,
    VISIT_ID,
    Annotation,
    Description,
    Frame,
    Intrinsics,
    Video,
    Visit,
    angle_axis_to_matrix,
    error_at,
    timestamp_of,
    timestamp_order,
    visit_folder,
)
from .scenefun3d_types import SceneFun3DError as SceneFun3DError

__all__ = [
    "SceneFun3DError",
    "list_visits",
    "read_depth",
    "read_mesh",
    "read_video",
    "read_visit",
    "usable_annotations",
    "write_visit",
]

# the writer lives in its own module; it is still spelled scenefun3d.write_visit
from .scenefun3d_write import write_visit  # noqa: E402

# --- reading -------------------------------------------------------------------------


def list_visits(root: Path | str) -> list[str]:
    """The 6-digit visit folders under ``root``, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise error_at(root, "not a directory")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and VISIT_ID.fullmatch(p.name))


def usable_annotations(visit: Visit) -> list[Annotation]:
    """The visit's annotations without those labelled "exclude"."""
    return [a for a in visit.annotations if a.label != "exclude"]


def _read_ply(path: Path) -> PlyData:
    if not path.is_file():
        raise error_at(path, "file not found")
    try:
        return PlyData.read(str(path))
    except Exception as e:  # plyfile raises several unrelated types on bad input
        raise error_at(path, f"not a readable PLY file ({type(e).__name__}: {e})") from e


def _element(ply: PlyData, name: str):
    for el in ply.elements:
        if el.name == name:
            return el
    return None


def _xyz(el, path: Path) -> np.ndarray:
    names = {p.name for p in el.properties}
    missing = [c for c in "xyz" if c not in names]
    if missing:
        raise error_at(path, f"element '{el.name}' has no {'/'.join(missing)} property")
    xyz = np.stack([np.asarray(el.data[c], dtype=np.float64) for c in "xyz"], axis=1)
    if not np.isfinite(xyz).all():
        raise error_at(path, "non-finite x/y/z values")
    return xyz.reshape(-1, 3)


def _rgb(el, path: Path, required: bool) -> np.ndarray | None:
    names = {p.name for p in el.properties}
    have = [c in names for c in ("red", "green", "blue")]
    if not all(have):
        if required or any(have):
            raise error_at(path, f"element '{el.name}' lacks red/green/blue properties")
        return None
    cols = [np.asarray(el.data[c]) for c in ("red", "green", "blue")]
    for c in cols:
        if not np.issubdtype(c.dtype, np.integer) or (c.size and (c.min() < 0 or c.max() > 255)):
            raise error_at(path, f"colours must be integers 0..255, got {c.dtype}")
    return np.stack(cols, axis=1).astype(np.uint8).reshape(-1, 3)


def _read_vertices(path: Path, colors_required: bool):
    """The PLY file, its points (N, 3) and their colours (None when absent and optional)."""
    ply = _read_ply(path)
    el = _element(ply, "vertex")
    if el is None:
        raise error_at(path, "no 'vertex' element")
    return ply, _xyz(el, path), _rgb(el, path, required=colors_required)


def _read_scan(path: Path) -> tuple[np.ndarray, np.ndarray]:
    _, pts, cols = _read_vertices(path, colors_required=True)
    assert cols is not None
    return pts, cols


def read_mesh(path: Path | str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(vertices (V,3) float64, faces (F,3) int64, colours (V,3) uint8 or None)``.

    Faces must be triangles; a file without a face element gives ``(0, 3)`` faces.
    """
    path = Path(path)
    ply, verts, cols = _read_vertices(path, colors_required=False)
    fel = _element(ply, "face")
    if fel is None or len(fel.data) == 0:
        return verts, np.zeros((0, 3), np.int64), cols
    prop = next((p for p in fel.properties if isinstance(p, PlyListProperty)
                 and p.name in ("vertex_indices", "vertex_index")), None)
    if prop is None:
        raise error_at(path, "face element has no vertex_indices list")
    lists = fel.data[prop.name]
    lens = np.fromiter((len(f) for f in lists), dtype=np.int64, count=len(lists))
    if (lens != 3).any():
        i = int(np.flatnonzero(lens != 3)[0])
        raise error_at(path, f"face {i} has {lens[i]} vertices, expected triangles")
    faces = np.stack([np.asarray(f) for f in lists]).astype(np.int64)
    if faces.size and (faces.min() < 0 or faces.max() >= len(verts)):
        raise error_at(path, f"face index out of range of {len(verts)} vertices")
    return verts, faces, cols


def _read_text(path: Path) -> str:
    """A text file of the toolkit's layout, or the one-line error that names it."""
    if not path.is_file():
        raise error_at(path, "file not found")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise error_at(path, f"cannot read ({e})") from e


def _load_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error_at(path, f"bad JSON: {e.msg}", e.lineno, e.colno) from e


def _field(obj: Any, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    if not isinstance(obj, dict):
        raise error_at(path, f"{where} must be a JSON object")
    if key not in obj:
        raise error_at(path, f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, kind) or isinstance(v, bool):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise error_at(path, f"{where}: field {key!r} must be {names}, got {type(v).__name__}")
    return v


def _check_visit_id(doc: Any, path: Path, visit_id: str) -> None:
    vid = _field(doc, "visit_id", (str, int), path, "top level")
    if str(vid) != visit_id:
        raise error_at(path, f"visit_id {vid!r} does not match folder {visit_id}")


def _read_annotations(path: Path, visit_id: str, n_points: int) -> list[Annotation]:
    doc = _load_json(path)
    _check_visit_id(doc, path, visit_id)
    items = _field(doc, "annotations", list, path, "top level")
    out: list[Annotation] = []
    seen: set[str] = set()
    for i, a in enumerate(items):
        where = f"annotations[{i}]"
        aid = str(_field(a, "annot_id", (str, int), path, where))
        label = _field(a, "label", str, path, where)
        idx = _field(a, "indices", list, path, where)
        if aid in seen:
            raise error_at(path, f"{where}: duplicate annot_id {aid!r}")
        seen.add(aid)
        if label not in AFFORDANCES:
            raise error_at(path, f"{where}: unknown label {label!r}")
        if not all(isinstance(k, int) and not isinstance(k, bool) for k in idx):
            raise error_at(path, f"{where}: indices must be integers")
        arr = np.asarray(idx, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= n_points):
            bad = int(arr[(arr < 0) | (arr >= n_points)][0])
            raise error_at(path, f"{where}: index {bad} out of range of the {n_points}-point scan")
        out.append(Annotation(annot_id=aid, indices=arr, label=label))
    return out


def _read_descriptions(path: Path, visit_id: str, annot_ids: set[str]) -> list[Description]:
    doc = _load_json(path)
    _check_visit_id(doc, path, visit_id)
    items = _field(doc, "descriptions", list, path, "top level")
    out: list[Description] = []
    for i, d in enumerate(items):
        where = f"descriptions[{i}]"
        did = str(_field(d, "desc_id", (str, int), path, where))
        ids = _field(d, "annot_id", (list, str, int), path, where)
        ids = ids if isinstance(ids, list) else [ids]
        text = _field(d, "description", str, path, where)
        names = []
        for a in ids:
            if not isinstance(a, (str, int)) or isinstance(a, bool):
                raise error_at(path, f"{where}: annot_id entries must be strings")
            if str(a) not in annot_ids:
                raise error_at(path, f"{where}: unknown annotation {str(a)!r}")
            names.append(str(a))
        out.append(Description(desc_id=did, annot_ids=names, text=text))
    return out


def _read_crop_mask(path: Path, n_points: int) -> np.ndarray | None:
    if not path.exists():
        return None
    try:
        m = np.load(path, allow_pickle=False)
    except Exception as e:
        raise error_at(path, f"not a readable .npy file ({e})") from e
    if m.shape != (n_points,):
        raise error_at(path, f"shape {m.shape}, expected ({n_points},) like the scan")
    if m.dtype != np.bool_:
        if not np.issubdtype(m.dtype, np.integer) or not np.isin(m, (0, 1)).all():
            raise error_at(path, f"dtype {m.dtype}, expected bool")
        m = m.astype(bool)
    return m


def _read_transform(path: Path) -> np.ndarray:
    if not path.is_file():
        raise error_at(path, "file not found")
    try:
        t = np.load(path, allow_pickle=False)
    except Exception as e:
        raise error_at(path, f"not a readable .npy file ({e})") from e
    if t.shape != (4, 4):
        raise error_at(path, f"shape {t.shape}, expected 4x4")
    if not np.issubdtype(t.dtype, np.number) or not np.isfinite(t).all():
        raise error_at(path, "expected finite numbers")
    t = t.astype(np.float64)
    if not np.allclose(t[3], [0, 0, 0, 1], atol=1e-6):
        raise error_at(path, f"last row {t[3].tolist()}, expected [0, 0, 0, 1]")
    return t


def _numbers(tokens: list[str], path: Path, line: int) -> list[float]:
    try:
        vals = [float(t) for t in tokens]
    except ValueError:
        raise error_at(path, f"not a number in {' '.join(tokens)!r}", line) from None
    if not all(math.isfinite(v) for v in vals):
        raise error_at(path, "non-finite number", line)
    return vals


def _read_pincam(path: Path) -> Intrinsics:
    text = _read_text(path)
    lines = [(i, ln.split()) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise error_at(path, "empty, expected one line 'w h fx fy cx cy'")
    if len(lines) > 1:
        raise error_at(path, "more than one line", lines[1][0])
    n, tokens = lines[0]
    if len(tokens) != 6:
        raise error_at(path, f"{len(tokens)} values, expected 6 'w h fx fy cx cy'", n)
    w, h, fx, fy, cx, cy = _numbers(tokens, path, n)
    if w != int(w) or h != int(h) or w <= 0 or h <= 0:
        raise error_at(path, f"width/height must be positive integers, got {tokens[0]} {tokens[1]}", n)
    if fx <= 0 or fy <= 0:
        raise error_at(path, "focal lengths must be positive", n)
    return Intrinsics(int(w), int(h), fx, fy, cx, cy)


def _read_traj(path: Path) -> dict[str, np.ndarray]:
    """Timestamp string → camera→world 4x4 (the file holds world→camera)."""
    text = _read_text(path)
    poses: dict[str, np.ndarray] = {}
    for n, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != 7:
            raise error_at(path, f"{len(tokens)} values, expected 7 'ts ax ay az tx ty tz'", n)
        ts = tokens[0]
        vals = _numbers(tokens[1:], path, n)
        if ts in poses:
            raise error_at(path, f"duplicate timestamp {ts}", n)
        w2c = np.eye(4)
        w2c[:3, :3] = angle_axis_to_matrix(np.array(vals[:3]))
        w2c[:3, 3] = vals[3:]
        poses[ts] = np.linalg.inv(w2c)
    return poses


def pose_times(poses: dict[str, np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """The traj's numeric timestamps, sorted, and their texts in the same order."""
    numeric = []
    for ts in poses:
        try:
            v = float(ts)
        except ValueError:
            continue
        if math.isfinite(v):
            numeric.append((v, ts))
    numeric.sort()
    return np.array([v for v, _ in numeric]), [ts for _, ts in numeric]


def nearest_pose(ts: str, poses: dict[str, np.ndarray],
                 times: tuple[np.ndarray, list[str]]) -> np.ndarray | None:
    """A frame's camera→world pose as ``DataParser.get_nearest_pose`` finds it: the pose of
    the same timestamp text, else the one nearest in value (ties: the earlier); None outside
    the traj's time range or for a timestamp that is not a number."""
    if ts in poses:
        return poses[ts]
    values, texts = times
    try:
        v = float(ts)
    except ValueError:
        return None
    if not len(values) or not math.isfinite(v) or v < values[0] or v > values[-1]:
        return None
    i = int(np.searchsorted(values, v))
    if i == len(values) or (i > 0 and v - values[i - 1] <= values[i] - v):
        i -= 1
    return poses[texts[i]]


def read_video(visit_dir: Path | str, video_id: str) -> tuple[Video, int]:
    """One video folder: ``(Video, number of jpg frames skipped for lack of pose/intrinsics)``."""
    vdir = Path(visit_dir) / video_id
    if not VIDEO_ID.fullmatch(video_id):
        raise error_at(vdir, "video_id must be 8 digits")
    wide, intr_dir = vdir / "hires_wide", vdir / "hires_wide_intrinsics"
    for d in (wide, intr_dir):
        if not d.is_dir():
            raise error_at(d, "directory not found")
    transform = _read_transform(vdir / f"{video_id}_transform.npy")
    poses = _read_traj(vdir / "hires_poses.traj")
    times = pose_times(poses)
    depth_dir = vdir / "hires_depth"
    frames: list[Frame] = []
    skipped = 0
    for jpg in wide.iterdir():
        if jpg.suffix.lower() != ".jpg" or not jpg.is_file():
            continue
        ts = timestamp_of(jpg)
        if jpg.stem.partition("_")[0] != video_id:
            raise error_at(jpg, f"file name does not start with the video id {video_id}_")
        pincam = intr_dir / f"{video_id}_{ts}.pincam"
        pose = nearest_pose(ts, poses, times)
        if pose is None or not pincam.is_file():
            skipped += 1
            continue
        depth = depth_dir / f"{video_id}_{ts}.png"
        frames.append(Frame(video_id=video_id, timestamp=ts, rgb=jpg,
                            intrinsics=_read_pincam(pincam), camera_to_world=pose,
                            depth=depth if depth.is_file() else None))
    frames.sort(key=lambda f: timestamp_order(f.timestamp))
    mesh = vdir / f"{video_id}_arkit_mesh.ply"
    return (Video(video_id=video_id, frames=frames, laser_to_arkit=transform,
                  mesh_path=mesh if mesh.is_file() else None), skipped)


def read_visit(root: Path | str, visit_id: str, *,
               skipped: dict[str, int] | None = None) -> Visit:
    """Read ``<root>/<visit_id>/``. Frames stay file references (images are not opened).

    ``skipped``, if given, is filled with video_id → frames skipped (no pose or intrinsics).
    """
    vdir = visit_folder(root, visit_id)
    if not vdir.is_dir():
        raise error_at(vdir, "visit directory not found")
    points, colors = _read_scan(vdir / f"{visit_id}_laser_scan.ply")
    crop = _read_crop_mask(vdir / f"{visit_id}_crop_mask.npy", len(points))
    annots = _read_annotations(vdir / f"{visit_id}_annotations.json", visit_id, len(points))
    descs = _read_descriptions(vdir / f"{visit_id}_descriptions.json", visit_id,
                               {a.annot_id for a in annots})
    videos = []
    for d in sorted(vdir.iterdir()):
        if d.is_dir() and VIDEO_ID.fullmatch(d.name):
            video, n = read_video(vdir, d.name)
            videos.append(video)
            if skipped is not None:
                skipped[d.name] = n
    return Visit(visit_id=visit_id, root=vdir, points=points, colors=colors, crop_mask=crop,
                 annotations=annots, descriptions=descs, videos=videos)


def read_motions(root: Path | str, visit_id: str) -> Any | None:
    """The parsed ``<visit_id>_motions.json``, or None if the visit has none."""
    path = visit_folder(root, visit_id) / f"{visit_id}_motions.json"
    return _load_json(path) if path.exists() else None


def read_depth(frame: Frame) -> np.ndarray:
    """The frame's depth as float32 metres, NaN where unknown (0 in the PNG)."""
    if frame.depth is None:
        raise SceneFun3DError(f"frame {frame.video_id}_{frame.timestamp} has no depth file")
    path = Path(frame.depth)
    try:
        with Image.open(path) as im:
            mode = im.mode
            arr = np.asarray(im)
    except Exception as e:
        raise error_at(path, f"not a readable image ({e})") from e
    if mode not in ("I;16", "I;16B", "I;16L", "I") or arr.ndim != 2:
        raise error_at(path, f"mode {mode}, expected a 16-bit single-channel depth PNG")
    mm = arr.astype(np.float32)
    out = mm / np.float32(1000.0)
    out[mm == 0] = np.nan
    return out
