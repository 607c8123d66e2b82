"""Pinhole camera in the OpenCV convention: x right, y down, z forward (z > 0 is in front).

Pixel coordinates are continuous: pixel (row j, column i) covers [i, i + 1) x [j, j + 1) and its
centre is at (u, v) = (i + 0.5, j + 0.5). With this choice scaling an image by s scales K's first
two rows by s exactly (``scaled``), and a point projects into pixel (floor(v), floor(u)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(eq=False)
class Camera:
    """Intrinsics ``K`` (3x3), extrinsics ``world_to_camera`` (4x4, rigid) and image size."""

    K: np.ndarray
    world_to_camera: np.ndarray
    width: int
    height: int
    near: float = 0.01
    far: float = 100.0

    def __post_init__(self) -> None:
        self.K = np.asarray(self.K, dtype=np.float64).reshape(3, 3)
        self.world_to_camera = np.asarray(self.world_to_camera, dtype=np.float64).reshape(4, 4)
        self.width, self.height = int(self.width), int(self.height)
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be positive, got {self.width}x{self.height}")
        if not 0 < self.near < self.far:
            raise ValueError(f"need 0 < near < far, got near={self.near}, far={self.far}")

    @classmethod
    def look_at(
        cls,
        eye,
        target,
        up=(0.0, 0.0, 1.0),
        fov_y_deg: float = 50.0,
        width: int = 640,
        height: int = 480,
        near: float = 0.01,
        far: float = 100.0,
    ) -> Camera:
        """A camera at ``eye`` looking at ``target``; ``up`` (world) points up in the image."""
        eye, target, up = (np.asarray(a, dtype=np.float64) for a in (eye, target, up))
        z = target - eye
        if np.linalg.norm(z) == 0:
            raise ValueError("eye and target coincide")
        z /= np.linalg.norm(z)
        x = np.cross(z, up)  # image right; y = z x x then points down the image
        if np.linalg.norm(x) < 1e-9:
            raise ValueError("viewing direction is parallel to up")
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        rot = np.stack([x, y, z])
        w2c = np.eye(4)
        w2c[:3, :3] = rot
        w2c[:3, 3] = -rot @ eye
        f = (height / 2) / math.tan(math.radians(fov_y_deg) / 2)
        K = np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]])
        return cls(K, w2c, width, height, near, far)

    @property
    def rotation(self) -> np.ndarray:
        return self.world_to_camera[:3, :3]

    @property
    def translation(self) -> np.ndarray:
        return self.world_to_camera[:3, 3]

    @property
    def camera_center(self) -> np.ndarray:
        """The eye in world coordinates."""
        return -self.rotation.T @ self.translation

    def to_camera(self, points) -> np.ndarray:
        """World points (N, 3) -> camera coordinates (N, 3)."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return p @ self.rotation.T + self.translation

    def project(self, points) -> tuple[np.ndarray, np.ndarray]:
        """World points (N, 3) -> pixel coordinates (N, 2) and depth z (N,); uv is NaN where z <= 0."""
        pc = self.to_camera(points)
        q = pc @ self.K.T
        z = pc[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = q[:, :2] / q[:, 2:3]
        uv[z <= 0] = np.nan
        return uv, z

    def unproject(self, u, v, z) -> np.ndarray:
        """Pixel coordinates and depth (broadcastable arrays) -> world points (..., 3)."""
        u, v, z = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (u, v, z)))
        pix = np.stack([u, v, np.ones_like(u)], axis=-1)
        rays = pix @ np.linalg.inv(self.K).T  # rays with z = 1 in camera coordinates
        pc = rays * (z / rays[..., 2])[..., None]
        return (pc - self.translation) @ self.rotation

    def scaled(self, factor: int) -> Camera:
        """The same view at ``factor`` times the resolution (for supersampling)."""
        K = self.K.copy()
        K[:2] *= factor
        return Camera(K, self.world_to_camera.copy(), self.width * factor, self.height * factor,
                      self.near, self.far)
