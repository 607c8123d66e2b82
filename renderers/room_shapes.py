"""The shapes room items are built from (shading, ``bx``: a box by its corners in an item's
local frame, front panels) and the room's own structure as meshes: floor, ceiling, walls,
doors, windows, radiators (:data:`STRUCTURE`, item kind → builder; the furniture's builders
are ``room_furniture``'s).

Every builder maps an :class:`.rooms3d.Item` to meshes in the item's local frame (see
:mod:`.rooms3d` for the frames)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .mesh import Color, Mesh, box, cylinder, plane, vertical_plane
from .room_layout import Item

WHITE: Color = (0.93, 0.93, 0.91)
METAL: Color = (0.62, 0.62, 0.64)
DARK: Color = (0.13, 0.13, 0.15)
SOCKET_HOLE: Color = (0.25, 0.25, 0.27)


def shade(c: Color, f: float) -> Color:
    return tuple(min(1.0, max(0.0, v * f)) for v in c)  # type: ignore[return-value]


def bx(lo, hi, color: Color) -> Mesh:
    """A local axis-aligned box from its low and high corners."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return box((lo + hi) / 2, hi - lo, color=color)


def front_panel(x0, x1, z0, z1, y, color: Color, t: float = 0.012) -> Mesh:
    """A thin panel (drawer front, door) standing proud of a front face at local y."""
    return bx((x0, y - t, z0), (x1, y, z1), color)


def _floor(it: Item) -> list[Mesh]:
    """Floorboards: rows along x with staggered joints, each board its own shade (geometry,
    not a texture: sampling a texture at every pixel costs more than a few hundred quads)."""
    w, d, _ = it.size
    seed = it.params.get("plank_seed")
    if seed is None:
        return [plane((0, 0, 0), (w, d), it.color)]
    rng = np.random.default_rng(seed)
    parts, y = [], -d / 2
    while y < d / 2 - 1e-6:
        rw = min(float(rng.uniform(0.14, 0.2)), d / 2 - y)
        x = -w / 2
        while x < w / 2 - 1e-6:
            pl = min(float(rng.uniform(0.8, 2.0)), w / 2 - x)
            parts.append(plane((x + pl / 2, y + rw / 2, 0), (pl, rw),
                               shade(it.color, float(rng.uniform(0.92, 1.07)))))
            x += pl
        y += rw
    return parts


def _ceiling(it: Item) -> list[Mesh]:
    w, d, _ = it.size
    return [plane((0, 0, 0), (w, d), it.color).flipped()]


def _wall(it: Item) -> list[Mesh]:
    """Rectangles around the openings (x0, x1, z0, z1), plus a skirting board."""
    length, _, h = it.size
    parts, skirting = [], shade(it.params.get("skirting", WHITE), 1.0)
    xs = [-length / 2]
    ops = sorted(it.params.get("openings", ()))
    for x0, x1, _, _ in ops:
        xs += [x0, x1]
    xs.append(length / 2)
    for a, b in zip(xs[::2], xs[1::2], strict=True):  # full-height columns between openings
        if b - a > 1e-6:
            parts.append(vertical_plane(((a + b) / 2, 0, h / 2), b - a, h, color=it.color))
            parts.append(bx((a, -0.012, 0), (b, 0, 0.08), skirting))
    for x0, x1, z0, z1 in ops:  # above and below each opening
        if z1 < h:
            parts.append(vertical_plane(((x0 + x1) / 2, 0, (z1 + h) / 2), x1 - x0, h - z1,
                                        color=it.color))
        if z0 > 0:
            parts.append(vertical_plane(((x0 + x1) / 2, 0, z0 / 2), x1 - x0, z0, color=it.color))
    return parts


def _hallway(it: Item) -> list[Mesh]:
    """An open box behind a doorway: floor, ceiling and three walls facing in (no room side)."""
    w, d, h = it.size
    floor_c = it.params.get("floor", (0.5, 0.45, 0.4))
    return [
        plane((0, 0, 0), (w, d), floor_c),
        plane((0, 0, h), (w, d), WHITE).flipped(),
        vertical_plane((0, d / 2, h / 2), w, h, 0, it.color),
        vertical_plane((-w / 2, 0, h / 2), d, h, 90, shade(it.color, 0.9)),
        vertical_plane((w / 2, 0, h / 2), d, h, -90, shade(it.color, 0.9)),
    ]


def _door_frame(it: Item) -> list[Mesh]:
    """Casing around an opening of ``params['opening']`` (w, h), plus reveals (wall depth)."""
    ow, oh = it.params["opening"]
    cw = it.params.get("casing", 0.07)
    d = it.size[1]
    y0 = -d / 2  # room side
    c = it.color
    return [
        bx((-ow / 2 - cw, y0, 0), (-ow / 2, y0 + 0.02, oh + cw), c),
        bx((ow / 2, y0, 0), (ow / 2 + cw, y0 + 0.02, oh + cw), c),
        bx((-ow / 2, y0, oh), (ow / 2, y0 + 0.02, oh + cw), c),
        bx((-ow / 2 - 0.01, y0 + 0.02, 0), (-ow / 2, d / 2, oh), shade(c, 0.95)),
        bx((ow / 2, y0 + 0.02, 0), (ow / 2 + 0.01, d / 2, oh), shade(c, 0.95)),
        bx((-ow / 2, y0 + 0.02, oh), (ow / 2, d / 2, oh + 0.01), shade(c, 0.95)),
    ]


def _door_leaf(it: Item) -> list[Mesh]:
    """A leaf with two raised panels on each face and a lever on its far side."""
    w, t, h = it.size
    c, p = it.color, shade(it.color, 0.93)
    parts = [bx((-w / 2, -t / 2, 0), (w / 2, t / 2, h), c)]
    for z0, z1 in ((0.12, 0.42 * h), (0.52 * h, h - 0.12)):
        parts.append(front_panel(-w / 2 + 0.12, w / 2 - 0.12, z0, z1, -t / 2, p, 0.008))
        parts.append(bx((-w / 2 + 0.12, t / 2, z0), (w / 2 - 0.12, t / 2 + 0.008, z1), p))
    lx = it.params.get("latch_x", w / 2 - 0.08)  # the far-side lever: part of the leaf
    zh = it.params.get("handle_z", 1.0)
    lever = -np.sign(lx) * 0.12
    parts += [bx((lx - 0.025, t / 2, zh - 0.025), (lx + 0.025, t / 2 + 0.012, zh + 0.025), METAL),
              bx((min(lx, lx + lever), t / 2 + 0.045, zh - 0.011),
                  (max(lx, lx + lever), t / 2 + 0.067, zh + 0.011), METAL),
              bx((lx - 0.011, t / 2, zh - 0.011), (lx + 0.011, t / 2 + 0.05, zh + 0.011), METAL)]
    return parts


def _lever_handle(it: Item) -> list[Mesh]:
    """Rosette at local x = ``rosette_x``, lever pointing along ``dir`` (+1/-1), on the front."""
    w, d, h = it.size
    rx, s = it.params.get("rosette_x", 0.05), it.params.get("dir", -1)
    y1 = d / 2  # back, on the leaf
    zc = h / 2
    tip = rx + s * 0.115
    return [bx((rx - 0.03, y1 - 0.012, 0), (rx + 0.03, y1, h), it.color),
            bx((rx - 0.011, y1 - 0.05, zc - 0.011), (rx + 0.011, y1 - 0.012, zc + 0.011), it.color),
            bx((min(rx, tip) - 0.011, -d / 2, zc - 0.011), (max(rx, tip) + 0.011, y1 - 0.045,
                                                              zc + 0.011), it.color)]


def _window(it: Item) -> list[Mesh]:
    """Frame, mullion and glass on the wall (the room side is local -y), and a sill."""
    w, d, h = it.size
    f, c = 0.06, it.color
    y0 = -d / 2
    glass = it.params.get("glass", (0.72, 0.82, 0.9))
    sill_d = it.params.get("sill", 0.0)
    parts = [
        vertical_plane((0, d / 2 - 0.001, h / 2), w - 2 * f, h - 2 * f, color=glass),
        bx((-w / 2, y0, 0), (-w / 2 + f, d / 2, h), c),
        bx((w / 2 - f, y0, 0), (w / 2, d / 2, h), c),
        bx((-w / 2, y0, h - f), (w / 2, d / 2, h), c),
        bx((-w / 2, y0, 0), (w / 2, d / 2, f), c),
        bx((-0.025, y0 + 0.01, f), (0.025, d / 2, h - f), c),
    ]
    if sill_d > 0:
        parts.append(bx((-w / 2 - 0.05, y0 - sill_d, -0.03), (w / 2 + 0.05, d / 2, 0), WHITE))
    return parts


def _curtain(it: Item) -> list[Mesh]:
    """Folds: narrow vertical boxes alternately forward and back, under a rod."""
    w, d, h = it.size
    n = max(3, int(it.params.get("folds", round(w / 0.09))))
    fw = w / n
    parts = []
    for k in range(n):
        x0 = -w / 2 + k * fw
        y = -d / 2 + (0.0 if k % 2 else 0.025)
        parts.append(bx((x0, y, 0), (x0 + fw, y + d - 0.03, h - 0.04),
                         shade(it.color, 1.0 if k % 2 else 0.9)))
    parts.append(bx((-w / 2, -d / 2, h - 0.04), (w / 2, -d / 2 + 0.03, h), METAL))
    return parts


def _radiator(it: Item) -> list[Mesh]:
    """A panel on two pipes; ribs on the front; a lockshield cap at the end opposite the valve."""
    w, d, h = it.size
    z0 = it.params.get("panel_z", 0.15)
    c = it.color
    parts = [bx((-w / 2 + 0.05, -d / 2 + 0.02, z0), (w / 2 - 0.05, d / 2, h), c)]
    n = int((w - 0.1) / 0.055)
    for k in range(n):
        x = -w / 2 + 0.05 + (k + 0.5) * (w - 0.1) / n
        parts.append(bx((x - 0.012, -d / 2, z0 + 0.02), (x + 0.012, -d / 2 + 0.02, h - 0.02),
                         shade(c, 0.96)))
    for sx in (-1, 1):  # pipes from the floor into the panel's lower ends
        x = sx * (w / 2 - 0.025)
        parts.append(bx((x - 0.011, -0.011, 0), (x + 0.011, 0.011, z0 + 0.05), METAL))
        parts.append(bx((x - 0.03 * sx - 0.01, -0.011, z0 + 0.03),
                         (x - 0.03 * sx + 0.01, 0.011, z0 + 0.05), METAL))
    lock = -it.params.get("valve_side", 1)
    parts.append(cylinder((lock * (w / 2 - 0.025), 0, z0 + 0.05), 0.018, 0.035, WHITE,
                          segments=10))
    return parts


def _valve(it: Item) -> list[Mesh]:
    w, _, h = it.size
    r = w / 2
    return [cylinder((0, 0, 0), r * 0.55, 0.015, METAL, segments=12),
            cylinder((0, 0, 0.015), r, h - 0.025, it.color, segments=16),
            cylinder((0, 0, h - 0.01), r * 0.7, 0.01, shade(it.color, 0.85), segments=12)]


#: The room's structure: item kind → builder.
STRUCTURE: dict[str, Callable[[Item], list[Mesh]]] = {
    "floor": _floor, "ceiling": _ceiling, "wall": _wall, "hallway": _hallway,
    "door_frame": _door_frame, "door_leaf": _door_leaf, "lever_handle": _lever_handle,
    "window": _window, "curtain": _curtain, "radiator": _radiator, "valve": _valve,
}
