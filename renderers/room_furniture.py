"""Furniture, appliances and the functional parts (sockets, switches, knobs, handles) as
meshes, and :data:`BUILDERS`, item kind → builder, the room's structure
(``room_shapes.STRUCTURE``) included."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .mesh import Color, Mesh, box, cylinder, ellipsoid, plane, quad, vertical_plane
from .room_layout import Item
from .room_shapes import (
    DARK,
    METAL,
    SOCKET_HOLE,
    STRUCTURE,
    WHITE,
    bx,
    front_panel,
    shade,
)


def _bed(it: Item) -> list[Mesh]:
    w, d, h = it.size  # h: headboard top
    frame_c, duvet = it.color, it.params.get("duvet", (0.5, 0.6, 0.75))
    top = it.params.get("mattress_top", 0.55)
    hb = 0.07
    parts = [
        bx((-w / 2, -d / 2, 0.1), (w / 2, d / 2 - hb, 0.32), frame_c),
        bx((-w / 2 + 0.03, -d / 2 + 0.02, 0.32), (w / 2 - 0.03, d / 2 - hb, top - 0.04), WHITE),
        bx((-w / 2 + 0.01, -d / 2 + 0.01, top - 0.3), (w / 2 - 0.01, d / 2 - hb - 0.55, top), duvet),
        bx((-w / 2, d / 2 - hb, 0), (w / 2, d / 2, h), shade(frame_c, 0.92)),
    ]
    for sx in (-1, 1):  # legs
        for y in (-d / 2 + 0.05, d / 2 - hb - 0.05):
            parts.append(bx((sx * (w / 2 - 0.05) - 0.03, y - 0.03, 0),
                             (sx * (w / 2 - 0.05) + 0.03, y + 0.03, 0.1), shade(frame_c, 0.7)))
    n = 2 if w > 1.2 else 1
    for k in range(n):  # pillows
        x = -w / 2 + (k + 0.5) * w / n
        parts.append(ellipsoid((x, d / 2 - hb - 0.3, top + 0.05), (w / n / 2 - 0.08, 0.2, 0.07),
                               it.params.get("pillow", WHITE), segments=12))
    return parts


def _drawer_unit(w, d, h, c, drawers: int, plinth: float = 0.08, top_t: float = 0.025,
                 legs: bool = False) -> list[Mesh]:
    """A carcase with ``drawers`` equal drawer fronts; see ``drawer_centres``."""
    parts = [bx((-w / 2, -d / 2 + 0.01, plinth), (w / 2, d / 2, h - top_t), c),
             bx((-w / 2 - 0.01, -d / 2, h - top_t), (w / 2 + 0.01, d / 2, h), shade(c, 1.05))]
    if legs:
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(bx((sx * (w / 2 - 0.03) - 0.02, sy * (d / 2 - 0.04) - 0.02, 0),
                                 (sx * (w / 2 - 0.03) + 0.02, sy * (d / 2 - 0.04) + 0.02, plinth),
                                 shade(c, 0.6)))
    else:
        parts.append(bx((-w / 2 + 0.02, -d / 2 + 0.04, 0), (w / 2 - 0.02, d / 2, plinth),
                         shade(c, 0.6)))
    for z0, z1 in drawer_spans(h, drawers, plinth, top_t):
        parts.append(front_panel(-w / 2 + 0.015, w / 2 - 0.015, z0, z1, -d / 2 + 0.01,
                                  shade(c, 0.97)))
    return parts


def drawer_spans(h: float, drawers: int, plinth: float = 0.08, top_t: float = 0.025):
    """(z0, z1) of each drawer front, top to bottom, in the unit's local frame."""
    gap = 0.006
    span = (h - top_t - plinth) / drawers
    out = [(plinth + k * span + gap, plinth + (k + 1) * span - gap) for k in range(drawers)]
    return out[::-1]


def _bedside_table(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return _drawer_unit(w, d, h, it.color, it.params.get("drawers", 2), 0.12, 0.025, legs=True)


def _cabinet(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return _drawer_unit(w, d, h, it.color, it.params.get("drawers", 4), 0.08, 0.03)


def _lamp(it: Item) -> list[Mesh]:
    w, _, h = it.size
    shade_h = 0.4 * h
    return [cylinder((0, 0, 0), 0.35 * w, 0.025, it.params.get("base", METAL), segments=14),
            cylinder((0, 0, 0.025), 0.012, h - shade_h * 0.6, it.params.get("base", METAL),
                     segments=8),
            cylinder((0, 0, h - shade_h), w / 2, shade_h, it.color, segments=20)]


def _floor_lamp(it: Item) -> list[Mesh]:
    w, _, h = it.size
    return [cylinder((0, 0, 0), 0.14, 0.03, DARK, segments=16),
            cylinder((0, 0, 0.03), 0.013, h - 0.2, DARK, segments=8),
            cylinder((0, 0, h - 0.32), w / 2, 0.32, it.color, segments=20)]


def _cable(it: Item) -> list[Mesh]:
    """Axis-aligned segments through ``params['path']`` (world points); ``plug`` adds a plug
    at the last point, facing ``plug_dir`` (world xy unit)."""
    t = it.params.get("thickness", 0.008)
    pts = np.asarray(it.params["path"], float) - it.base  # yaw is 0: local = world - base
    parts = []
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        lo, hi = np.minimum(a, b) - t / 2, np.maximum(a, b) + t / 2
        parts.append(bx(lo, hi, it.color))
    if it.params.get("plug"):
        end, n = pts[-1], np.asarray(it.params["plug_dir"], float)
        size = np.abs(n[0]) * np.array([0.045, 0.04, 0.045]) + np.abs(n[1]) * np.array(
            [0.04, 0.045, 0.045])
        parts.append(box(end + np.r_[n * 0.022, 0.0], size, color=it.params.get("plug_c", WHITE)))
    return parts


def _phone(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return [bx((-w / 2, -d / 2, 0), (w / 2, d / 2, h), it.color),
            bx((-w / 2 + 0.005, -d / 2 + 0.008, h), (w / 2 - 0.005, d / 2 - 0.008, h + 0.001),
                (0.08, 0.1, 0.14))]


def _armchair(it: Item) -> list[Mesh]:
    w, d, h = it.size
    c, leg = it.color, (0.25, 0.18, 0.12)
    back_t, arm_w = 0.18, 0.13
    parts = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(bx((sx * (w / 2 - 0.06) - 0.025, sy * (d / 2 - 0.06) - 0.025, 0),
                             (sx * (w / 2 - 0.06) + 0.025, sy * (d / 2 - 0.06) + 0.025, 0.12), leg))
    parts += [
        bx((-w / 2, -d / 2, 0.12), (w / 2, d / 2, 0.38), c),
        bx((-w / 2 + arm_w, -d / 2 + 0.02, 0.38), (w / 2 - arm_w, d / 2 - back_t, 0.47),
            shade(c, 1.08)),
        bx((-w / 2, d / 2 - back_t, 0.38), (w / 2, d / 2, h), shade(c, 0.95)),
        bx((-w / 2, -d / 2, 0.38), (-w / 2 + arm_w, d / 2 - back_t, 0.62), shade(c, 0.97)),
        bx((w / 2 - arm_w, -d / 2, 0.38), (w / 2, d / 2 - back_t, 0.62), shade(c, 0.97)),
    ]
    return parts


def _chair(it: Item) -> list[Mesh]:
    """A high-backed upholstered chair; its back is at local +y."""
    w, d, h = it.size
    c, wood = it.color, it.params.get("wood", (0.35, 0.24, 0.16))
    seat = 0.46
    parts = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(bx((sx * (w / 2 - 0.03) - 0.02, sy * (d / 2 - 0.03) - 0.02, 0),
                             (sx * (w / 2 - 0.03) + 0.02, sy * (d / 2 - 0.03) + 0.02, seat - 0.05),
                             wood))
    parts += [bx((-w / 2, -d / 2, seat - 0.05), (w / 2, d / 2, seat), c),
              bx((-w / 2, d / 2 - 0.06, seat), (w / 2, d / 2, h), shade(c, 0.95))]
    return parts


def _office_chair(it: Item) -> list[Mesh]:
    w, d, h = it.size
    c = it.color
    star = [box((0.14 * math.cos(a), 0.14 * math.sin(a), 0.04), (0.28, 0.04, 0.03),
                math.degrees(a), DARK) for a in np.arange(5) * 2 * math.pi / 5 + 0.3]
    return star + [
            cylinder((0, 0, 0.03), 0.04, 0.03, DARK, segments=8),
            cylinder((0, 0, 0.05), 0.028, 0.36, METAL, segments=8),
            bx((-w / 2, -d / 2, 0.41), (w / 2, d / 2 - 0.06, 0.49), c),
            bx((-0.02, d / 2 - 0.08, 0.45), (0.02, d / 2 - 0.04, 0.58), DARK),
            bx((-w / 2 + 0.02, d / 2 - 0.06, 0.56), (w / 2 - 0.02, d / 2, h), shade(c, 0.95))]


def _boxes(it: Item) -> list[Mesh]:
    """A stack of cardboard boxes: ``params['stack']`` rows (x, y, z0, sx, sy, sz, yaw)."""
    parts = []
    for k, (x, y, z0, sx, sy, sz, yaw) in enumerate(it.params["stack"]):
        c = shade(it.color, 1.0 - 0.05 * (k % 2))
        parts.append(box((x, y, z0 + sz / 2), (sx, sy, sz), yaw, c))
        parts.append(box((x, y, z0 + sz + 0.001), (sx * 0.98, 0.05, 0.002), yaw,
                         (0.75, 0.68, 0.5)))  # tape
    return parts


def _wardrobe(it: Item) -> list[Mesh]:
    w, d, h = it.size
    c = it.color
    return [bx((-w / 2, -d / 2 + 0.02, 0.06), (w / 2, d / 2, h - 0.04), c),
            bx((-w / 2 + 0.02, -d / 2 + 0.04, 0), (w / 2 - 0.02, d / 2, 0.06), shade(c, 0.6)),
            bx((-w / 2 - 0.015, -d / 2, h - 0.04), (w / 2 + 0.015, d / 2, h), shade(c, 1.05)),
            front_panel(-w / 2 + 0.01, -0.003, 0.07, h - 0.05, -d / 2 + 0.02, shade(c, 0.97), 0.02),
            front_panel(0.003, w / 2 - 0.01, 0.07, h - 0.05, -d / 2 + 0.02, shade(c, 0.97), 0.02)]


def _desk(it: Item) -> list[Mesh]:
    """A top on a side panel and a drawer pedestal (side ``pedestal``: +1 right, -1 left),
    with a modesty panel at the back."""
    w, d, h = it.size
    c, s = it.color, it.params.get("pedestal", 1)
    pw = it.params.get("pedestal_w", 0.42)
    px0, px1 = sorted((s * (w / 2 - 0.02), s * (w / 2 - 0.02 - pw)))
    parts = [bx((-w / 2, -d / 2, h - 0.03), (w / 2, d / 2, h), c),
             bx((px0, -d / 2 + 0.03, 0), (px1, d / 2 - 0.02, h - 0.03), shade(c, 0.95)),
             bx((-s * (w / 2 - 0.02) - 0.02, -d / 2 + 0.03, 0),
                 (-s * (w / 2 - 0.02) + 0.02, d / 2 - 0.02, h - 0.03), shade(c, 0.9)),
             bx((-w / 2 + 0.04, d / 2 - 0.04, it.params.get("panel_z", 0.12)),
                 (w / 2 - 0.04, d / 2 - 0.02, h - 0.03), shade(c, 0.85))]
    for z0, z1 in drawer_spans(h - 0.03, it.params.get("drawers", 3), 0.04, 0.0):
        parts.append(front_panel(px0 + 0.01, px1 - 0.01, z0, z1, -d / 2 + 0.03, shade(c, 0.98)))
    return parts


def _laptop(it: Item) -> list[Mesh]:
    """A base and a screen opened by ``params['open_deg']`` about the base's back edge."""
    w, d, _ = it.size
    t = 0.018
    bd = it.params.get("base_d", 0.23)
    a = math.radians(it.params.get("open_deg", 105))
    y0 = -d / 2
    hinge = np.array([0.0, y0 + bd, t])
    up = np.array([0.0, -math.cos(a), math.sin(a)]) * 0.22  # the screen's edge from the hinge
    bl, br = hinge + (-w / 2, 0, 0), hinge + (w / 2, 0, 0)
    tl, tr = bl + up, br + up
    return [bx((-w / 2, y0, 0), (w / 2, y0 + bd, t), it.color),
            bx((-w / 2 + 0.02, y0 + 0.03, t), (w / 2 - 0.02, y0 + 0.12, t + 0.001), DARK),
            quad([bl + (0, -0.002, 0), br + (0, -0.002, 0), tr + (0, -0.002, 0),
                  tl + (0, -0.002, 0)], (0.12, 0.16, 0.22)),
            quad([br, bl, tl, tr], it.color)]


def _vanity(it: Item) -> list[Mesh]:
    """A cabinet with two doors under a countertop with a basin."""
    w, d, h = it.size
    c = it.color
    return [bx((-w / 2, -d / 2 + 0.02, 0.08), (w / 2, d / 2, h - 0.04), c),
            bx((-w / 2 + 0.02, -d / 2 + 0.05, 0), (w / 2 - 0.02, d / 2, 0.08), shade(c, 0.6)),
            bx((-w / 2 - 0.02, -d / 2 - 0.02, h - 0.04), (w / 2 + 0.02, d / 2, h), WHITE),
            bx((-w / 2 + 0.12, -d / 2 + 0.06, h), (w / 2 - 0.12, d / 2 - 0.1, h + 0.002),
                (0.8, 0.82, 0.84)),
            bx((-0.05, -d / 2 + 0.12, h), (0.05, -d / 2 + 0.2, h + 0.003), (0.6, 0.62, 0.65)),
            front_panel(-w / 2 + 0.01, -0.003, 0.09, h - 0.06, -d / 2 + 0.02, shade(c, 0.97), 0.018),
            front_panel(0.003, w / 2 - 0.01, 0.09, h - 0.06, -d / 2 + 0.02, shade(c, 0.97), 0.018)]


def _tap(it: Item) -> list[Mesh]:
    w, d, h = it.size
    y = d / 2 - w / 2  # the column's axis
    return [cylinder((0, y, 0), w / 2, h - 0.02, it.color, segments=12),
            bx((-0.012, -d / 2, h - 0.06), (0.012, y, h - 0.035), it.color),
            bx((-0.01, y - 0.005, h - 0.02), (0.01, d / 2, h), it.color)]


def _framed(it: Item, inner: Color) -> list[Mesh]:
    w, d, h = it.size
    f = it.params.get("frame", 0.04)
    tex = it.params.get("texture")
    return [bx((-w / 2, -d / 2 + 0.002, 0), (w / 2, d / 2, h), it.color),
            vertical_plane((0, -d / 2, h / 2), w - 2 * f, h - 2 * f, color=inner, texture=tex)]


def _mirror(it: Item) -> list[Mesh]:
    return _framed(it, it.params.get("glass", (0.78, 0.84, 0.86)))


def _picture(it: Item) -> list[Mesh]:
    return _framed(it, it.params.get("canvas", (0.85, 0.82, 0.75)))


def _basket(it: Item) -> list[Mesh]:
    w, _, h = it.size
    return [cylinder((0, 0, 0), w / 2 - 0.01, h - 0.03, it.color, segments=20),
            cylinder((0, 0, h - 0.03), w / 2, 0.03, shade(it.color, 0.85), segments=20)]


def _plant(it: Item) -> list[Mesh]:
    """A pot and leaf blobs: ``params['blobs']`` rows (x, y, z, rx, ry, rz, brightness)."""
    p = it.params
    parts = [cylinder((0, 0, 0), p["pot_r"], p["pot_h"], p.get("pot", (0.7, 0.4, 0.3)),
                      segments=16),
             cylinder((0, 0, p["pot_h"] - 0.02), p["pot_r"] * 0.92, 0.03, (0.3, 0.22, 0.15),
                      segments=16)]
    for x, y, z, rx, ry, rz, f in p["blobs"]:
        parts.append(ellipsoid((x, y, z), (rx, ry, rz), shade(it.color, f), segments=12))
    return parts


def _coat_rack(it: Item) -> list[Mesh]:
    """A pole on a foot with coats hanging: ``params['coats']`` rows (angle, length, colour)."""
    _, _, h = it.size
    parts = [cylinder((0, 0, 0), 0.2, 0.03, DARK, segments=14),
             cylinder((0, 0, 0.03), 0.018, h - 0.06, it.color, segments=8),
             ellipsoid((0, 0, h - 0.03), 0.035, it.color, segments=8)]
    for ang, length, c in it.params["coats"]:  # shoulders, then a body widening downwards
        a = math.radians(ang)
        cx, cy = 0.12 * math.cos(a), 0.12 * math.sin(a)
        top = h - 0.12
        parts.append(ellipsoid((cx, cy, top - 0.1), (0.2, 0.11, 0.1), shade(c, 1.05),
                               segments=12))
        parts.append(box((cx, cy, top - 0.1 - length / 2), (0.4, 0.16, length),
                         ang + 90, c))
        parts.append(box((cx, cy, top - 0.1 - length + 0.04), (0.46, 0.2, 0.08), ang + 90,
                         shade(c, 0.9)))
    return parts


def _tv_stand(it: Item) -> list[Mesh]:
    w, d, h = it.size
    c = it.color
    return [bx((-w / 2, -d / 2 + 0.01, 0.06), (w / 2, d / 2, h), c),
            bx((-w / 2 + 0.03, -d / 2 + 0.04, 0), (w / 2 - 0.03, d / 2, 0.06), shade(c, 0.6)),
            front_panel(-w / 2 + 0.015, -0.003, 0.08, h - 0.02, -d / 2 + 0.01, shade(c, 0.96)),
            front_panel(0.003, w / 2 - 0.015, 0.08, h - 0.02, -d / 2 + 0.01, shade(c, 0.96))]


def _tv(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return [bx((-0.15, -0.1, 0), (0.15, 0.1, 0.02), DARK),
            bx((-0.03, -0.02, 0.02), (0.03, 0.02, 0.12), DARK),
            bx((-w / 2, -0.03, 0.08), (w / 2, 0.03, h), DARK),
            vertical_plane((0, -0.031, 0.08 + (h - 0.08) / 2), w - 0.03, h - 0.11,
                           color=(0.1, 0.12, 0.15))]


def _rug(it: Item) -> list[Mesh]:
    w, d, _ = it.size
    return [plane((0, 0, 0.004), (w, d), shade(it.color, 0.8)),
            plane((0, 0, 0.005), (w - 0.12, d - 0.12), it.color)]


def _socket(it: Item) -> list[Mesh]:
    """A plate with one insert per 7.5 cm of width, each with two holes."""
    w, d, h = it.size
    n = max(1, round(w / 0.075))
    parts = [bx((-w / 2, -d / 2 + 0.004, 0), (w / 2, d / 2, h), it.color)]
    for k in range(n):  # everything stays inside the item's box
        x = -w / 2 + (k + 0.5) * w / n
        parts.append(bx((x - 0.026, -d / 2 + 0.001, h / 2 - 0.026),
                         (x + 0.026, -d / 2 + 0.004, h / 2 + 0.026), shade(it.color, 0.9)))
        for dx in (-0.01, 0.01):
            parts.append(vertical_plane((x + dx, -d / 2 + 0.0005, h / 2), 0.006, 0.006,
                                        color=SOCKET_HOLE))
    return parts


def _switch(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return [bx((-w / 2, -d / 2 + 0.006, 0), (w / 2, d / 2, h), it.color),
            bx((-0.022, -d / 2, h / 2 - 0.03), (0.022, -d / 2 + 0.006, h / 2 + 0.03),
                shade(it.color, 0.94))]


def _knob(it: Item) -> list[Mesh]:
    w, d, h = it.size
    r = (d - 0.01) / 2  # a round knob on a short stem
    return [bx((-0.008, d / 2 - 0.012, h / 2 - 0.008), (0.008, d / 2, h / 2 + 0.008), it.color),
            ellipsoid((0, -d / 2 + r, h / 2), (w / 2, r, h / 2), it.color, segments=12)]


def _bar_handle(it: Item) -> list[Mesh]:
    """A bar along local x (``params['vertical']``: along z) on two standoffs."""
    w, d, h = it.size
    c = it.color
    if it.params.get("vertical", False):
        return [bx((-w / 2, -d / 2, 0), (w / 2, -d / 2 + 0.014, h), c),
                bx((-0.006, -d / 2 + 0.014, 0.02), (0.006, d / 2, 0.035), c),
                bx((-0.006, -d / 2 + 0.014, h - 0.035), (0.006, d / 2, h - 0.02), c)]
    return [bx((-w / 2, -d / 2, 0), (w / 2, -d / 2 + 0.014, h), c),
            bx((-w / 2 + 0.02, -d / 2 + 0.014, h / 2 - 0.006), (-w / 2 + 0.035, d / 2, h / 2 + 0.006), c),
            bx((w / 2 - 0.035, -d / 2 + 0.014, h / 2 - 0.006), (w / 2 - 0.02, d / 2, h / 2 + 0.006), c)]


def _window_handle(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return [bx((-w / 2, d / 2 - 0.012, h - 0.07), (w / 2, d / 2, h), it.color),
            bx((-0.011, -d / 2, 0), (0.011, -d / 2 + 0.02, h - 0.035), it.color),
            bx((-0.008, -d / 2 + 0.02, h - 0.05), (0.008, d / 2 - 0.012, h - 0.025), it.color)]


def _foot_switch(it: Item) -> list[Mesh]:
    w, d, h = it.size
    return [bx((-w / 2, -d / 2, 0), (w / 2, d / 2, h * 0.6), it.color),
            bx((-w / 2 + 0.012, -d / 2 + 0.01, h * 0.6), (w / 2 - 0.012, d / 2 - 0.01, h),
                shade(it.color, 1.6))]


BUILDERS: dict[str, Callable[[Item], list[Mesh]]] = {
    **STRUCTURE,
    "bed": _bed, "bedside_table": _bedside_table, "cabinet": _cabinet, "lamp": _lamp,
    "floor_lamp": _floor_lamp, "cable": _cable, "phone": _phone, "armchair": _armchair,
    "chair": _chair, "office_chair": _office_chair, "boxes": _boxes, "wardrobe": _wardrobe,
    "desk": _desk, "laptop": _laptop, "vanity": _vanity, "tap": _tap, "mirror": _mirror,
    "picture": _picture, "basket": _basket, "plant": _plant, "coat_rack": _coat_rack,
    "tv_stand": _tv_stand, "tv": _tv, "rug": _rug, "socket": _socket, "switch": _switch,
    "knob": _knob, "bar_handle": _bar_handle, "window_handle": _window_handle,
    "foot_switch": _foot_switch,
}
