"""Furnished 3D rooms as triangle meshes: a layout of placed items, each item one object id.

World: metres, z up; the room's floor is [0, width] x [0, depth] at z = 0. Every item has a
local frame whose origin is the centre of its bounding box's bottom face: x along its width,
z up, and its front facing local -y (so an item against a wall has its back, local +y, on
the wall). ``yaw_deg`` turns the local frame about z. Walls face inward; everything is built
from the primitives of ``mesh`` and is a pure function of the layout.

Functional parts (sockets, switches, knobs, handles, valves, taps, foot switches) are items
of their own with an affordance label and the ``parent`` item they belong to, so a laser
scan can annotate them and an id buffer can tell whether they are seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .mesh import Color

LABELS = ("rotate", "key_press", "tip_push", "hook_pull", "pinch_pull", "hook_turn",
          "foot_push", "plug_in", "unplug")
WALLS = ("back", "right", "front", "left")  # counter-clockwise seen from above, from y = depth



def rot_z(yaw_deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class Item:
    """One placed object: its bounding box (``center``, ``size`` along local x, y, z, ``yaw_deg``),
    colour and object id; ``params`` holds what its builder needs beyond the box."""

    name: str
    kind: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw_deg: float = 0.0
    color: Color = (0.7, 0.7, 0.7)
    object_id: int = 0
    label: str = ""  # what a description calls it
    affordance: str | None = None  # set on functional parts only (one of LABELS)
    parent: str | None = None  # the item a part belongs to, or is found by
    solid: bool = False  # stands on the floor and takes floor space (cameras keep clear)
    params: dict = field(default_factory=dict)

    @property
    def rotation(self) -> np.ndarray:
        return rot_z(self.yaw_deg)

    @property
    def base(self) -> np.ndarray:
        """The local origin in world coordinates: the centre of the box's bottom face."""
        return np.asarray(self.center, float) - (0.0, 0.0, self.size[2] / 2)

    def to_world(self, local) -> np.ndarray:
        return np.asarray(local, float) @ self.rotation.T + self.base

    def to_local(self, world) -> np.ndarray:
        return (np.asarray(world, float) - self.base) @ self.rotation

    @property
    def front(self) -> np.ndarray:
        """Unit world direction the item faces (its local -y)."""
        return self.rotation @ (0.0, -1.0, 0.0)

    def corners(self) -> np.ndarray:
        w, d, h = self.size
        local = np.array([(x, y, z) for x in (-w / 2, w / 2) for y in (-d / 2, d / 2)
                          for z in (0.0, h)])
        return self.to_world(local)

    def footprint(self) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1), the axis-aligned box of the item seen from above."""
        c = self.corners()
        return (float(c[:, 0].min()), float(c[:, 1].min()), float(c[:, 0].max()),
                float(c[:, 1].max()))

    def contains(self, world, tol: float = 1e-6) -> np.ndarray:
        """Which world points lie inside the item's box (grown by ``tol``)."""
        p = self.to_local(np.asarray(world, float).reshape(-1, 3))
        w, d, h = self.size
        return ((np.abs(p[:, 0]) <= w / 2 + tol) & (np.abs(p[:, 1]) <= d / 2 + tol)
                & (p[:, 2] >= -tol) & (p[:, 2] <= h + tol))


@dataclass(frozen=True)
class Task:
    """A task description and what it is about: the functional ``target`` it asks for, the
    ``occluder`` meant to hide it (None: a task whose target stays in sight) and the
    ``reference`` items the description names, which should be in sight."""

    key: str
    text: str
    target: str
    occluder: str | None
    reference: tuple[str, ...]


@dataclass
class RoomLayout:
    index: int
    seed: int
    width: float
    depth: float
    height: float
    items: list[Item]
    tasks: list[Task] = field(default_factory=list)

    def item(self, name: str) -> Item:
        for it in self.items:
            if it.name == name:
                return it
        raise KeyError(name)

    def by_id(self, object_id: int) -> Item:
        for it in self.items:
            if it.object_id == object_id:
                return it
        raise KeyError(object_id)

    @property
    def functional(self) -> list[Item]:
        return [it for it in self.items if it.affordance]


def wall_frame(wall: str, width: float, depth: float):
    """(origin, along, inward, yaw_deg, length) of a wall: a point at along-coordinate s and
    distance d from the wall is origin + s * along + d * inward (2D); ``along`` runs left to
    right seen from inside, and an item with ``yaw_deg`` faces into the room."""
    frames = {
        "back": ((0.0, depth), (1.0, 0.0), (0.0, -1.0), 0.0, width),
        "right": ((width, depth), (0.0, -1.0), (-1.0, 0.0), -90.0, depth),
        "front": ((width, 0.0), (-1.0, 0.0), (0.0, 1.0), 180.0, width),
        "left": ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), 90.0, depth),
    }
    o, a, n, yaw, length = frames[wall]
    return np.array(o), np.array(a), np.array(n), yaw, length
