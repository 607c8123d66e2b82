"""Procedural furnished rooms written as SceneFun3D visits, the raw material of SceneFunRI.

Each room (``make_room``) places furniture groups along its walls; each group brings
functional parts (sockets, switches, knobs, handles, a valve, a foot switch) and, for most,
an occluder that hides one of them from a standing person: the socket behind a bedside
table, the bottom drawer's knob behind an armchair, the switch behind an open door leaf...
Every group adds task descriptions that name a visible reference ("Unplug the lamp on the
bedside table") and the hidden part they are about.

``sample_scan`` turns the room into a laser scan (area-weighted points, functional parts
sampled densely and annotated), ``planned_views`` chooses cameras from which each hidden
target is inside the frame and fully occluded while its reference is seen, plus a few
generic views, and ``write_rooms`` renders them and writes the SceneFun3D layout. The
intended (description, frame) pairs are only kept in memory (``build_visit``): the files
carry nothing SceneFun3D does not have.

"Hidden" means no pixel of the target in the id buffer and, at every annotated point's
pixel and its 8 neighbours, a surface at least ``HIDE_GAP_M`` in front of the point: the
one-pixel margin keeps an exact ray test (and a renderer drawing both faces) in agreement.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ...renderers.camera import Camera
from ...renderers.mesh import Mesh, merge
from ...renderers.raster import render
from ...renderers.rooms3d import (
    WALLS,
    WHITE,
    Item,
    RoomLayout,
    Task,
    drawer_spans,
    item_mesh,
    room_meshes,
    wall_frame,
)
from .scenefun3d_types import (
    Annotation,
    Description,
    FrameData,
    Intrinsics,
    VideoData,
    VisitData,
)

FOV_Y_DEG = 52.0  # about the hires_wide camera of the SceneFun3D captures
EYE_HEIGHT = (1.2, 1.7)
MARGIN_FRAC = 20 / 640  # a hidden target keeps this share of the width from every edge
MIN_BOX_FRAC = 8.5 / 640  # and its box is at least this wide and tall (the pipeline: 8 px)
HIDE_GAP_M = 0.02
MIN_REFERENCE_FRAC = 0.01  # the named references cover at least this share of the image
SCREEN_SIZE = (160, 120)  # id buffers for choosing cameras
LIGHT = {"light_dir": (0.25, -0.35, 1.0), "ambient": 0.6}
NAMESPACE = uuid.UUID("6b1f3c1e-6c55-4d8e-9a43-5ce5f0a1d3b2")

WALL_COLORS = [(0.9, 0.88, 0.82), (0.84, 0.88, 0.9), (0.91, 0.85, 0.82), (0.86, 0.9, 0.84),
               (0.93, 0.92, 0.88), (0.8, 0.82, 0.86)]
FLOOR_COLORS = [(0.66, 0.5, 0.36), (0.56, 0.42, 0.31), (0.75, 0.63, 0.47), (0.6, 0.58, 0.55),
                (0.7, 0.55, 0.4)]
WOODS = [(0.59, 0.41, 0.27), (0.47, 0.33, 0.23), (0.77, 0.63, 0.46), (0.91, 0.89, 0.86),
         (0.38, 0.29, 0.24), (0.85, 0.8, 0.7)]
FABRICS = [(0.36, 0.47, 0.66), (0.67, 0.31, 0.31), (0.38, 0.55, 0.43), (0.78, 0.67, 0.39),
           (0.51, 0.43, 0.59), (0.45, 0.45, 0.48), (0.62, 0.5, 0.4)]
PLATES = [(0.95, 0.95, 0.93), (0.93, 0.91, 0.85), (0.9, 0.9, 0.9)]
HANDLES = [(0.62, 0.62, 0.64), (0.2, 0.2, 0.22), (0.7, 0.6, 0.4)]

# Task phrasings; {ref} and the like are filled by the groups. Keys name the templates.
TEMPLATES = {
    "lamp_socket": ["Unplug the lamp on the bedside table", "Unplug the bedside lamp",
                    "Pull the plug of the lamp on the nightstand"],
    "phone_socket": ["Unplug the phone charger on the bedside table",
                     "Unplug the charger of the phone on the nightstand"],
    "cabinet_knob": ["Open the bottom drawer of the chest of drawers{near}",
                     "Pull out the lowest drawer of the dresser{near}"],
    "door_switch": ["Turn on the light by the door", "Switch on the ceiling light next to the door",
                    "Turn on the room light at the door"],
    "door_handle": ["Open the door", "Open the door to the hallway"],
    "radiator_valve": ["Turn the radiator valve", "Turn up the heating on the radiator under the window",
                       "Turn down the radiator under the window"],
    "window_handle": ["Open the window", "Open the window above the radiator"],
    "wardrobe_handle": ["Open the {side} door of the wardrobe", "Open the wardrobe's {side} door"],
    "vanity_handle": ["Open the {side} cabinet door under the washbasin",
                      "Open the {side} door of the cabinet under the sink"],
    "laptop_socket": ["Plug in the laptop on the desk", "Charge the laptop on the desk"],
    "desk_knob": ["Open the top drawer of the desk", "Pull out the top drawer of the desk"],
    "tv_socket": ["Unplug the TV", "Unplug the television on the TV stand"],
    "floor_lamp_switch": ["Turn on the floor lamp", "Switch on the standing lamp by the armchair"],
    "floor_lamp_socket": ["Unplug the floor lamp", "Unplug the standing lamp next to the armchair"],
    # targets left in sight: the pipeline must reject every frame of these
    "tap": ["Turn on the tap of the washbasin"],
    "top_drawer": ["Open the top drawer of the chest of drawers"],
    "bedside_drawer": ["Open the drawer of the bedside table with the lamp"],
}


# --- layout ----------------------------------------------------------------------------

DARK_GREY = (0.18, 0.18, 0.2)
METAL_TAP = (0.75, 0.76, 0.78)
CABLE_OFF = 0.055  # cables run down behind furniture this far from the wall


class _Plan:
    """The room being laid out: items, tasks, and what each wall and the floor has taken."""

    def __init__(self, index: int, seed: int):
        self.index, self.seed = index, seed
        self.rng = np.random.default_rng([seed, index, 0])
        self.W, self.D, self.H = self.u(5.4, 6.8), self.u(4.6, 5.8), self.u(2.5, 2.8)
        self.items: list[Item] = []
        self.tasks: list[Task] = []
        self.spans: dict[str, list[tuple[float, float]]] = {w: [] for w in WALLS}
        self.clear: list[tuple[float, float, float, float]] = []  # floor others must not take

    # random draws, rounded so layouts print and compare cleanly
    def u(self, a: float, b: float) -> float:
        return round(float(self.rng.uniform(a, b)), 3)

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def tint(self, palette) -> tuple[float, float, float]:
        base, f = self.pick(palette), self.rng.uniform(0.95, 1.05, 3)
        return tuple(round(float(min(1.0, c * k)), 3) for c, k in zip(base, f, strict=True))

    # wall coordinates: s along the wall (left to right seen from inside), off from it
    def length(self, wall: str) -> float:
        return float(wall_frame(wall, self.W, self.D)[4])

    def point(self, wall: str, s: float, off: float, z: float | None = None) -> np.ndarray:
        o, a, n, _, _ = wall_frame(wall, self.W, self.D)
        xy = o + s * a + off * n
        return xy if z is None else np.r_[xy, z]

    def along(self, wall: str, xy) -> float:
        o, a, _, _, _ = wall_frame(wall, self.W, self.D)
        return float(np.dot(np.asarray(xy, float)[:2] - o, a))

    def add(self, kind: str, name: str, wall: str, s: float, off: float, z0: float, size,
            yaw_rel: float = 0.0, centred: bool = False, **kw) -> Item:
        """An item centred at along-coordinate ``s`` with its back ``off`` from the wall (its
        centre, if ``centred``) and its bottom at ``z0``, facing into the room."""
        c = self.point(wall, s, off if centred else off + size[1] / 2)
        yaw = wall_frame(wall, self.W, self.D)[3] + yaw_rel
        return self.add_world(kind, name, (c[0], c[1], z0 + size[2] / 2), size, yaw, **kw)

    def add_world(self, kind: str, name: str, center, size, yaw: float, **kw) -> Item:
        if any(it.name == name for it in self.items):
            raise ValueError(f"duplicate item name {name!r}")
        it = Item(name=name, kind=kind, center=tuple(round(float(v), 4) for v in center),
                  size=tuple(round(float(v), 4) for v in size), yaw_deg=round(float(yaw), 3),
                  object_id=len(self.items) + 1, **kw)
        self.items.append(it)
        return it

    def task(self, key: str, target: str, occluder: str | None, reference, **fmt) -> None:
        text = self.pick(TEMPLATES[key]).format(**fmt)
        self.tasks.append(Task(key, text, target, occluder, tuple(reference)))

    # a group is added, checked, and kept or rolled back
    def mark(self) -> tuple[int, int, int]:
        return len(self.items), len(self.tasks), len(self.clear)

    def rollback(self, mark) -> None:
        del self.items[mark[0]:], self.tasks[mark[1]:], self.clear[mark[2]:]

    def fits(self, mark) -> bool:
        """New solid items stay inside the room and off older solids and kept-clear floor."""
        old = [it.footprint() for it in self.items[:mark[0]] if it.solid] + self.clear[:mark[2]]
        for it in self.items[mark[0]:]:
            if not it.solid:
                continue
            x0, y0, x1, y1 = it.footprint()
            if x0 < -1e-3 or y0 < -1e-3 or x1 > self.W + 1e-3 or y1 > self.D + 1e-3:
                return False
            if any(x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1 for b in old):
                return False
        return True

    def free_starts(self, wall: str, width: float, margin: float = 0.6,
                    gap: float = 0.12) -> list[tuple[float, float]]:
        """Intervals of start positions for a group ``width`` wide on ``wall``."""
        lo, hi = margin, self.length(wall) - margin
        out, cur = [], lo
        for a, b in sorted(self.spans[wall]):
            if a - gap - width >= cur:
                out.append((cur, a - gap - width))
            cur = max(cur, b + gap)
        if hi - width >= cur:
            out.append((cur, hi - width))
        return out

    def place(self, width: float, build: Callable[[str, float], None], walls=WALLS,
              first: list[tuple[str, float]] = (), tries: int = 12) -> tuple[str, float] | None:
        """Put a group ``width`` wide along a wall: the ``first`` starts, then random ones."""
        options = list(first)
        for _ in range(tries):
            w = walls[int(self.rng.integers(len(walls)))]
            iv = self.free_starts(w, width)
            if iv:
                lens = np.array([b - a for a, b in iv]) + 1e-3
                a, b = iv[int(self.rng.choice(len(iv), p=lens / lens.sum()))]
                options.append((w, round(float(self.rng.uniform(a, b)), 3)))
        for wall, s0 in options:
            if not any(a - 1e-9 <= s0 <= b + 1e-9 for a, b in self.free_starts(wall, width)):
                continue
            m = self.mark()
            build(wall, s0)
            if self.fits(m):
                self.spans[wall].append((s0, s0 + width))
                return wall, s0
            self.rollback(m)
        return None


def _socket(p: _Plan, name: str, wall: str, s: float, z: float,
            affordance: str = "unplug") -> Item:
    """A wall socket centred at (s, z); single or double."""
    w = 0.155 if p.coin() else 0.085
    return p.add("socket", name, wall, s, 0.0, z - 0.0425, (w, 0.012, 0.085),
                 color=p.pick(PLATES), label="socket", affordance=affordance,
                 parent=f"wall_{wall}")


def _cable(p: _Plan, name: str, path, color, wall: str | None = None,
           parent: str | None = None) -> Item:
    """A cable through world points (axis-aligned segments); ``wall``: a plug at the end,
    pushed towards that wall."""
    pts = np.asarray(path, float)
    lo, hi = pts.min(axis=0) - 0.03, pts.max(axis=0) + 0.03
    params = {"path": tuple(tuple(round(float(v), 4) for v in q) for q in pts)}
    if wall is not None:
        inward = wall_frame(wall, p.W, p.D)[2]
        params.update(plug=True, plug_dir=(float(-inward[0]), float(-inward[1])))
    return p.add_world("cable", name, (lo + hi) / 2, hi - lo, 0.0, color=color, label="cable",
                       parent=parent, params=params)


def _knob(p: _Plan, name: str, wall: str, s: float, off: float, zc: float, parent: str,
          color) -> Item:
    """A drawer knob whose back touches a front face ``off`` from the wall."""
    return p.add("knob", name, wall, s, off, zc - 0.03, (0.06, 0.05, 0.06), color=color,
                 label="knob", affordance="pinch_pull", parent=parent)


def _armchair(p: _Plan, name: str, wall: str, s: float, off: float, yaw_rel: float = 0.0,
              color=None, height=(0.88, 0.98)) -> Item:
    size = (p.u(0.8, 0.9), p.u(0.8, 0.88), p.u(*height))
    return p.add("armchair", name, wall, s, off, 0.0, size, yaw_rel, color=color or p.tint(FABRICS),
                 label="armchair", solid=True)


def _bed_group(p: _Plan):
    """A bed between two bedside tables; a lamp on one, a phone on the other, each plugged
    into a socket low on the wall behind its table (the cable shows on the table top)."""
    bw, bd, hb = p.u(1.4, 1.8), p.u(2.0, 2.15), p.u(0.9, 1.15)
    tw, td, th = p.u(0.44, 0.52), p.u(0.36, 0.42), p.u(0.52, 0.6)
    width = 2 * tw + bw + 0.1
    lamp_left, wood, duvet = p.coin(), p.tint(WOODS), p.tint(FABRICS)
    knob_c = p.pick(HANDLES)

    def build(wall: str, s0: float) -> None:
        p.add("bed", "bed", wall, s0 + tw + 0.05 + bw / 2, 0.0, 0.0, (bw, bd, hb), color=wood,
              label="bed", solid=True, params={"duvet": duvet})
        ends = [s0 + tw / 2, s0 + width - tw / 2]
        for tag, s in zip(("lamp", "phone"), ends if lamp_left else ends[::-1], strict=True):
            table = p.add("bedside_table", f"bedside_table_{tag}", wall, s, 0.07, 0.0,
                          (tw, td, th), color=wood, label="bedside table", solid=True,
                          params={"drawers": 1})
            z0, z1 = drawer_spans(th, 1, 0.12, 0.025)[0]
            _knob(p, f"bedside_knob_{tag}", wall, s, 0.07 + td + 0.002, (z0 + z1) / 2,
                  table.name, knob_c)
            ss, sz = s + p.u(-0.5, 0.5) * (tw - 0.24), p.u(0.22, 0.32)
            sock = _socket(p, f"socket_{tag}", wall, ss, sz)
            top = th + 0.004
            if tag == "lamp":
                lw, lh = p.u(0.24, 0.32), p.u(0.42, 0.55)
                ls = s + p.u(-0.05, 0.05)
                ref = p.add("lamp", "lamp", wall, ls, 0.07 + td / 2, th, (lw, lw, lh),
                            centred=True, color=p.tint([(0.95, 0.9, 0.8), (0.85, 0.88, 0.9),
                                                        (0.9, 0.8, 0.7)]), label="lamp")
                cs, coff, col = ls, 0.07 + td / 2, WHITE
            else:
                cs = s + p.u(-0.08, 0.08)
                ref = p.add("phone", "phone", wall, cs, 0.07 + td / 2, th, (0.075, 0.15, 0.009),
                            centred=True, color=DARK_GREY, label="phone")
                coff, col = 0.07 + td / 2 - 0.075, DARK_GREY
            path = [p.point(wall, cs, coff, top), p.point(wall, cs, CABLE_OFF, top),
                    p.point(wall, cs, CABLE_OFF, sz), p.point(wall, ss, CABLE_OFF, sz)]
            _cable(p, f"cable_{tag}", path, col, wall, parent=ref.name)
            refs = (ref.name, table.name) if tag == "lamp" else (table.name, ref.name)
            p.task(f"{tag}_socket", sock.name, table.name, refs)
        if p.coin(0.4):
            p.task("bedside_drawer", "bedside_knob_lamp", None, ("lamp", "bedside_table_lamp"))

    return width, build


def _cabinet_group(p: _Plan, near: str):
    """A chest of drawers with an armchair in front hiding the lowest knob."""
    cw, cd, ch = p.u(0.8, 1.0), 0.45, p.u(1.15, 1.3)
    width = cw + 0.25
    wood, knob_c, occluded = p.tint(WOODS), p.pick(HANDLES), p.coin(0.9)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        cab = p.add("cabinet", "cabinet", wall, s, 0.0, 0.0, (cw, cd, ch), color=wood,
                    label="chest of drawers", solid=True, params={"drawers": 5})
        spans = drawer_spans(ch, 5, 0.08, 0.03)
        for k, (z0, z1) in enumerate(spans):
            _knob(p, f"cabinet_knob_{k}", wall, s, cd + 0.002, (z0 + z1) / 2, cab.name, knob_c)
        bottom = f"cabinet_knob_{len(spans) - 1}"
        if occluded:
            # a low armchair: the lowest drawers hide, the upper ones show the pattern
            _armchair(p, "cabinet_armchair", wall, s + p.u(-0.08, 0.08), cd + p.u(0.03, 0.12),
                      p.u(-12, 12), height=(0.72, 0.82))
        p.task("cabinet_knob", bottom, "cabinet_armchair" if occluded else None, (cab.name,),
               near=near)
        if p.coin(0.4):
            p.task("top_drawer", "cabinet_knob_0", None, (cab.name,))

    return width, build


def _door_group(p: _Plan):
    """A door with its hallway; the light switch hidden by the open leaf or a plant, the
    handle of a closed door by a coat rack (or left in sight)."""
    ow, oh, cw = p.u(0.82, 0.92), p.u(2.0, 2.1), 0.07
    hs = -1 if p.coin() else 1  # hinge side, -1: left seen from inside
    variant = p.pick(["leaf", "leaf", "plant", "coats", "both"])
    # the switch is on the hinge side (behind the open leaf, or by a plant); a coat rack
    # stands on the latch side, in front of the handle
    side_extra = {hs: 0.5 if variant == "coats" else 0.95,
                  -hs: 0.75 if variant in ("coats", "both") else 0.3}
    width = ow + 2 * cw + side_extra[-1] + side_extra[1]
    wood, frame_c = p.tint(WOODS + [(0.95, 0.95, 0.93)] * 2), p.pick(PLATES)
    handle_c, hz = p.pick(HANDLES), p.u(0.98, 1.05)
    sw_gap, sz = p.u(0.1, 0.26), p.u(1.02, 1.15)
    phi = p.u(158, 167)

    def build(wall: str, s0: float) -> None:
        sc = s0 + side_extra[-1] + cw + ow / 2
        p.add("door_frame", "door_frame", wall, sc, -0.12, 0.0, (ow + 2 * cw, 0.14, oh + cw),
              color=frame_c, label="door",
              params={"opening": (ow, oh), "casing": cw, "wall": wall})
        p.add("hallway", "hallway", wall, sc, -1.6, 0.0, (ow + 1.4, 1.6, 2.45),
              color=p.tint(WALL_COLORS), params={"floor": p.tint(FLOOR_COLORS)})
        lw, t = ow - 0.006, 0.04
        open_deg = phi if variant == "leaf" else 0.0
        a = math.radians(open_deg)
        d = np.array([-hs * math.cos(a), math.sin(a)])  # hinge → free edge, in (s, off)
        psi = hs * open_deg  # the leaf's yaw relative to the wall
        back = np.array([-math.sin(math.radians(psi)), -math.cos(math.radians(psi))])
        c = np.array([sc + hs * ow / 2, 0.0]) + d * lw / 2 + back * t / 2
        latch_x = -hs * (lw / 2 - 0.08)  # leaf-local x of the latch side
        leaf = p.add("door_leaf", "door_leaf", wall, c[0], c[1], 0.003, (lw, t, oh - 0.006),
                     psi, centred=True, color=wood, label="door",
                     params={"latch_x": latch_x, "handle_z": hz - 0.003})
        lever = hs  # the lever points at the hinge
        hc = leaf.to_world((latch_x + lever * 0.05, -t / 2 - 0.035, hz - 0.003 - 0.03))
        p.add_world("lever_handle", "door_handle", hc + (0, 0, 0.03), (0.16, 0.07, 0.06),
                    leaf.yaw_deg, color=handle_c, label="door handle", affordance="hook_turn",
                    parent=leaf.name, params={"rosette_x": -lever * 0.05, "dir": lever})
        # keep the swing and the way in clear of other groups
        reach = np.array([[sc - ow / 2 - 0.1, 0.0], [sc + ow / 2 + 0.1, ow + 0.1]])
        corners = np.array([p.point(wall, s, o) for s in reach[:, 0] for o in reach[:, 1]])
        p.clear.append((*corners.min(axis=0), *corners.max(axis=0)))
        ss = sc + hs * (ow / 2 + cw + sw_gap + 0.043)
        switch = p.add("switch", "light_switch", wall, ss, 0.0, sz - 0.0425, (0.085, 0.012, 0.085),
                       color=p.pick(PLATES), label="light switch", affordance="tip_push",
                       parent=f"wall_{wall}")
        refs = ("door_frame", "door_leaf")
        if variant == "leaf":
            p.task("door_switch", switch.name, leaf.name, refs)
        elif variant in ("plant", "both"):
            _plant(p, "door_plant", wall, ss + hs * p.u(-0.03, 0.06), p.u(0.28, 0.36),
                   p.u(1.45, 1.7), sz)
            p.task("door_switch", switch.name, "door_plant", refs)
        else:
            p.task("door_switch", switch.name, None, refs)
        if variant in ("coats", "both"):
            hs_ = p.along(wall, hc)
            _coat_rack(p, "coat_rack", wall, hs_ - lever * p.u(0.0, 0.12), p.u(0.3, 0.38))
            p.task("door_handle", "door_handle", "coat_rack", refs[::-1])
        elif variant == "plant" and p.coin(0.5):
            p.task("door_handle", "door_handle", None, refs[::-1])

    return width, build


def _plant(p: _Plan, name: str, wall: str, s: float, off: float, h: float, dense_z: float) -> Item:
    """A pot plant centred ``off`` from the wall, its densest leaves around ``dense_z``."""
    pot_r, pot_h = p.u(0.15, 0.2), p.u(0.3, 0.4)
    r = p.u(0.28, 0.34)
    blobs = [(0.0, 0.0, dense_z - 0.05, r, r * 0.9, 0.34, 1.0)]
    for k in range(5):
        a = 2 * math.pi * k / 5 + p.u(0, 1)
        z = p.u(pot_h + 0.25, h - 0.18)
        rr = p.u(0.16, 0.22)
        blobs.append((round(0.14 * math.cos(a), 3), round(0.12 * math.sin(a), 3), z, rr, rr,
                      p.u(0.18, 0.26), p.u(0.8, 1.15)))
    blobs.append((0.0, 0.0, h - 0.2, 0.2, 0.2, 0.2, 1.1))
    return p.add("plant", name, wall, s, off, 0.0, (2 * r + 0.1, 2 * r + 0.1, h), centred=True,
                 color=p.tint([(0.3, 0.52, 0.26), (0.24, 0.45, 0.3), (0.35, 0.55, 0.22)]),
                 label="plant", solid=True,
                 params={"pot_r": pot_r, "pot_h": pot_h, "blobs": tuple(blobs),
                         "pot": p.tint([(0.7, 0.4, 0.3), (0.85, 0.85, 0.82), (0.3, 0.3, 0.32)])})


def _coat_rack(p: _Plan, name: str, wall: str, s: float, off: float) -> Item:
    coats = tuple((round(a, 1), p.u(0.75, 0.95), p.tint(FABRICS + [DARK_GREY]))
                  for a in (p.u(-120, -60), p.u(-20, 20), p.u(60, 120)))
    return p.add("coat_rack", name, wall, s, off, 0.0, (0.55, 0.55, p.u(1.75, 1.85)), centred=True,
                 color=(0.3, 0.22, 0.16), label="coat rack", solid=True, params={"coats": coats})


def _window_group(p: _Plan):
    """A window over a radiator: the valve hidden by an armchair, the window handle by a
    curtain."""
    ww, wz0 = p.u(1.0, 1.4), p.u(0.85, 0.95)
    wh = min(p.u(1.2, 1.45), p.H - 0.3 - wz0)
    rw = p.u(0.8, min(1.25, ww + 0.1))
    rtop = wz0 - p.u(0.08, 0.14)
    vs, hsw = (-1 if p.coin() else 1), (-1 if p.coin() else 1)
    width = max(ww + 0.4, rw + 1.0) + 0.1
    arm, curtain = p.coin(0.9), p.coin(0.9)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        win = p.add("window", "window", wall, s, 0.0, wz0, (ww, 0.06, wh), color=WHITE,
                    label="window")
        rad = p.add("radiator", "radiator", wall, s, 0.04, 0.0, (rw, 0.1, rtop),
                    color=(0.94, 0.94, 0.92), label="radiator", solid=True,
                    params={"panel_z": 0.15, "valve_side": vs})
        vsx = s + vs * (rw / 2 - 0.025)
        p.add("valve", "radiator_valve", wall, vsx, 0.09, 0.03, (0.056, 0.056, 0.09),
              centred=True, color=WHITE, label="valve", affordance="rotate", parent=rad.name)
        p.add("window_handle", "window_handle", wall, s + hsw * (ww / 2 - 0.1), 0.06,
              wz0 + wh / 2 - 0.08, (0.045, 0.045, 0.16), color=WHITE, label="window handle",
              affordance="hook_turn", parent=win.name)
        ctop = min(p.H - 0.03, wz0 + wh + 0.15)
        fabric = p.tint(FABRICS)
        for tag, side, inner in (("hidden", hsw, p.u(0.3, 0.42)), ("open", -hsw, 0.12)):
            if tag == "hidden" and not curtain:
                inner = 0.05
            a, b = sorted((s + side * (ww / 2 + 0.15), s + side * (ww / 2 - inner)))
            p.add("curtain", f"curtain_{tag}", wall, (a + b) / 2, 0.12, wz0 - 0.02,
                  (b - a, 0.07, ctop - wz0 + 0.02), color=fabric, label="curtain")
        if arm:
            _armchair(p, "radiator_armchair", wall, vsx - vs * p.u(-0.05, 0.15),
                      0.14 + p.u(0.1, 0.25), p.u(-15, 15))
        p.task("radiator_valve", "radiator_valve", "radiator_armchair" if arm else None,
               (rad.name, win.name))
        p.task("window_handle", "window_handle", "curtain_hidden" if curtain else None,
               (win.name,))

    return width, build


def _wardrobe_group(p: _Plan):
    """A two-door wardrobe with a tall chair or a stack of boxes in front of one handle."""
    w, d, h = p.u(1.0, 1.2), 0.58, p.u(1.95, 2.15)
    gap, zc = p.u(0.05, 0.08), p.u(0.95, 1.05)
    side = p.pick(["left", "right"])
    sign = -1 if side == "left" else 1
    occ = p.pick(["chair", "boxes"])
    width = w + 0.2
    wood, hc = p.tint(WOODS), p.pick(HANDLES)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        p.add("wardrobe", "wardrobe", wall, s, 0.0, 0.0, (w, d, h), color=wood, label="wardrobe",
              solid=True)
        for tag, sg in (("left", -1), ("right", 1)):
            p.add("bar_handle", f"wardrobe_handle_{tag}", wall, s + sg * gap, d, zc - 0.11,
                  (0.05, 0.035, 0.22), color=hc, label="handle", affordance="hook_pull",
                  parent="wardrobe", params={"vertical": True})
        hs_ = s + sign * gap
        if occ == "chair":
            p.add("chair", "wardrobe_chair", wall, hs_ + sign * p.u(0.0, 0.1), d + p.u(0.02, 0.08),
                  0.0, (0.46, 0.5, p.u(1.12, 1.25)), p.u(-8, 8), color=p.tint(FABRICS),
                  label="chair", solid=True, params={"wood": p.tint(WOODS)})
        else:
            stack, z = [], 0.0
            for _ in range(3):
                sx, sy, sz = p.u(0.42, 0.55), p.u(0.38, 0.45), p.u(0.34, 0.45)
                stack.append((p.u(-0.03, 0.03), p.u(-0.02, 0.02), z, sx, sy, sz, p.u(-6, 6)))
                z += sz
            p.add("boxes", "wardrobe_boxes", wall, hs_ + sign * p.u(0.0, 0.08), d + 0.03, 0.0,
                  (0.62, 0.52, z), color=p.tint([(0.72, 0.56, 0.38), (0.65, 0.5, 0.35)]),
                  label="boxes", solid=True, params={"stack": tuple(stack)})
        p.task("wardrobe_handle", f"wardrobe_handle_{side}", f"wardrobe_{occ}", ("wardrobe",),
               side=side)

    return width, build


def _vanity_group(p: _Plan):
    """A washbasin cabinet under a mirror; a laundry basket hides one door handle."""
    w, d, h = p.u(0.62, 0.8), 0.46, 0.86
    side = p.pick(["left", "right"])
    sign = -1 if side == "left" else 1
    zc, r, bh = p.u(0.42, 0.52), p.u(0.2, 0.24), p.u(0.64, 0.72)
    width = w + 0.3
    wood, hc = p.tint(WOODS), p.pick(HANDLES)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        p.add("vanity", "vanity", wall, s, 0.0, 0.0, (w, d, h), color=wood,
              label="washbasin", solid=True)
        for tag, sg in (("left", -1), ("right", 1)):
            p.add("bar_handle", f"vanity_handle_{tag}", wall, s + sg * 0.05, d, zc - 0.07,
                  (0.05, 0.035, 0.14), color=hc, label="handle", affordance="hook_pull",
                  parent="vanity", params={"vertical": True})
        p.add("tap", "tap", wall, s, 0.05, h + 0.003, (0.05, 0.17, 0.2), color=METAL_TAP,
              label="tap", affordance="rotate", parent="vanity")
        mw = min(w - 0.05, p.u(0.5, 0.7))
        p.add("mirror", "mirror", wall, s, 0.0, h + p.u(0.25, 0.35), (mw, 0.025, p.u(0.6, 0.8)),
              color=p.pick(PLATES), label="mirror")
        p.add("basket", "laundry_basket", wall, s + sign * (0.05 + p.u(-0.02, 0.08)),
              d + 0.03 + r, 0.0, (2 * r, 2 * r, bh), centred=True,
              color=p.tint([(0.75, 0.65, 0.48), (0.85, 0.85, 0.82), (0.5, 0.6, 0.7)]),
              label="laundry basket", solid=True)
        p.task("vanity_handle", f"vanity_handle_{side}", "laundry_basket", ("vanity",), side=side)
        p.task("tap", "tap", None, ("vanity",))

    return width, build



def _desk_group(p: _Plan):
    """A desk with a laptop whose charger hangs behind the modesty panel, near a socket;
    an office chair in front of the drawer pedestal."""
    w, d, h = p.u(1.2, 1.5), p.u(0.6, 0.7), 0.75
    ps = -1 if p.coin() else 1
    width = w + 0.2
    wood, kc, chair = p.tint(WOODS), p.pick(HANDLES), p.coin(0.9)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        desk = p.add("desk", "desk", wall, s, 0.05, 0.0, (w, d, h), color=wood, label="desk",
                     solid=True, params={"pedestal": ps, "pedestal_w": 0.42, "drawers": 3})
        pk = s + ps * (w / 2 - 0.02 - 0.21)
        for k, (z0, z1) in enumerate(drawer_spans(h - 0.03, 3, 0.04, 0.0)):
            _knob(p, f"desk_knob_{k}", wall, pk, 0.05 + d - 0.018, (z0 + z1) / 2, desk.name, kc)
        ss = s - ps * p.u(0.0, 0.3)
        sock = _socket(p, "socket_desk", wall, ss, p.u(0.25, 0.4), "plug_in")
        ls = s - ps * p.u(0.0, 0.25)
        lap = p.add("laptop", "laptop", wall, ls, 0.05 + p.u(0.15, 0.25), h, (0.33, 0.29, 0.235),
                    p.u(-10, 10), color=p.tint([(0.75, 0.76, 0.78), (0.3, 0.3, 0.32)]),
                    label="laptop", params={"open_deg": p.u(100, 115)})
        cs = p.along(wall, lap.center) - ps * 0.19
        coff = float(np.dot(np.asarray(lap.center[:2]) - p.point(wall, 0, 0),
                            wall_frame(wall, p.W, p.D)[2]))
        path = [p.point(wall, cs, coff, h + 0.004), p.point(wall, cs, 0.045, h + 0.004),
                p.point(wall, cs, 0.045, 0.1), p.point(wall, ss + 0.2 * ps, 0.045, 0.1)]
        _cable(p, "cable_laptop", path, DARK_GREY, wall, parent=lap.name)
        p.task("laptop_socket", sock.name, desk.name, (lap.name, desk.name))
        if chair:
            p.add("office_chair", "office_chair", wall, pk + p.u(-0.05, 0.05),
                  0.05 + d + p.u(0.0, 0.1), 0.0, (0.5, 0.52, p.u(0.96, 1.05)), 180 + p.u(-8, 8),
                  color=p.tint(FABRICS + [DARK_GREY]), label="office chair", solid=True)
        p.task("desk_knob", "desk_knob_0", "office_chair" if chair else None, (desk.name,))

    return width, build


def _tv_group(p: _Plan):
    """A TV on a low stand, plugged into a socket behind the stand."""
    w, d, h = p.u(1.2, 1.6), 0.42, p.u(0.45, 0.55)
    tw, th = p.u(0.9, min(1.2, w - 0.1)), p.u(0.6, 0.72)
    sg = -1 if p.coin() else 1
    width = w + 0.2
    wood = p.tint(WOODS)

    def build(wall: str, s0: float) -> None:
        s = s0 + width / 2
        stand = p.add("tv_stand", "tv_stand", wall, s, 0.07, 0.0, (w, d, h), color=wood,
                      label="TV stand", solid=True)
        tv = p.add("tv", "tv", wall, s, 0.07 + d / 2, h, (tw, 0.2, th), centred=True,
                   color=DARK_GREY, label="TV")
        ss, sz = s + sg * p.u(0.15, 0.45), p.u(0.2, 0.32)
        sock = _socket(p, "socket_tv", wall, ss, sz)
        cs = s + sg * 0.15
        path = [p.point(wall, cs, 0.07 + d / 2 - 0.03, h + 0.25),
                p.point(wall, cs, CABLE_OFF, h + 0.25), p.point(wall, cs, CABLE_OFF, sz),
                p.point(wall, ss, CABLE_OFF, sz)]
        _cable(p, "cable_tv", path, DARK_GREY, wall, parent=tv.name)
        p.task("tv_socket", sock.name, stand.name, (tv.name,))

    return width, build


def _floor_lamp_group(p: _Plan):
    """An armchair with a floor lamp beside it; the lamp's foot switch and its socket lie
    behind the armchair, the cable leading there along the floor."""
    fs = -1 if p.coin() else 1
    width = 0.9 + 0.75

    def build(wall: str, s0: float) -> None:
        sa = s0 + (0.5 if fs > 0 else width - 0.5)
        arm = _armchair(p, "lamp_armchair", wall, sa, p.u(0.3, 0.38), p.u(-8, 8))
        lamp_s = sa + fs * (arm.size[0] / 2 + 0.3)
        lamp = p.add("floor_lamp", "floor_lamp", wall, lamp_s, 0.32, 0.0,
                     (0.4, 0.4, p.u(1.5, 1.7)), centred=True,
                     color=p.tint([(0.95, 0.9, 0.8), (0.85, 0.88, 0.9)]), label="floor lamp",
                     solid=True)
        sw_s, sw_off = sa + fs * p.u(0.0, 0.15), p.u(0.12, 0.18)
        p.add("foot_switch", "foot_switch", wall, sw_s, sw_off, 0.0, (0.1, 0.065, 0.035),
              centred=True, color=DARK_GREY, label="foot switch", affordance="foot_push",
              parent=lamp.name)
        ss, sz = sa - fs * p.u(0.05, 0.2), p.u(0.22, 0.3)
        sock = _socket(p, "socket_floor_lamp", wall, ss, sz)
        z = 0.006
        path = [p.point(wall, lamp_s, 0.32, z), p.point(wall, lamp_s, sw_off, z),
                p.point(wall, ss, sw_off, z), p.point(wall, ss, CABLE_OFF, z),
                p.point(wall, ss, CABLE_OFF, sz)]
        _cable(p, "cable_floor_lamp", path, DARK_GREY, wall, parent=lamp.name)
        p.task("floor_lamp_switch", "foot_switch", arm.name, (lamp.name,))
        p.task("floor_lamp_socket", sock.name, arm.name, (lamp.name,))

    return width, build


def make_room(index: int, seed: int = 0) -> RoomLayout:
    """A furnished room; the same (index, seed) gives the same layout."""
    p = _Plan(index, seed)
    width, build = _bed_group(p)
    bed_walls = [w for w in WALLS if p.length(w) >= width + 1.3]
    placed = p.place(width, build, walls=bed_walls)
    if placed is None:
        raise RuntimeError(f"room {index}: no wall takes the bed")
    bed_wall, b0 = placed
    if p.place(*_door_group(p), tries=40) is None:
        raise RuntimeError(f"room {index}: no wall takes the door")
    # the chest of drawers goes next to the bed when it can
    cw = 1.25
    side = [(bed_wall, round(b0 - 0.15 - cw, 3)), (bed_wall, round(b0 + width + 0.15, 3))]
    if p.coin():
        side.reverse()
    near_bed = _cabinet_group(p, " next to the bed")
    got = p.place(near_bed[0], near_bed[1], first=side, tries=0)
    if got is None:
        p.place(*_cabinet_group(p, ""))
    groups = [_window_group, _wardrobe_group, _desk_group, _vanity_group, _tv_group,
              _floor_lamp_group]
    order = [int(k) for k in p.rng.permutation(len(groups))]
    if p.coin(0.6):  # the window needs the longest free stretch: often give it first pick
        order.remove(0)
        order.insert(0, 0)
    for k in order:
        p.place(*groups[k](p))
    _decorate(p, bed_wall)
    return RoomLayout(index=index, seed=seed, width=p.W, depth=p.D, height=p.H,
                      items=p.items, tasks=p.tasks)


def _decorate(p: _Plan, bed_wall: str) -> None:
    """Pictures, a rug, then the floor, ceiling and walls (with the door's opening)."""
    if any(it.kind == "bed" for it in p.items):
        bed = next(it for it in p.items if it.kind == "bed")
        p.add("picture", "picture_bed", bed_wall, p.along(bed_wall, bed.center), 0.0,
              bed.size[2] + p.u(0.2, 0.35), (p.u(0.6, 1.0), 0.03, p.u(0.4, 0.6)),
              color=DARK_GREY, label="picture", params={"canvas": p.tint(FABRICS)})
    if p.coin(0.7):
        p.add_world("rug", "rug", (p.W / 2 + p.u(-0.3, 0.3), p.D / 2 + p.u(-0.3, 0.3), 0.0),
                    (p.u(1.6, 2.4), p.u(1.2, 1.8), 0.006), 0.0, color=p.tint(FABRICS),
                    label="rug")
    floor_c = p.tint(FLOOR_COLORS)
    p.add_world("floor", "floor", (p.W / 2, p.D / 2, 0.0), (p.W, p.D, 0.0), 0.0, color=floor_c,
                label="floor", params={"plank_seed": p.index * 1000 + p.seed})
    p.add_world("ceiling", "ceiling", (p.W / 2, p.D / 2, p.H), (p.W, p.D, 0.0), 0.0,
                color=(0.96, 0.96, 0.95), label="ceiling")
    wall_c = p.tint(WALL_COLORS)
    for w in WALLS:
        L = p.length(w)
        openings = []  # in the wall's local x, which runs from -L/2
        for it in p.items:
            if it.kind == "door_frame" and it.params["wall"] == w:
                (ow, oh), s = it.params["opening"], p.along(w, it.center)
                openings.append((s - ow / 2 - L / 2, s + ow / 2 - L / 2, 0.0, oh))
        p.add("wall", f"wall_{w}", w, L / 2, 0.0, 0.0, (L, 0.0, p.H), color=wall_c, label="wall",
              params={"openings": tuple(openings)})



# --- laser scan --------------------------------------------------------------------------


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
    """A laser scan of the room in its own (world = ARKit) frame: ``(points (N, 3), colors
    (N, 3) uint8, annotations)``. Surfaces are sampled by area; each functional part is
    sampled densely on its own (``part_density`` points per m², clipped to ``part_range``)
    and annotated with its affordance; one "exclude" annotation marks a reflective surface
    (mirror, TV or window), as the real data marks regions to leave out. Points are shuffled,
    so annotations index scattered rows."""
    chunks, owner = [], []
    plain = [(m, it) for m, it in zip(meshes, layout.items, strict=True) if not it.affordance]
    areas = np.array([_triangles(m)[1].sum() for m, _ in plain])
    counts = rng.multinomial(n_points, areas / areas.sum())
    for (m, it), c in zip(plain, counts, strict=True):
        if c:
            chunks.append(_sample_faces(m, np.arange(m.n_faces), int(c), rng))
            owner.append(np.full(int(c), it.object_id))
    for m, it in zip(meshes, layout.items, strict=True):
        if it.affordance:
            faces = _exposed_faces(m, it)
            area = _triangles(m)[1][faces].sum()
            c = int(np.clip(round(area * part_density), *part_range))
            chunks.append(_sample_faces(m, faces, c, rng))
            owner.append(np.full(c, it.object_id))
    points = np.concatenate([c[0] for c in chunks])
    colors = np.concatenate([c[1] for c in chunks])
    owner = np.concatenate(owner)
    order = rng.permutation(len(points))
    points, colors, owner = points[order], colors[order], owner[order]
    annotations = [Annotation(annot_id(layout, it.name), np.flatnonzero(owner == it.object_id),
                              it.affordance) for it in layout.functional]
    for kind in ("mirror", "tv", "window", "hallway"):
        shiny = [it for it in layout.items if it.kind == kind]
        if shiny:
            idx = np.flatnonzero(owner == shiny[0].object_id)
            annotations.append(Annotation(annot_id(layout, "exclude"), idx, "exclude"))
            break
    return points, colors, annotations


# --- cameras -----------------------------------------------------------------------------


@dataclass
class View:
    """A camera (4x4 camera→world, x right, y down, z forward) and the hidden-target task it
    was chosen for (None: a generic view)."""

    camera_to_world: np.ndarray
    task: Task | None = None


@dataclass
class Check:
    ok: bool
    why: str = ""
    box: tuple[float, float, float, float] | None = None
    gap_m: float = math.nan  # smallest depth gap between a target point and what hides it


def make_camera(camera_to_world: np.ndarray, width: int, height: int,
                fov_y_deg: float = FOV_Y_DEG) -> Camera:
    f = (height / 2) / math.tan(math.radians(fov_y_deg) / 2)
    K = np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1.0]])
    return Camera(K, np.linalg.inv(camera_to_world), width, height)


def check_hidden(rendered, camera: Camera, points: np.ndarray, target_id: int,
                 reference_ids=(), primary_alone: int | Callable[[], int] | None = None,
                 occluder_id: int | None = None, margin_frac=MARGIN_FRAC,
                 min_box_frac=MIN_BOX_FRAC, gap_m=HIDE_GAP_M,
                 min_reference_frac=MIN_REFERENCE_FRAC, min_occluder_share=0.0,
                 max_occluder_frac=1.0) -> Check:
    """Whether ``points`` of the target (world) lie inside the frame with a margin and are
    fully hidden (see the module docstring), and the references are seen: all together on
    ``min_reference_frac`` of the image, the first (``reference_ids[0]``) on at least half
    of the ``primary_alone`` pixels it covers when rendered alone (a callable is only
    called when every other test passed)."""
    w, h = camera.width, camera.height
    uv, z = camera.project(points)
    if not (z > camera.near).all():
        return Check(False, "behind the camera")
    m = margin_frac * w
    if (uv[:, 0] < m).any() or (uv[:, 0] > w - m).any() or (uv[:, 1] < m).any() \
            or (uv[:, 1] > h - m).any():
        return Check(False, "not inside the frame with the margin")
    box = (float(uv[:, 0].min()), float(uv[:, 1].min()), float(uv[:, 0].max()),
           float(uv[:, 1].max()))
    if min(box[2] - box[0], box[3] - box[1]) < min_box_frac * w:
        return Check(False, "box too small", box)
    if (rendered.ids == target_id).any():
        return Check(False, "target seen", box)
    cols, rows = uv[:, 0].astype(int), uv[:, 1].astype(int)
    far = _max3(rendered.depth)  # the farthest surface around each pixel must still hide
    gap = z - far[rows, cols]
    if not (gap >= gap_m).all():
        return Check(False, "not fully hidden", box, float(gap.min()))
    g = float(gap.min())
    if occluder_id is not None:
        if np.mean(rendered.ids[rows, cols] == occluder_id) < min_occluder_share:
            return Check(False, "hidden by something else", box, g)
        if np.mean(rendered.ids == occluder_id) > max_occluder_frac:
            return Check(False, "occluder fills the view", box, g)
    if reference_ids:
        if np.isin(rendered.ids, list(reference_ids)).sum() < min_reference_frac * w * h:
            return Check(False, "reference not seen", box, g)
        if primary_alone is not None:
            if callable(primary_alone):
                primary_alone = primary_alone()
            seen = int((rendered.ids == reference_ids[0]).sum())
            if seen < 0.5 * primary_alone or seen < 0.0005 * w * h:
                return Check(False, "reference mostly hidden", box, g)
    return Check(True, "", box, g)


def primary_pixels(mesh: Mesh, camera: Camera) -> int:
    """Pixels a mesh covers rendered alone on a canvas three times the image's width and
    height around it, so a reference cut off by the frame counts as partly unseen."""
    K = camera.K.copy()
    K[:2, 2] += (camera.width, camera.height)
    wide = Camera(K, camera.world_to_camera, 3 * camera.width, 3 * camera.height)
    return int((render(mesh, wide, ids_only=True).ids >= 0).sum())


def _max3(a: np.ndarray) -> np.ndarray:
    """The maximum over each pixel's 3x3 neighbourhood (edges repeat)."""
    p = np.pad(a, 1, mode="edge")
    h, w = a.shape
    return np.max([p[i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=0)


def _look(eye, target, roll_deg: float) -> np.ndarray:
    """camera→world for a camera at ``eye`` looking at ``target``, rolled about its axis."""
    cam = Camera.look_at(eye, target, fov_y_deg=FOV_Y_DEG, width=4, height=3)
    c, s = math.cos(math.radians(roll_deg)), math.sin(math.radians(roll_deg))
    roll = np.eye(4)
    roll[:2, :2] = [[c, s], [-s, c]]
    return np.linalg.inv(roll @ cam.world_to_camera)


def _free(layout: RoomLayout, xy, margin: float = 0.45, keep_off=(), far: float = 0.8) -> bool:
    """Whether a person can stand at ``xy``: inside the room, ``margin`` from furniture and
    ``far`` from the items named in ``keep_off`` (so an occluder does not fill the view)."""
    x, y = xy
    if not (0.4 <= x <= layout.width - 0.4 and 0.4 <= y <= layout.depth - 0.4):
        return False
    for it in layout.items:
        if it.solid or it.name in keep_off:
            e = far if it.name in keep_off else margin
            x0, y0, x1, y1 = it.footprint()
            if x0 - e < x < x1 + e and y0 - e < y < y1 + e:
                return False
    return True


def planned_views(layout: RoomLayout, rng, meshes: list[Mesh] | None = None,
                  per_task=(2, 3), generic: int = 3, tries: int = 30,
                  stats: dict | None = None) -> list[View]:
    """Cameras for each task with an occluder: 2 or 3 from which the target is inside the
    frame, fully hidden (mostly by its occluder) and the reference seen, checked on a small
    id buffer with stricter thresholds; then ``generic`` views across the room. ``stats``
    collects, per task key, why candidate cameras were turned down."""
    meshes = room_meshes(layout) if meshes is None else meshes
    scene = geometry_scene(layout, meshes)
    views: list[View] = []
    for task in layout.tasks:
        if task.occluder is not None:
            found = _task_views(layout, meshes, scene, task, rng, tries, stats)
            want = per_task[0] + int(rng.random() < 0.3) * (per_task[1] - per_task[0])
            views += [View(v, task) for v in _spread(found, want)]
    for _ in range(generic):
        for _ in range(50):
            eye_xy = rng.uniform((0.5, 0.5), (layout.width - 0.5, layout.depth - 0.5))
            if _free(layout, eye_xy):
                break
        wall_pt = rng.uniform((0, 0), (layout.width, layout.depth))
        axis = int(rng.integers(2))
        wall_pt[axis] = (layout.width, layout.depth)[axis] * int(rng.integers(2))
        look = np.r_[wall_pt, rng.uniform(0.6, 1.3)]
        eye = np.r_[eye_xy, rng.uniform(*EYE_HEIGHT)]
        if np.linalg.norm(look[:2] - eye[:2]) > 0.5:
            views.append(View(_look(eye, look, rng.uniform(-4, 4)), None))
    return views


def _task_views(layout: RoomLayout, meshes: list[Mesh], scene: Mesh, task: Task, rng,
                tries: int, stats: dict | None) -> list[np.ndarray]:
    """Up to 4 cameras that pass the screening for ``task``, from at most ``tries`` renders."""
    by_name = {it.name: (m, it) for m, it in zip(meshes, layout.items, strict=True)}
    mesh, target = by_name[task.target]
    pts = part_points(mesh, target, 64, np.random.default_rng(target.object_id))
    ref_ids = [by_name[r][1].object_id for r in task.reference]
    ref_mesh = by_name[task.reference[0]][0]
    ref_c = np.mean([by_name[r][1].center for r in task.reference], axis=0)
    occ = by_name[task.occluder][1].object_id
    c = np.asarray(target.center)
    front = target.front[:2] / np.linalg.norm(target.front[:2])
    # near enough for a box of MIN_BOX_FRAC (+ 30 %); f: focal length in pixels at 640x480
    f = 240 / math.tan(math.radians(FOV_Y_DEG) / 2)
    reach = min(3.6, f * sorted(target.size)[1] / (MIN_BOX_FRAC * 640 * 1.2))
    sw, sh = SCREEN_SIZE
    why = stats.setdefault(task.key, {}) if stats is not None else {}
    found: list[np.ndarray] = []
    renders = 0
    for _ in range(tries * 6):  # most draws are cheap misses (inside furniture)
        if renders >= tries or len(found) >= 4:
            break
        ang = math.radians(rng.uniform(-60, 60))
        d = np.array([front[0] * math.cos(ang) - front[1] * math.sin(ang),
                      front[0] * math.sin(ang) + front[1] * math.cos(ang)])
        eye_xy = c[:2] + d * rng.uniform(min(1.4, reach - 0.3), reach)
        if not _free(layout, eye_xy, keep_off=(task.occluder,)):
            continue
        eye = np.r_[eye_xy, rng.uniform(*EYE_HEIGHT)]
        look = c + rng.uniform(0.15, 0.55) * (ref_c - c) + rng.normal(0, 0.08, 3)
        c2w = _look(eye, look, rng.uniform(-4, 4))
        cam = make_camera(c2w, sw, sh)
        uv, z = cam.project(pts)
        m = MARGIN_FRAC * sw + 1
        if not (z > 0.3).all() or (uv[:, 0] < m).any() or (uv[:, 0] > sw - m).any() \
                or (uv[:, 1] < m).any() or (uv[:, 1] > sh - m).any():
            continue
        renders += 1
        chk = check_hidden(render(scene, cam, ids_only=True), cam, pts, target.object_id,
                           ref_ids, lambda c=cam: primary_pixels(ref_mesh, c), occ, gap_m=0.03,
                           min_box_frac=MIN_BOX_FRAC * 1.12, min_occluder_share=0.5,
                           max_occluder_frac=0.35)
        why[chk.why or "ok"] = why.get(chk.why or "ok", 0) + 1
        if chk.ok:
            found.append(c2w)
    why["tasks"] = why.get("tasks", 0) + 1
    why["tasks with 2 views"] = why.get("tasks with 2 views", 0) + (len(found) >= 2)
    return found


def geometry_scene(layout: RoomLayout, meshes: list[Mesh]) -> Mesh:
    """The room merged for depth and id buffers: the floor as one quad instead of boards
    (the same surface; hundreds of large triangles cost time and add nothing there)."""
    flat = [item_mesh(replace(it, params={})) if it.kind == "floor" else m
            for m, it in zip(meshes, layout.items, strict=True)]
    return merge(flat)


def _spread(c2ws: list[np.ndarray], k: int) -> list[np.ndarray]:
    """Up to ``k`` of the cameras, greedily far apart (the first one first)."""
    if not c2ws:
        return []
    chosen = [c2ws[0]]
    rest = c2ws[1:]
    while rest and len(chosen) < k:
        d = [min(np.linalg.norm(r[:3, 3] - c[:3, 3]) for c in chosen) for r in rest]
        j = int(np.argmax(d))
        if d[j] < 0.25:
            break
        chosen.append(rest.pop(j))
    return chosen



# --- visits ------------------------------------------------------------------------------


@dataclass
class Intended:
    """A frame chosen so that the description's target is inside it and fully hidden."""

    desc_id: str
    text: str
    annot_ids: list[str]
    timestamp: str
    camera_to_world: np.ndarray
    check: Check


@dataclass
class RoomBuild:
    visit: VisitData
    layout: RoomLayout
    intended: list[Intended]
    dropped: int = 0  # planned hidden views that failed the check at the output size
    seconds: dict = field(default_factory=dict)


def visit_id(index: int) -> str:
    return f"{100000 + index:06d}"


def video_id(index: int) -> str:
    return f"{40000000 + index:08d}"


def contact_shadows(layout: RoomLayout) -> list[tuple[float, float, float, float, float]]:
    """Soft discs under furniture on the floor and under things standing on furniture."""
    out = []
    for it in layout.items:
        w, d, _ = it.size
        z = float(it.base[2])
        if it.solid and z < 0.01:
            out.append((it.center[0], it.center[1], 0.0, 0.42 * max(w, d), 0.3))
        elif it.kind in ("lamp", "laptop", "tv", "phone"):
            out.append((it.center[0], it.center[1], z, 0.5 * max(w, d), 0.35))
    return out


def shadows_in_view(shadows, camera: Camera) -> list:
    """The discs whose reach shows in the image. The rasterizer shades a disc that reaches
    behind the camera over the whole image, which costs more than the disc is worth."""
    out = []
    for x, y, z, r, s in shadows:
        e = 1.5 * r
        sq = np.array([[x - e, y - e, z], [x + e, y - e, z], [x + e, y + e, z], [x - e, y + e, z]])
        uv, depth = camera.project(sq)
        if (depth <= camera.near).any():
            continue
        if (uv[:, 0].max() < 0 or uv[:, 0].min() > camera.width or uv[:, 1].max() < 0
                or uv[:, 1].min() > camera.height):
            continue
        out.append((x, y, z, r, s))
    return out


def laser_to_arkit(rng) -> np.ndarray:
    """A rigid transform that is never the identity: a turn about z and a shift."""
    yaw = math.radians(rng.uniform(20, 340))
    t = np.eye(4)
    t[:3, :3] = [[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]]
    t[:3, 3] = (rng.uniform(-4, 4), rng.uniform(-4, 4), rng.uniform(-0.5, 0.5))
    return t


def build_visit(index: int, seed: int = 0, size=(640, 480), color: bool = True) -> RoomBuild:
    """Lay out, scan, plan, render and check one room; the visit as data, not yet files.
    ``color=False`` renders depth and ids only (black frames): the same views and checks,
    for tests that need geometry only."""
    t0 = time.perf_counter()
    layout = make_room(index, seed)
    meshes = room_meshes(layout)
    scene, flat = merge(meshes), geometry_scene(layout, meshes)
    points, colors, annotations = sample_scan(meshes, layout, np.random.default_rng([seed, index, 1]))
    t1 = time.perf_counter()
    views = planned_views(layout, np.random.default_rng([seed, index, 2]), meshes)
    t2 = time.perf_counter()
    by_name = {it.name: it for it in layout.items}
    ann = {a.annot_id: a for a in annotations}
    shadows = contact_shadows(layout)
    frames, intended, dropped = [], [], 0
    width, height = size
    for v in views:
        cam = make_camera(v.camera_to_world, width, height)
        if color:
            r = render(scene, cam, supersample=2,
                       contact_shadows=shadows_in_view(shadows, cam), **LIGHT)
        else:
            r = render(flat, cam, ids_only=True)
            r.color = np.zeros((height, width, 3), np.uint8)
        chk = None
        if v.task is not None:
            target = by_name[v.task.target]
            pts = points[ann[annot_id(layout, target.name)].indices]
            refs = [by_name[n].object_id for n in v.task.reference]
            ref_mesh = meshes[layout.items.index(by_name[v.task.reference[0]])]
            chk = check_hidden(r, cam, pts, target.object_id, refs,
                               lambda m=ref_mesh, c=cam: primary_pixels(m, c))
            if not chk.ok:
                dropped += 1
                continue
        ts = f"{1000 + 0.1 * len(frames):.3f}"
        k = Intrinsics(width, height, cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2])
        frames.append(FrameData(ts, r.color, r.depth, k, v.camera_to_world))
        if chk is not None:
            intended.append(Intended(desc_id(layout, v.task), v.task.text,
                                     [annot_id(layout, v.task.target)], ts, v.camera_to_world, chk))
    t3 = time.perf_counter()
    l2a = laser_to_arkit(np.random.default_rng([seed, index, 3]))
    laser = (points - l2a[:3, 3]) @ l2a[:3, :3]  # inverse of p_arkit = R p_laser + t
    vcol = np.zeros((len(scene.vertices), 3))
    for k in range(3):  # vertices take their faces' colours (the last face written wins)
        vcol[scene.faces[:, k]] = scene.colors
    video = VideoData(video_id(index), frames, l2a, scene.vertices.copy(), scene.faces.copy(),
                      np.clip(np.rint(vcol * 255), 0, 255).astype(np.uint8))
    descriptions = [Description(desc_id(layout, t), [annot_id(layout, t.target)], t.text)
                    for t in layout.tasks]
    visit = VisitData(visit_id(index), laser, colors, points[:, 2] < layout.height - 0.01,
                      annotations, descriptions, [video])
    secs = {"layout_scan": t1 - t0, "plan": t2 - t1, "render": t3 - t2}
    return RoomBuild(visit, layout, intended, dropped, secs)


def _write_one(args) -> str:
    from .scenefun3d import write_visit

    root, index, seed, size, overwrite = args
    b = build_visit(index, seed, size)
    write_visit(root, b.visit, overwrite=overwrite)
    return b.visit.visit_id


def write_rooms(root: str | Path, n_rooms: int = 8, seed: int = 0, size=(640, 480),
                overwrite: bool = True, workers: int | None = None) -> list[str]:
    """Write rooms 0 .. n_rooms - 1 as SceneFun3D visits under ``root`` (visit ids
    100000 + index, so two seeds need two roots); returns the visit ids. Rooms are
    independent, so ``workers`` processes (default: one per CPU) give the same files."""
    jobs = [(str(root), i, seed, tuple(size), overwrite) for i in range(n_rooms)]
    workers = min(n_rooms, workers or os.cpu_count() or 1)
    if workers <= 1:
        return [_write_one(j) for j in jobs]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_write_one, jobs))
