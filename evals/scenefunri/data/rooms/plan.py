"""The room being laid out (``Plan``): seeded draws, walls, placement of groups, and the
small parts every group uses (sockets, cables, knobs, armchairs, plants, coat racks)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .....renderers.rooms3d import WALLS, Item, Task, wall_frame

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


DARK_GREY = (0.18, 0.18, 0.2)
METAL_TAP = (0.75, 0.76, 0.78)
CABLE_OFF = 0.055  # cables run down behind furniture this far from the wall


class Plan:
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
        return _triple(min(1.0, c * k) for c, k in zip(base, f, strict=True))

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
        it = Item(name=name, kind=kind, center=_triple(center, 4),
                  size=_triple(size, 4), yaw_deg=round(float(yaw), 3),
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
              first: Sequence[tuple[str, float]] = (), tries: int = 12) -> tuple[str, float] | None:
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


def socket(p: Plan, name: str, wall: str, s: float, z: float,
            affordance: str = "unplug") -> Item:
    """A wall socket centred at (s, z); single or double."""
    w = 0.155 if p.coin() else 0.085
    return p.add("socket", name, wall, s, 0.0, z - 0.0425, (w, 0.012, 0.085),
                 color=p.pick(PLATES), label="socket", affordance=affordance,
                 parent=f"wall_{wall}")


def cable(p: Plan, name: str, path, color, wall: str | None = None,
           parent: str | None = None) -> Item:
    """A cable through world points (axis-aligned segments); ``wall``: a plug at the end,
    pushed towards that wall."""
    pts = np.asarray(path, float)
    lo, hi = pts.min(axis=0) - 0.03, pts.max(axis=0) + 0.03
    params: dict[str, Any] = {"path": tuple(tuple(round(float(v), 4) for v in q) for q in pts)}
    if wall is not None:
        inward = wall_frame(wall, p.W, p.D)[2]
        params.update(plug=True, plug_dir=(float(-inward[0]), float(-inward[1])))
    return p.add_world("cable", name, (lo + hi) / 2, hi - lo, 0.0, color=color, label="cable",
                       parent=parent, params=params)


def knob(p: Plan, name: str, wall: str, s: float, off: float, zc: float, parent: str,
          color) -> Item:
    """A drawer knob whose back touches a front face ``off`` from the wall."""
    return p.add("knob", name, wall, s, off, zc - 0.03, (0.06, 0.05, 0.06), color=color,
                 label="knob", affordance="pinch_pull", parent=parent)


def armchair(p: Plan, name: str, wall: str, s: float, off: float, yaw_rel: float = 0.0,
              color=None, height=(0.88, 0.98)) -> Item:
    size = (p.u(0.8, 0.9), p.u(0.8, 0.88), p.u(*height))
    return p.add("armchair", name, wall, s, off, 0.0, size, yaw_rel, color=color or p.tint(FABRICS),
                 label="armchair", solid=True)


def plant(p: Plan, name: str, wall: str, s: float, off: float, h: float, dense_z: float) -> Item:
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


def coat_rack(p: Plan, name: str, wall: str, s: float, off: float) -> Item:
    coats = tuple((round(a, 1), p.u(0.75, 0.95), p.tint(FABRICS + [DARK_GREY]))
                  for a in (p.u(-120, -60), p.u(-20, 20), p.u(60, 120)))
    return p.add("coat_rack", name, wall, s, off, 0.0, (0.55, 0.55, p.u(1.75, 1.85)), centred=True,
                 color=(0.3, 0.22, 0.16), label="coat rack", solid=True, params={"coats": coats})


def _triple(values: Iterable[Any], digits: int = 3) -> tuple[float, float, float]:
    """Three numbers rounded to ``digits`` places (a colour, a centre, a size)."""
    a, b, c = (round(float(v), digits) for v in values)
    return a, b, c
