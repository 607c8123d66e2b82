"""Triangle meshes with per-face colours, object ids and optional textures, and primitives.

World coordinates are metres with z up. Faces are wound counter-clockwise seen from outside, so
the normal (v1 - v0) x (v2 - v0) points outwards and back faces can be culled. Texture
coordinates (u, v) lie in [0, 1], u along a texture's columns and v down its rows (v = 0 is the
top row), like pixel coordinates; textures are (H, W, 4) uint8 RGBA.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Color = tuple[float, float, float]
GREY: Color = (0.7, 0.7, 0.7)

# A quad's texture corners in the order bottom-left, bottom-right, top-right, top-left.
_QUAD_UV = np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
_QUAD_TRIS = np.array([[0, 1, 2], [0, 2, 3]])

# Box faces: (outward normal, texture right, texture up) in the box's frame; right x up = normal,
# so corners listed BL, BR, TR, TL are counter-clockwise seen from outside. Texture "up" is +z on
# the sides and +y (the box's back) on top and bottom.
BOX_FACES = {
    "+x": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "-x": ((-1, 0, 0), (0, -1, 0), (0, 0, 1)),
    "+y": ((0, 1, 0), (-1, 0, 0), (0, 0, 1)),
    "-y": ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
    "top": ((0, 0, 1), (1, 0, 0), (0, 1, 0)),
    "bottom": ((0, 0, -1), (-1, 0, 0), (0, 1, 0)),
}


@dataclass(eq=False)
class Mesh:
    """Triangles ``faces`` (M, 3) into ``vertices`` (N, 3), one colour and object id per face.

    ``uv`` (M, 3, 2) holds texture coordinates per face corner and ``texture_index`` (M,) picks a
    texture from ``textures`` (-1: untextured); the texture's alpha blends it over the face colour.
    """

    vertices: np.ndarray
    faces: np.ndarray
    colors: Any  # array-like: one RGB for every face, or one per face; an array once made
    ids: Any  # array-like: one id for every face, or one per face; an array once made
    uv: Any = None  # None: untextured; an (M, 3, 2) array once made
    texture_index: Any = None  # None: no face textured; an (M,) array once made
    textures: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.faces = np.asarray(self.faces, dtype=np.int64).reshape(-1, 3)
        m = len(self.faces)
        self.colors = np.broadcast_to(np.asarray(self.colors, dtype=np.float64), (m, 3)).copy()
        self.ids = np.broadcast_to(np.asarray(self.ids, dtype=np.int32), (m,)).copy()
        if m and (self.faces.min() < 0 or self.faces.max() >= len(self.vertices)):
            raise ValueError("face index out of range")
        if m and (self.colors.min() < 0 or self.colors.max() > 1):
            raise ValueError("colours are floats in [0, 1]")
        self.textures = [_rgba(t) for t in self.textures]
        if self.texture_index is None:
            self.texture_index = np.full(m, -1, dtype=np.int64)
        self.texture_index = np.broadcast_to(np.asarray(self.texture_index, np.int64), (m,)).copy()
        if self.texture_index.max(initial=-1) >= len(self.textures):
            raise ValueError("texture_index refers to a missing texture")
        if self.uv is None:
            if self.texture_index.max(initial=-1) >= 0:
                raise ValueError("textured faces need uv")
            self.uv = np.zeros((m, 3, 2))
        self.uv = np.asarray(self.uv, dtype=np.float64).reshape(m, 3, 2)

    @property
    def n_faces(self) -> int:
        return len(self.faces)

    def flipped(self) -> Mesh:
        """The same surface facing the other way (e.g. a room box seen from inside); textures
        then appear mirrored."""
        return Mesh(self.vertices, self.faces[:, ::-1], self.colors, self.ids,
                    self.uv[:, ::-1], self.texture_index, self.textures)

    def face_normals(self) -> np.ndarray:
        """Unit outward normals (M, 3); zero for degenerate faces."""
        v = self.vertices[self.faces]
        n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
        norm = np.linalg.norm(n, axis=1, keepdims=True)
        return np.divide(n, norm, out=np.zeros_like(n), where=norm > 0)


def _rgba(texture) -> np.ndarray:
    t = np.asarray(texture)
    if t.dtype != np.uint8 or t.ndim != 3 or t.shape[2] not in (3, 4):
        raise ValueError("a texture is an (H, W, 3 or 4) uint8 array")
    if t.shape[2] == 3:
        t = np.concatenate([t, np.full(t.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return np.ascontiguousarray(t)


def _quads(corners: np.ndarray, color: Color, object_id: int, textured=None, texture=None) -> Mesh:
    """Quads (Q, 4, 3) listed BL, BR, TR, TL (counter-clockwise from the front) as a mesh."""
    q = len(corners)
    faces = (np.arange(q)[:, None, None] * 4 + _QUAD_TRIS).reshape(-1, 3)
    textured = np.zeros(q, bool) if textured is None or texture is None else np.asarray(textured)
    return Mesh(
        vertices=corners.reshape(-1, 3),
        faces=faces,
        colors=color,
        ids=object_id,
        uv=np.tile(_QUAD_UV[_QUAD_TRIS], (q, 1, 1)),
        texture_index=np.repeat(np.where(textured, 0, -1), 2),
        textures=[] if texture is None else [texture],
    )


def _rot_z(yaw_deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def quad(corners, color: Color = GREY, object_id: int = 0, texture=None) -> Mesh:
    """One planar quad; ``corners`` (4, 3) are bottom-left, bottom-right, top-right, top-left seen
    from the visible side (counter-clockwise), and a texture is mapped upright that way."""
    c = np.asarray(corners, dtype=np.float64).reshape(1, 4, 3)
    return _quads(c, color, object_id, [True], texture)


def box(center, size, yaw_deg: float = 0.0, color: Color = GREY, object_id: int = 0,
        texture=None, textured_faces: Iterable[str] = ()) -> Mesh:
    """An axis-aligned box of ``size`` (sx, sy, sz) centred at ``center``, turned by ``yaw_deg``
    about the vertical through its centre; ``texture`` goes on ``textured_faces`` (BOX_FACES)."""
    half = np.asarray(size, dtype=np.float64) / 2
    textured_faces = set(textured_faces)
    if unknown := textured_faces - set(BOX_FACES):
        raise ValueError(f"unknown box faces {sorted(unknown)}; use {list(BOX_FACES)}")
    signs = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]])  # (right, up) of BL, BR, TR, TL
    corners = []
    for n, r, u in BOX_FACES.values():
        nv, rv, uv = (np.asarray(a, dtype=np.float64) for a in (n, r, u))
        corners.append((nv + signs[:, :1] * rv + signs[:, 1:] * uv) * half)
    world = np.asarray(corners) @ _rot_z(yaw_deg).T + np.asarray(center, dtype=np.float64)
    return _quads(world, color, object_id, [f in textured_faces for f in BOX_FACES], texture)


def cube(center, edge: float, yaw_deg: float = 0.0, color: Color = GREY, object_id: int = 0,
         texture=None, textured_faces: Iterable[str] = ("top", "+x", "-x", "+y", "-y")) -> Mesh:
    """A cube of side ``edge`` centred at ``center``; see ``box``."""
    return box(center, (edge, edge, edge), yaw_deg, color, object_id, texture, textured_faces)


def plane(center, size_xy, color: Color = GREY, object_id: int = 0, yaw_deg: float = 0.0,
          texture=None) -> Mesh:
    """A horizontal rectangle facing up (+z); texture up is its +y side."""
    sx, sy = np.asarray(size_xy, dtype=np.float64) / 2
    local = np.array([[-sx, -sy, 0], [sx, -sy, 0], [sx, sy, 0], [-sx, sy, 0]])
    return quad(local @ _rot_z(yaw_deg).T + np.asarray(center, dtype=np.float64),
                color, object_id, texture)


def vertical_plane(center, width: float, height: float, yaw_deg: float = 0.0,
                   color: Color = GREY, object_id: int = 0, texture=None) -> Mesh:
    """An upright rectangle centred at ``center``; at yaw 0 it faces -y (its front is seen from
    -y), and ``yaw_deg`` turns it about z. Texture up is +z."""
    w, h = width / 2, height / 2
    local = np.array([[-w, 0, -h], [w, 0, -h], [w, 0, h], [-w, 0, h]])
    return quad(local @ _rot_z(yaw_deg).T + np.asarray(center, dtype=np.float64),
                color, object_id, texture)


def cylinder(base_center, radius: float, height: float, color: Color = GREY,
             object_id: int = 0, segments: int = 24) -> Mesh:
    """A closed vertical cylinder standing on ``base_center``; 4 * segments triangles."""
    n = int(segments)
    a = 2 * math.pi * np.arange(n) / n
    ring = np.stack([radius * np.cos(a), radius * np.sin(a), np.zeros(n)], axis=1)
    base = np.asarray(base_center, dtype=np.float64)
    top = base + (0.0, 0.0, height)
    verts = np.concatenate([base + ring, top + ring, [base, top]])
    k, k1 = np.arange(n), (np.arange(n) + 1) % n
    b, t, bc, tc = k, n + k, 2 * n, 2 * n + 1
    faces = np.concatenate([
        np.stack([b, k1, n + k1], 1),  # sides: angle increases to the right seen from outside
        np.stack([b, n + k1, t], 1),
        np.stack([np.full(n, tc), t, n + k1], 1),
        np.stack([np.full(n, bc), k1, b], 1),
    ])
    return Mesh(verts, faces, color, object_id)


def ellipsoid(center, radii, color: Color = GREY, object_id: int = 0, segments: int = 16) -> Mesh:
    """A closed ellipsoid (a sphere when ``radii`` is one number); ``segments`` around the
    vertical axis and segments // 2 from pole to pole: 2 * segments * (segments // 2 - 1) faces."""
    n, rings = int(segments), max(2, int(segments) // 2)
    radii = np.broadcast_to(np.asarray(radii, dtype=np.float64), (3,))
    polar = math.pi * np.arange(1, rings) / rings  # ring 1 is nearest the top pole
    az = 2 * math.pi * np.arange(n) / n
    unit = np.stack([
        np.outer(np.sin(polar), np.cos(az)),
        np.outer(np.sin(polar), np.sin(az)),
        np.outer(np.cos(polar), np.ones(n)),
    ], axis=-1).reshape(-1, 3)
    unit = np.concatenate([[(0, 0, 1)], unit, [(0, 0, -1)]])
    verts = unit * radii + np.asarray(center, dtype=np.float64)
    top, bottom = 0, len(verts) - 1

    def idx(ring, j):  # vertex index of ring 1..rings-1, azimuth j (wraps)
        return 1 + (ring - 1) * n + (j % n)

    j = np.arange(n)
    faces = [np.stack([np.full(n, top), idx(1, j), idx(1, j + 1)], 1),
             np.stack([np.full(n, bottom), idx(rings - 1, j + 1), idx(rings - 1, j)], 1)]
    for r in range(1, rings - 1):  # quad between ring r (above) and r + 1: BL, BR, TR, TL
        bl, br, tr, tl = idx(r + 1, j), idx(r + 1, j + 1), idx(r, j + 1), idx(r, j)
        faces += [np.stack([bl, br, tr], 1), np.stack([bl, tr, tl], 1)]
    return Mesh(verts, np.concatenate(faces), color, object_id)


def merge(meshes: Sequence[Mesh]) -> Mesh:
    """One mesh holding all faces, colours, ids and textures of ``meshes``."""
    meshes = list(meshes)
    if not meshes:
        return Mesh(np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros((0, 3)),
                    np.zeros(0, np.int32))
    if len(meshes) == 1:
        return meshes[0]
    v_off = np.cumsum([0] + [len(m.vertices) for m in meshes])
    t_off = np.cumsum([0] + [len(m.textures) for m in meshes])
    return Mesh(
        vertices=np.concatenate([m.vertices for m in meshes]),
        faces=np.concatenate([m.faces + o for m, o in zip(meshes, v_off, strict=False)]),
        colors=np.concatenate([m.colors for m in meshes]),
        ids=np.concatenate([m.ids for m in meshes]),
        uv=np.concatenate([m.uv for m in meshes]),
        texture_index=np.concatenate([
            np.where(m.texture_index >= 0, m.texture_index + o, -1)
            for m, o in zip(meshes, t_off, strict=False)
        ]),
        textures=[t for m in meshes for t in m.textures],
    )
