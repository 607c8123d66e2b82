"""The laser scan of a room: area-weighted points, functional parts sampled densely and
annotated, SceneFun3D-like ids."""

from __future__ import annotations

import uuid

import numpy as np

from .....renderers.mesh import Mesh
from .....renderers.rooms3d import Item, RoomLayout, Task
from ..scenefun3d_types import Annotation

NAMESPACE = uuid.UUID("6b1f3c1e-6c55-4d8e-9a43-5ce5f0a1d3b2")


def annot_id(layout: RoomLayout, item_name: str) -> str:
    """The annotation id of a functional item (a UUID, as SceneFun3D's are)."""
    return str(uuid.uuid5(NAMESPACE, f"{layout.seed}/{layout.index}/annot/{item_name}"))


def desc_id(layout: RoomLayout, task: Task) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{layout.seed}/{layout.index}/desc/{task.key}"))


def _triangles(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Corners (M, 3, 3) and areas (M,) of a mesh's faces."""
    v = mesh.vertices[mesh.faces]
    return v, 0.5 * np.linalg.norm(np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0]), axis=1)


def _sample_faces(mesh: Mesh, faces: np.ndarray, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points area-weighted on ``faces`` of ``mesh``; returns points and RGB uint8."""
    v, area = _triangles(mesh)
    v, area = v[faces], area[faces]
    pick = rng.choice(len(faces), size=n, p=area / area.sum())
    a, b = rng.random((2, n))
    flip = a + b > 1  # fold the square onto the triangle: uniform barycentrics
    a, b = np.where(flip, 1 - a, a), np.where(flip, 1 - b, b)
    t = v[pick]
    pts = t[:, 0] + a[:, None] * (t[:, 1] - t[:, 0]) + b[:, None] * (t[:, 2] - t[:, 0])
    rgb = mesh.colors[faces[pick]].copy()
    tex = mesh.texture_index[faces[pick]]
    for k in np.unique(tex[tex >= 0]):  # textured faces (the floor) take the texel's colour
        sel = np.flatnonzero(tex == k)
        uv = mesh.uv[faces[pick[sel]]]
        uvp = uv[:, 0] + a[sel, None] * (uv[:, 1] - uv[:, 0]) + b[sel, None] * (uv[:, 2] - uv[:, 0])
        img = mesh.textures[k]
        h, w = img.shape[:2]
        col = np.clip((uvp[:, 0] * w).astype(int), 0, w - 1)
        row = np.clip((uvp[:, 1] * h).astype(int), 0, h - 1)
        rgb[sel] = img[row, col, :3] / 255.0
    rgb = rgb + rng.normal(0, 0.012, rgb.shape)  # a little sensor noise
    return pts, np.clip(np.rint(rgb * 255), 0, 255).astype(np.uint8)


def _exposed_faces(mesh: Mesh, item: Item) -> np.ndarray:
    """Faces of a functional part a scanner can see: not those against its mount (its
    back, or its bottom on the floor)."""
    n = mesh.face_normals()
    back = item.rotation @ (0.0, 1.0, 0.0)
    keep = n @ back < 0.9
    if item.base[2] < 0.01:
        keep &= n[:, 2] > -0.9
    return np.flatnonzero(keep)


def part_points(mesh: Mesh, item: Item, n: int, rng) -> np.ndarray:
    """``n`` points on the exposed surface of a functional part."""
    return _sample_faces(mesh, _exposed_faces(mesh, item), n, rng)[0]


def sample_scan(meshes: list[Mesh], layout: RoomLayout, rng, n_points: int = 60000,
                part_density: float = 40000.0, part_range=(150, 400)):
    """A laser scan of the room in the room's own frame, which is the laser-scan frame:
    ``(points (N, 3), colors (N, 3) uint8, annotations)``. Surfaces are sampled by area; each functional part is
    sampled densely on its own (``part_density`` points per m², clipped to ``part_range``)
    and annotated with its affordance; one "exclude" annotation marks a reflective surface
    (mirror, TV or window), as the real data marks regions to leave out. Points are shuffled,
    so annotations index scattered rows."""
    chunks: list[tuple[np.ndarray, np.ndarray]] = []
    owned: list[np.ndarray] = []
    plain = [(m, it) for m, it in zip(meshes, layout.items, strict=True) if not it.affordance]
    areas = np.array([_triangles(m)[1].sum() for m, _ in plain])
    counts = rng.multinomial(n_points, areas / areas.sum())
    for (m, it), c in zip(plain, counts, strict=True):
        if c:
            chunks.append(_sample_faces(m, np.arange(m.n_faces), int(c), rng))
            owned.append(np.full(int(c), it.object_id))
    for m, it in zip(meshes, layout.items, strict=True):
        if it.affordance:
            faces = _exposed_faces(m, it)
            area = _triangles(m)[1][faces].sum()
            c = int(np.clip(round(area * part_density), *part_range))
            chunks.append(_sample_faces(m, faces, c, rng))
            owned.append(np.full(c, it.object_id))
    points = np.concatenate([c[0] for c in chunks])
    colors = np.concatenate([c[1] for c in chunks])
    owner = np.concatenate(owned)
    order = rng.permutation(len(points))
    points, colors, owner = points[order], colors[order], owner[order]
    annotations = [Annotation(annot_id(layout, it.name), np.flatnonzero(owner == it.object_id),
                              it.affordance or "") for it in layout.functional]
    for kind in ("mirror", "tv", "window", "hallway"):
        shiny = [it for it in layout.items if it.kind == kind]
        if shiny:
            idx = np.flatnonzero(owner == shiny[0].object_id)
            annotations.append(Annotation(annot_id(layout, "exclude"), idx, "exclude"))
            break
    return points, colors, annotations

