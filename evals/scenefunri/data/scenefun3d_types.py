"""The in-memory form of a SceneFun3D visit: what the reader returns and the writer takes.

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
