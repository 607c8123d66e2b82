"""The SceneFun3D format as its reader (``scenefun3d``) and writer (``scenefun3d_write``)
share it: the in-memory form of a visit (what the reader returns and the writer takes), the
rules of its file names (ids, timestamps), one-line errors naming the file, and angle-axis
rotations (the toolkit's Rodrigues).

Frames, as the public toolkit (SceneFun3D/scenefun3d) uses them:
- the laser scan has its own frame, and the hires ("colmap") poses live in it:
  ``examples/project_rgb_on_laser_scan.py`` projects the scan's points with those poses and
  no transform;
- ``<video_id>_transform.npy`` maps laser → the video's ARKit frame (``utils/data_parser.py``,
  ``get_transform``); the ARKit mesh is in the ARKit frame and reaches the laser frame through
  the inverse (``examples/show_annotations.py``);
- ``hires_poses.traj`` holds one world→camera pose per line, ``ts ax ay az tx ty tz``
  (angle-axis rotation, translation in metres, world = laser-scan frame); the reader inverts
  it to camera→world, as the toolkit does;
- cameras follow the pinhole convention x right, y down, z forward (points in front have
  z > 0): u = fx·x/z + cx, v = fy·y/z + cy, the same as ``unseen.renderers.camera``;
- depth PNGs are uint16 millimetres, 0 where unknown.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ....engine.errors import UnseenError

AFFORDANCES = ("rotate", "key_press", "tip_push", "hook_pull", "pinch_pull", "hook_turn",
               "foot_push", "plug_in", "unplug", "exclude")


class SceneFun3DError(UnseenError, ValueError):
    """A malformed or missing file; the message names the file (and line, for text)."""


@dataclass
class Annotation:
    annot_id: str
    indices: np.ndarray  # int64 point indices into the laser scan
    label: str  # one of AFFORDANCES


@dataclass
class Description:
    desc_id: str
    annot_ids: list[str]  # one description may name several annotations
    text: str


@dataclass
class Intrinsics:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1.0]])


@dataclass
class Frame:
    """One RGB frame of a video, with what is needed to project points into it."""

    video_id: str
    timestamp: str  # the text after the first '_' of the file name, matched as a string
    rgb: Path
    intrinsics: Intrinsics
    camera_to_world: np.ndarray  # 4x4, laser-scan frame (the hires poses')
    depth: Path | None = None

    @property
    def world_to_camera(self) -> np.ndarray:
        return np.linalg.inv(self.camera_to_world)


@dataclass
class Video:
    video_id: str
    frames: list[Frame]
    laser_to_arkit: np.ndarray  # 4x4
    mesh_path: Path | None = None  # vertices in the ARKit frame


@dataclass
class Visit:
    """A scan with its annotations, descriptions and videos (frames are file references)."""

    visit_id: str
    root: Path
    points: np.ndarray  # (N, 3) float64, laser-scan frame
    colors: np.ndarray  # (N, 3) uint8
    crop_mask: np.ndarray | None  # (N,) bool
    annotations: list[Annotation]
    descriptions: list[Description]
    videos: list[Video] = field(default_factory=list)

    def annotation(self, annot_id: str) -> Annotation:
        for a in self.annotations:
            if a.annot_id == annot_id:
                return a
        raise SceneFun3DError(f"visit {self.visit_id}: no annotation {annot_id!r}")


# --- what the writer takes: frames as arrays, not yet files ----------------------------


@dataclass
class FrameData:
    timestamp: str
    rgb: np.ndarray  # (H, W, 3) uint8
    depth_m: np.ndarray | None  # (H, W) float metres (0 or inf = unknown)
    intrinsics: Intrinsics
    camera_to_world: np.ndarray  # 4x4, laser-scan frame


@dataclass
class VideoData:
    video_id: str
    frames: list[FrameData]
    laser_to_arkit: np.ndarray
    mesh_vertices: np.ndarray | None = None  # (V, 3) ARKit frame
    mesh_faces: np.ndarray | None = None  # (F, 3) int
    mesh_colors: np.ndarray | None = None  # (V, 3) uint8


@dataclass
class VisitData:
    visit_id: str
    points: np.ndarray
    colors: np.ndarray
    crop_mask: np.ndarray | None
    annotations: list[Annotation]
    descriptions: list[Description]
    videos: list[VideoData]
    motions: dict | None = None


# --- file names and errors ------------------------------------------------------------

VISIT_ID = re.compile(r"\d{6}")
VIDEO_ID = re.compile(r"\d{8}")
TIMESTAMP = re.compile(r"[^\s/\\]+")  # a timestamp must survive a file name and a traj token


def error_at(path: Path | str, why: str, line: int | None = None,
             col: int | None = None) -> SceneFun3DError:
    """The error of one file (and line, column), as one line."""
    where = str(path)
    if line is not None:
        where += f":{line}"
        if col is not None:
            where += f":{col}"
    msg = f"{where}: {why}"
    return SceneFun3DError(" ".join(msg.split()))  # one line, whatever `why` carried


def visit_folder(root: Path | str, visit_id: str) -> Path:
    """The folder of a visit (its id checked: 6 digits)."""
    if not isinstance(visit_id, str) or not VISIT_ID.fullmatch(visit_id):
        raise SceneFun3DError(f"visit_id must be 6 digits, got {visit_id!r}")
    return Path(root) / visit_id


def timestamp_of(path: Path) -> str:
    """The text after the first '_' of the file name, without the extension."""
    prefix, sep, ts = path.stem.partition("_")
    if not sep or not ts:
        raise error_at(path, "file name is not <video_id>_<timestamp>")
    return ts


def timestamp_order(ts: str) -> tuple[float, str]:
    """Sort key of a timestamp: its numeric value (non-numbers last), then its text."""
    try:
        v = float(ts)
    except ValueError:
        v = math.inf
    return (v if math.isfinite(v) else math.inf, ts)


# --- rotations -----------------------------------------------------------------------


def angle_axis_to_matrix(a: np.ndarray) -> np.ndarray:
    """Rodrigues: the rotation by |a| radians about a/|a| (what cv2.Rodrigues gives)."""
    a = np.asarray(a, dtype=np.float64).reshape(3)
    theta = float(np.linalg.norm(a))
    if theta < 1e-12:
        k, s, c1 = a, 1.0, 0.0  # first order: I + [a]x
    else:
        k, s, c1 = a / theta, math.sin(theta), 1.0 - math.cos(theta)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * kx + c1 * (kx @ kx)


def matrix_to_angle_axis(r: np.ndarray) -> np.ndarray:
    """The inverse of :func:`angle_axis_to_matrix`, via a unit quaternion (stable near pi)."""
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
