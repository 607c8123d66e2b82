"""Analytic visibility: segments from an eye to a cube's corners against convex boxes.

This is the first of the two independent checkers of a Director scene's answer key (the
second renders an id buffer from the eye). For a convex cube behind one convex occluder the
8-corner test is exact: the cube is hidden iff every segment from the eye to a corner hits
that occluder. With several occluders it is only exact in one direction, so the verdicts are:

- ``hidden``: one occluder blocks all eight corners;
- ``full``: no occluder blocks any corner (the whole cube is in sight);
- ``partial``: some corner is in sight and some is not;
- ``ambiguous``: every corner is blocked, but not all by the same occluder.

A cube's own body never counts as its occluder. "Hidden" means hidden by anything: the
partition or another cube.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_EPS = 1e-9


@dataclass(frozen=True)
class OBox:
    """A box standing upright: centre, half extents, rotation about the vertical axis."""

    center: tuple[float, float, float]
    half: tuple[float, float, float]
    yaw_deg: float = 0.0

    def _rot(self) -> np.ndarray:
        a = math.radians(self.yaw_deg)
        c, s = math.cos(a), math.sin(a)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def corners(self) -> np.ndarray:
        """The eight corners, (8, 3), in world coordinates."""
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                         dtype=float)
        return np.asarray(self.center) + (signs * np.asarray(self.half)) @ self._rot().T

    def grown(self, margin: float) -> OBox:
        """Dilated (margin > 0) or eroded (margin < 0) on every side."""
        half = tuple(max(h + margin, 1e-6) for h in self.half)
        return OBox(self.center, half, self.yaw_deg)  # type: ignore[arg-type]

    def to_local(self, points: np.ndarray) -> np.ndarray:
        return (np.asarray(points, dtype=float) - np.asarray(self.center)) @ self._rot()


def segments_hit(eye: np.ndarray, points: np.ndarray, box: OBox) -> np.ndarray:
    """For each point, whether the segment eye→point meets the box before the point.

    Slab test in the box's own frame; a segment that only touches the box at the point
    itself does not count.
    """
    e = box.to_local(np.asarray(eye, dtype=float)[None, :])[0]
    p = box.to_local(points)
    d = p - e
    half = np.asarray(box.half)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - e) / d
        t2 = (half - e) / d
    tmin = np.where(np.abs(d) < _EPS, np.where(np.abs(e) <= half, -np.inf, np.inf), np.minimum(t1, t2))
    tmax = np.where(np.abs(d) < _EPS, np.where(np.abs(e) <= half, np.inf, -np.inf), np.maximum(t1, t2))
    enter = tmin.max(axis=1)
    leave = tmax.min(axis=1)
    return (enter <= leave) & (leave > 0) & (enter < 1 - 1e-7)


def blocked_matrix(eye: np.ndarray, target: OBox, occluders: list[OBox]) -> np.ndarray:
    """(8, K): whether occluder k blocks the segment from the eye to corner i."""
    corners = target.corners()
    if not occluders:
        return np.zeros((8, 0), dtype=bool)
    return np.stack([segments_hit(eye, corners, occ) for occ in occluders], axis=1)


def verdict(eye: np.ndarray, target: OBox, occluders: list[OBox]) -> str:
    """``hidden``, ``full``, ``partial`` or ``ambiguous`` (see the module docstring)."""
    m = blocked_matrix(eye, target, occluders)
    any_blocked = m.any(axis=1)
    if not any_blocked.any():
        return "full"
    if m.all(axis=0).any():
        return "hidden"
    if any_blocked.all():
        return "ambiguous"
    return "partial"


def visual_angle(edge: float, eye: np.ndarray, center: np.ndarray) -> float:
    """Apparent size 2·atan(e / 2d) in degrees, d the distance from the eye to the centre."""
    d = float(np.linalg.norm(np.asarray(center) - np.asarray(eye)))
    return math.degrees(2 * math.atan(edge / (2 * d)))
