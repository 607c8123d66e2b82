"""What the SceneFun3D reader and writer share: one-line errors naming the file, the id and
timestamp rules of file names, and angle-axis rotations (the toolkit's Rodrigues)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from .scenefun3d_types import SceneFun3DError

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
