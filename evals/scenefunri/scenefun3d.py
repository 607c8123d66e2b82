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
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from plyfile import PlyData, PlyElement, PlyListProperty

from .scenefun3d_types import (
    AFFORDANCES,
    Annotation,
    Description,
    Frame,
    Intrinsics,
    Video,
    VideoData,
    Visit,
    VisitData,
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

_VISIT_RE = re.compile(r"\d{6}")
_VIDEO_RE = re.compile(r"\d{8}")
_TS_RE = re.compile(r"[^\s/\\]+")  # a timestamp must survive a file name and a traj token


def _err(path: Path | str, why: str, line: int | None = None,
         col: int | None = None) -> SceneFun3DError:
    where = str(path)
    if line is not None:
        where += f":{line}"
        if col is not None:
            where += f":{col}"
    msg = f"{where}: {why}"
    return SceneFun3DError(" ".join(msg.split()))  # one line, whatever `why` carried


# --- paths ---------------------------------------------------------------------------


def _visit_dir(root: Path | str, visit_id: str) -> Path:
    if not isinstance(visit_id, str) or not _VISIT_RE.fullmatch(visit_id):
        raise SceneFun3DError(f"visit_id must be 6 digits, got {visit_id!r}")
    return Path(root) / visit_id


def _timestamp(path: Path) -> str:
    """The text after the first '_' of the file name, without the extension."""
    prefix, sep, ts = path.stem.partition("_")
    if not sep or not ts:
        raise _err(path, "file name is not <video_id>_<timestamp>")
    return ts


def timestamp_order(ts: str) -> tuple[float, str]:
    """Sort key of a timestamp: its numeric value (non-numbers last), then its text."""
    try:
        v = float(ts)
    except ValueError:
        v = math.inf
    return (v if math.isfinite(v) else math.inf, ts)


# --- rotations -----------------------------------------------------------------------


def _angle_axis_to_matrix(a: np.ndarray) -> np.ndarray:
    """Rodrigues: the rotation by |a| radians about a/|a| (what cv2.Rodrigues gives)."""
    a = np.asarray(a, dtype=np.float64).reshape(3)
    theta = float(np.linalg.norm(a))
    if theta < 1e-12:
        k, s, c1 = a, 1.0, 0.0  # first order: I + [a]x
    else:
        k, s, c1 = a / theta, math.sin(theta), 1.0 - math.cos(theta)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * kx + c1 * (kx @ kx)


def _matrix_to_angle_axis(r: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_angle_axis_to_matrix`, via a unit quaternion (stable near pi)."""
    r = np.asarray(r, dtype=np.float64)
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    i = int(np.argmax([tr, r[0, 0], r[1, 1], r[2, 2]]))
    if i == 0:
        w = math.sqrt(max(1.0 + tr, 0.0)) / 2
        q = [w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w),
             (r[1, 0] - r[0, 1]) / (4 * w)]
    elif i == 1:
        x = math.sqrt(max(1.0 + r[0, 0] - r[1, 1] - r[2, 2], 0.0)) / 2
        q = [(r[2, 1] - r[1, 2]) / (4 * x), x, (r[0, 1] + r[1, 0]) / (4 * x),
             (r[0, 2] + r[2, 0]) / (4 * x)]
    elif i == 2:
        y = math.sqrt(max(1.0 + r[1, 1] - r[0, 0] - r[2, 2], 0.0)) / 2
        q = [(r[0, 2] - r[2, 0]) / (4 * y), (r[0, 1] + r[1, 0]) / (4 * y), y,
             (r[1, 2] + r[2, 1]) / (4 * y)]
    else:
        z = math.sqrt(max(1.0 + r[2, 2] - r[0, 0] - r[1, 1], 0.0)) / 2
        q = [(r[1, 0] - r[0, 1]) / (4 * z), (r[0, 2] + r[2, 0]) / (4 * z),
             (r[1, 2] + r[2, 1]) / (4 * z), z]
    w, v = q[0], np.array(q[1:])
    if w < 0:
        w, v = -w, -v
    n = float(np.linalg.norm(v))
    if n < 1e-15:
        return 2.0 * v
    return v * (2.0 * math.atan2(n, w) / n)


# --- reading -------------------------------------------------------------------------


def list_visits(root: Path | str) -> list[str]:
    """The 6-digit visit folders under ``root``, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise _err(root, "not a directory")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and _VISIT_RE.fullmatch(p.name))


def usable_annotations(visit: Visit) -> list[Annotation]:
    """The visit's annotations without those labelled "exclude"."""
    return [a for a in visit.annotations if a.label != "exclude"]


def _read_ply(path: Path) -> PlyData:
    if not path.is_file():
        raise _err(path, "file not found")
    try:
        return PlyData.read(str(path))
    except Exception as e:  # plyfile raises several unrelated types on bad input
        raise _err(path, f"not a readable PLY file ({type(e).__name__}: {e})") from e


def _element(ply: PlyData, name: str):
    for el in ply.elements:
        if el.name == name:
            return el
    return None


def _xyz(el, path: Path) -> np.ndarray:
    names = {p.name for p in el.properties}
    missing = [c for c in "xyz" if c not in names]
    if missing:
        raise _err(path, f"element '{el.name}' has no {'/'.join(missing)} property")
    xyz = np.stack([np.asarray(el.data[c], dtype=np.float64) for c in "xyz"], axis=1)
    if not np.isfinite(xyz).all():
        raise _err(path, "non-finite x/y/z values")
    return xyz.reshape(-1, 3)


def _rgb(el, path: Path, required: bool) -> np.ndarray | None:
    names = {p.name for p in el.properties}
    have = [c in names for c in ("red", "green", "blue")]
    if not all(have):
        if required or any(have):
            raise _err(path, f"element '{el.name}' lacks red/green/blue properties")
        return None
    cols = [np.asarray(el.data[c]) for c in ("red", "green", "blue")]
    for c in cols:
        if not np.issubdtype(c.dtype, np.integer) or (c.size and (c.min() < 0 or c.max() > 255)):
            raise _err(path, f"colours must be integers 0..255, got {c.dtype}")
    return np.stack(cols, axis=1).astype(np.uint8).reshape(-1, 3)


def _read_vertices(path: Path, colors_required: bool):
    """The PLY file, its points (N, 3) and their colours (None when absent and optional)."""
    ply = _read_ply(path)
    el = _element(ply, "vertex")
    if el is None:
        raise _err(path, "no 'vertex' element")
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
        raise _err(path, "face element has no vertex_indices list")
    lists = fel.data[prop.name]
    lens = np.fromiter((len(f) for f in lists), dtype=np.int64, count=len(lists))
    if (lens != 3).any():
        i = int(np.flatnonzero(lens != 3)[0])
        raise _err(path, f"face {i} has {lens[i]} vertices, expected triangles")
    faces = np.stack([np.asarray(f) for f in lists]).astype(np.int64)
    if faces.size and (faces.min() < 0 or faces.max() >= len(verts)):
        raise _err(path, f"face index out of range of {len(verts)} vertices")
    return verts, faces, cols


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise _err(path, "file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, f"cannot read ({e})") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _err(path, f"bad JSON: {e.msg}", e.lineno, e.colno) from e


def _field(obj: Any, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    if not isinstance(obj, dict):
        raise _err(path, f"{where} must be a JSON object")
    if key not in obj:
        raise _err(path, f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, kind) or isinstance(v, bool):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise _err(path, f"{where}: field {key!r} must be {names}, got {type(v).__name__}")
    return v


def _check_visit_id(doc: Any, path: Path, visit_id: str) -> None:
    vid = _field(doc, "visit_id", (str, int), path, "top level")
    if str(vid) != visit_id:
        raise _err(path, f"visit_id {vid!r} does not match folder {visit_id}")


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
            raise _err(path, f"{where}: duplicate annot_id {aid!r}")
        seen.add(aid)
        if label not in AFFORDANCES:
            raise _err(path, f"{where}: unknown label {label!r}")
        if not all(isinstance(k, int) and not isinstance(k, bool) for k in idx):
            raise _err(path, f"{where}: indices must be integers")
        arr = np.asarray(idx, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= n_points):
            bad = int(arr[(arr < 0) | (arr >= n_points)][0])
            raise _err(path, f"{where}: index {bad} out of range of the {n_points}-point scan")
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
                raise _err(path, f"{where}: annot_id entries must be strings")
            if str(a) not in annot_ids:
                raise _err(path, f"{where}: unknown annotation {str(a)!r}")
            names.append(str(a))
        out.append(Description(desc_id=did, annot_ids=names, text=text))
    return out


def _read_crop_mask(path: Path, n_points: int) -> np.ndarray | None:
    if not path.exists():
        return None
    try:
        m = np.load(path, allow_pickle=False)
    except Exception as e:
        raise _err(path, f"not a readable .npy file ({e})") from e
    if m.shape != (n_points,):
        raise _err(path, f"shape {m.shape}, expected ({n_points},) like the scan")
    if m.dtype != np.bool_:
        if not np.issubdtype(m.dtype, np.integer) or not np.isin(m, (0, 1)).all():
            raise _err(path, f"dtype {m.dtype}, expected bool")
        m = m.astype(bool)
    return m


def _read_transform(path: Path) -> np.ndarray:
    if not path.is_file():
        raise _err(path, "file not found")
    try:
        t = np.load(path, allow_pickle=False)
    except Exception as e:
        raise _err(path, f"not a readable .npy file ({e})") from e
    if t.shape != (4, 4):
        raise _err(path, f"shape {t.shape}, expected 4x4")
    if not np.issubdtype(t.dtype, np.number) or not np.isfinite(t).all():
        raise _err(path, "expected finite numbers")
    t = t.astype(np.float64)
    if not np.allclose(t[3], [0, 0, 0, 1], atol=1e-6):
        raise _err(path, f"last row {t[3].tolist()}, expected [0, 0, 0, 1]")
    return t


def _numbers(tokens: list[str], path: Path, line: int) -> list[float]:
    try:
        vals = [float(t) for t in tokens]
    except ValueError:
        raise _err(path, f"not a number in {' '.join(tokens)!r}", line) from None
    if not all(math.isfinite(v) for v in vals):
        raise _err(path, "non-finite number", line)
    return vals


def _read_pincam(path: Path) -> Intrinsics:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, f"cannot read ({e})") from e
    lines = [(i, ln.split()) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise _err(path, "empty, expected one line 'w h fx fy cx cy'")
    if len(lines) > 1:
        raise _err(path, "more than one line", lines[1][0])
    n, tokens = lines[0]
    if len(tokens) != 6:
        raise _err(path, f"{len(tokens)} values, expected 6 'w h fx fy cx cy'", n)
    w, h, fx, fy, cx, cy = _numbers(tokens, path, n)
    if w != int(w) or h != int(h) or w <= 0 or h <= 0:
        raise _err(path, f"width/height must be positive integers, got {tokens[0]} {tokens[1]}", n)
    if fx <= 0 or fy <= 0:
        raise _err(path, "focal lengths must be positive", n)
    return Intrinsics(int(w), int(h), fx, fy, cx, cy)


def _read_traj(path: Path) -> dict[str, np.ndarray]:
    """Timestamp string → camera→world 4x4 (the file holds world→camera)."""
    if not path.is_file():
        raise _err(path, "file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, f"cannot read ({e})") from e
    poses: dict[str, np.ndarray] = {}
    for n, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != 7:
            raise _err(path, f"{len(tokens)} values, expected 7 'ts ax ay az tx ty tz'", n)
        ts = tokens[0]
        vals = _numbers(tokens[1:], path, n)
        if ts in poses:
            raise _err(path, f"duplicate timestamp {ts}", n)
        w2c = np.eye(4)
        w2c[:3, :3] = _angle_axis_to_matrix(np.array(vals[:3]))
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
    if not _VIDEO_RE.fullmatch(video_id):
        raise _err(vdir, "video_id must be 8 digits")
    wide, intr_dir = vdir / "hires_wide", vdir / "hires_wide_intrinsics"
    for d in (wide, intr_dir):
        if not d.is_dir():
            raise _err(d, "directory not found")
    transform = _read_transform(vdir / f"{video_id}_transform.npy")
    poses = _read_traj(vdir / "hires_poses.traj")
    times = pose_times(poses)
    depth_dir = vdir / "hires_depth"
    frames: list[Frame] = []
    skipped = 0
    for jpg in wide.iterdir():
        if jpg.suffix.lower() != ".jpg" or not jpg.is_file():
            continue
        ts = _timestamp(jpg)
        if jpg.stem.partition("_")[0] != video_id:
            raise _err(jpg, f"file name does not start with the video id {video_id}_")
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
    vdir = _visit_dir(root, visit_id)
    if not vdir.is_dir():
        raise _err(vdir, "visit directory not found")
    points, colors = _read_scan(vdir / f"{visit_id}_laser_scan.ply")
    crop = _read_crop_mask(vdir / f"{visit_id}_crop_mask.npy", len(points))
    annots = _read_annotations(vdir / f"{visit_id}_annotations.json", visit_id, len(points))
    descs = _read_descriptions(vdir / f"{visit_id}_descriptions.json", visit_id,
                               {a.annot_id for a in annots})
    videos = []
    for d in sorted(vdir.iterdir()):
        if d.is_dir() and _VIDEO_RE.fullmatch(d.name):
            video, n = read_video(vdir, d.name)
            videos.append(video)
            if skipped is not None:
                skipped[d.name] = n
    return Visit(visit_id=visit_id, root=vdir, points=points, colors=colors, crop_mask=crop,
                 annotations=annots, descriptions=descs, videos=videos)


def read_motions(root: Path | str, visit_id: str) -> Any | None:
    """The parsed ``<visit_id>_motions.json``, or None if the visit has none."""
    path = _visit_dir(root, visit_id) / f"{visit_id}_motions.json"
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
        raise _err(path, f"not a readable image ({e})") from e
    if mode not in ("I;16", "I;16B", "I;16L", "I") or arr.ndim != 2:
        raise _err(path, f"mode {mode}, expected a 16-bit single-channel depth PNG")
    mm = arr.astype(np.float32)
    out = mm / np.float32(1000.0)
    out[mm == 0] = np.nan
    return out


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
    if not isinstance(ts, str) or not _TS_RE.fullmatch(ts):
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
    if not isinstance(vid, str) or not _VIDEO_RE.fullmatch(vid):
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
        traj.append(" ".join([f.timestamp, *map(_fmt, _matrix_to_angle_axis(r)),
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
    vdir = _visit_dir(root, data.visit_id)
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
