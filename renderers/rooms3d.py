"""Furnished 3D rooms as triangle meshes: one mesh per item of a :class:`RoomLayout`, each
item one object id (the layout types in :mod:`.room_layout`, the builders of each kind of
item in :mod:`.room_shapes` and :mod:`.room_furniture`)."""

from __future__ import annotations

from .mesh import Mesh, merge
from .room_furniture import BUILDERS, drawer_spans
from .room_layout import LABELS, WALLS, Item, RoomLayout, Task, rot_z, wall_frame
from .room_shapes import DARK, METAL, SOCKET_HOLE, WHITE, shade

__all__ = ["BUILDERS", "DARK", "LABELS", "METAL", "SOCKET_HOLE", "WALLS", "WHITE", "Item",
           "RoomLayout", "Task", "drawer_spans", "item_mesh", "room_meshes", "rot_z", "shade",
           "wall_frame"]


# --- meshes ----------------------------------------------------------------------------


def room_meshes(layout: RoomLayout) -> list[Mesh]:
    """One mesh per item, in the order of ``layout.items``."""
    return [item_mesh(it) for it in layout.items]


def item_mesh(item: Item) -> Mesh:
    builder = BUILDERS.get(item.kind)
    if builder is None:
        raise ValueError(f"no builder for item kind {item.kind!r}")
    m = merge(builder(item))
    return Mesh(item.to_world(m.vertices), m.faces, m.colors, item.object_id, m.uv,
                m.texture_index, m.textures)
