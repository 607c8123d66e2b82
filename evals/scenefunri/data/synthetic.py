"""A small, deterministic, offline stand-in for SceneFunRI built from flat synthetic rooms.

Each instance names a visible reference object and asks for a functional part (socket, switch,
knob, valve, handle) that is drawn and then fully covered by a piece of furniture in front of it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

from ....renderers.flat_rooms import Box, Layout, Piece, draw_room, drawer_knobs

AFFORDANCES = ("rotate", "key_press", "tip_push", "hook_pull", "pinch_pull", "hook_turn",
               "foot_push", "plug_in", "unplug")
WALLS = [(226, 220, 204), (214, 224, 230), (232, 214, 208), (218, 228, 214), (236, 232, 224)]
FLOORS = [(168, 128, 92), (142, 106, 78), (190, 160, 120), (150, 150, 148)]
WOODS = [(150, 105, 70), (120, 84, 58), (196, 160, 118), (232, 228, 220), (96, 74, 62)]
FABRICS = [(92, 120, 168), (170, 80, 80), (96, 140, 110), (200, 170, 100), (130, 110, 150)]
PLATE = (246, 246, 240)


@dataclass(frozen=True)
class Instance:
    """One generated item: the room, the hidden target and the piece that hides it."""

    id: str
    instruction: str
    template: str
    affordance: str
    reference: str
    target: Piece
    occluder: Piece
    layout: Layout

    @property
    def box(self) -> Box:
        return self.target.box

    def record(self) -> dict:
        meta = {"synthetic": True, "template": self.template, "affordance": self.affordance,
                "reference": self.reference, "occluder": self.occluder.kind}
        return {"id": self.id, "image": f"images/{self.id}.png", "instruction": self.instruction,
                "box": list(self.box), "meta": meta}


@dataclass(frozen=True)
class _Geo:
    """Pixels per metre ``m`` on the back wall and ``h``, the y of the wall/floor line."""

    m: float
    h: int

    def x(self, metres: float) -> int:
        return round(metres * self.m)

    def up(self, metres: float) -> int:
        """y of a point this high on the back wall."""
        return round(self.h - metres * self.m)

    def floor(self, depth: float) -> int:
        """y where something ``depth`` metres in front of the wall meets the floor."""
        return round(self.h + 0.35 * depth * self.m)

    def stand(self, kind, x, w, depth, height, colour, flip=False) -> Piece:
        """A piece standing on the floor ``depth`` metres out, ``x``/``w``/``height`` in metres."""
        bottom = self.floor(depth)
        return Piece(kind, (self.x(x), bottom - self.x(height), self.x(x + w), bottom), colour, flip)


def _tint(rng: random.Random, palette: list) -> tuple[int, int, int]:
    return tuple(max(0, min(255, c + rng.randint(-12, 12))) for c in rng.choice(palette))


def _small(kind: str, cx: int, cy: int, w: int, h: int, colour, flip=False) -> Piece:
    # Real sockets and knobs can be tiny at this scale; keep every target box >= 12 px a side.
    w, h = max(12, w), max(12, h)
    return Piece(kind, (cx - w // 2, cy - h // 2, cx - w // 2 + w, cy - h // 2 + h), colour, flip)


def _bed_and(rng, g, w_side):
    """A bed with a ``w_side``-wide slot beside it; returns the bed and the slot's x (metres)."""
    bed_w, left = rng.uniform(1.4, 1.9), rng.random() < 0.5
    bed = g.stand("bed", w_side + 0.05 if left else 0, bed_w, 2.0, rng.uniform(1.1, 1.35),
                  _tint(rng, FABRICS))
    return bed, 0 if left else bed_w + 0.05


def _chair_over(rng, g, t: Box, min_h: float) -> Piece:
    """An armchair at least ``min_h`` m tall whose solid middle covers target box ``t``."""
    cw, cx = g.x(rng.uniform(0.8, 0.95)), (t[0] + t[2]) // 2 + g.x(rng.uniform(-0.08, 0.08))
    bottom = g.floor(rng.uniform(1.0, 1.4))
    top = min(t[1] - g.x(rng.uniform(0.1, 0.25)), bottom - g.x(min_h))
    return Piece("armchair", (cx - cw // 2, top, cx + cw // 2, bottom), _tint(rng, FABRICS))


def _unplug_lamp(rng, g):
    tw = rng.uniform(0.42, 0.58)
    bed, tx = _bed_and(rng, g, tw)
    table = g.stand("bedside_table", tx, tw, 0.4, rng.uniform(0.5, 0.62), _tint(rng, WOODS))
    lx = tx + tw / 2 + rng.uniform(-0.06, 0.06)
    lamp = Piece("lamp", (g.x(lx - 0.15), table.box[1] - g.x(0.45), g.x(lx + 0.15), table.box[1] + 2),
                 _tint(rng, FABRICS))
    socket = _small("socket", g.x(tx + tw * rng.uniform(0.3, 0.7)), g.up(rng.uniform(0.18, 0.28)),
                    g.x(0.13), g.x(0.09), PLATE)
    return [bed, socket, table, lamp], socket, table, "lamp"


def _cabinet_drawer(rng, g):
    cw = rng.uniform(0.7, 0.9)
    bed, cx = _bed_and(rng, g, cw)
    cab = g.stand("cabinet", cx, cw, 0.45, rng.uniform(0.8, 1.0), _tint(rng, WOODS))
    knob = Piece("knob", drawer_knobs(cab.box)[-1], (70, 60, 50))
    chair = _chair_over(rng, g, knob.box, 0.6)  # low, so upper drawers show
    return [bed, cab, knob, chair], knob, chair, "cabinet"


def _light_by_door(rng, g):
    dw, lw, right = rng.uniform(0.9, 1.0), rng.uniform(0.5, 0.62), rng.random() < 0.5
    dx = 0 if right else lw
    door = Piece("doorway", (g.x(dx), g.up(rng.uniform(2.05, 2.2)), g.x(dx + dw), g.floor(0.05)),
                 (235, 232, 225))
    hinge = dx + (0.93 * dw if right else 0.07 * dw)
    x1, x2 = (hinge, hinge + lw) if right else (hinge - lw, hinge)
    leaf = Piece("door_leaf", (g.x(x1), door.box[1] - g.x(0.05), g.x(x2), g.floor(0.6)),
                 _tint(rng, WOODS), flip=not right)
    gap = rng.uniform(0.14, 0.24)
    sx = dx + dw + gap if right else dx - gap
    switch = _small("switch", g.x(sx), g.up(rng.uniform(1.0, 1.2)), g.x(0.09), g.x(0.12), PLATE)
    return [door, switch, leaf], switch, leaf, "door"


def _radiator_valve(rng, g):
    rw, ww, right = rng.uniform(0.9, 1.3), rng.uniform(0.9, 1.2), rng.random() < 0.5
    rx = 0.15 if right else 0.0
    rad = Piece("radiator", (g.x(rx), g.up(rng.uniform(0.5, 0.6)), g.x(rx + rw), g.up(0.1)),
                (236, 236, 232))
    wx = rx + (rw - ww) / 2
    window = Piece("window", (g.x(wx), g.up(2.0), g.x(wx + ww), g.up(0.85)), (240, 240, 236))
    vx = rx + rw + 0.06 if right else rx - 0.06
    valve = _small("valve", g.x(vx), rad.box[1] + g.x(0.08), g.x(0.1), g.x(0.14), (200, 60, 60))
    chair = _chair_over(rng, g, valve.box, 0.8)
    return [window, rad, valve, chair], valve, chair, "radiator"


def _close_door(rng, g):
    dw, latch_left = rng.uniform(0.85, 1.0), rng.random() < 0.5
    door = Piece("door", (0, g.up(rng.uniform(2.0, 2.15)), g.x(dw), g.floor(0.05)),
                 _tint(rng, WOODS), flip=latch_left)
    hx = g.x(dw * (0.18 if latch_left else 0.82))
    handle = _small("handle", hx, g.up(rng.uniform(0.95, 1.05)), g.x(0.14), g.x(0.06),
                    (190, 190, 196), flip=latch_left)
    # The plant's dense leaf core (upper 3/8 of its box) is centred on the handle.
    pw, bottom = g.x(rng.uniform(0.6, 0.8)), g.floor(rng.uniform(0.6, 1.0))
    cx, cy = hx + g.x(rng.uniform(-0.05, 0.05)), (handle.box[1] + handle.box[3]) // 2
    top = round((cy + g.x(rng.uniform(-0.06, 0.06)) - 0.375 * bottom) / 0.625)
    plant = Piece("plant", (cx - pw // 2, top, cx + pw // 2, bottom), _tint(rng, [(80, 140, 70)]))
    return [door, handle, plant], handle, plant, "door"


def _plug_laptop(rng, g):
    dw = rng.uniform(1.1, 1.5)
    desk = g.stand("desk", 0, dw, 0.6, rng.uniform(0.72, 0.78), _tint(rng, WOODS),
                   flip=rng.random() < 0.5)
    lx = rng.uniform(0.25, dw - 0.25)
    laptop = Piece("laptop", (g.x(lx - 0.17), desk.box[1] - g.x(0.24), g.x(lx + 0.17), desk.box[1] + 2),
                   (180, 182, 188))
    sx = min(max(lx + rng.uniform(-0.25, 0.25), 0.12 * dw), 0.88 * dw)
    socket = _small("socket", g.x(sx), g.up(rng.uniform(0.2, 0.35)), g.x(0.13), g.x(0.09), PLATE)
    return [socket, desk, laptop], socket, desk, "laptop"


TEMPLATES = {  # name: (builder, instruction, affordance)
    "unplug_lamp": (_unplug_lamp, "Unplug the lamp on the bedside table", "unplug"),
    "cabinet_drawer": (_cabinet_drawer, "Open the bottom drawer of the cabinet next to the bed",
                       "pinch_pull"),
    "light_by_door": (_light_by_door, "Turn on the light by the door", "key_press"),
    "radiator_valve": (_radiator_valve, "Turn the radiator valve", "rotate"),
    "close_door": (_close_door, "Close the door", "hook_pull"),
    "plug_laptop": (_plug_laptop, "Plug in the laptop on the desk", "plug_in"),
}
# kind: (width range m, height range m, depth m); windows hang on the wall instead.
DECOR = {"plant": ((0.45, 0.65), (1.0, 1.5), 0.5), "wardrobe": ((0.9, 1.2), (1.9, 2.1), 0.6),
         "window": ((0.9, 1.2), (1.1, 1.1), 0.0), "washbasin": ((0.5, 0.6), (1.5, 1.6), 0.45),
         "cabinet": ((0.6, 0.9), (0.8, 1.0), 0.45)}


def _decor(rng, g, kind, x) -> Piece:
    (w0, w1), (h0, h1), depth = DECOR[kind]
    w = rng.uniform(w0, w1)
    if kind == "window":
        return Piece(kind, (g.x(x), g.up(2.0), g.x(x + w), g.up(0.9)), (240, 240, 236))
    pal = {"plant": [(80, 140, 70)], "washbasin": [(244, 244, 240)]}.get(kind, WOODS)
    return g.stand(kind, x, w, depth, rng.uniform(h0, h1), _tint(rng, pal))


def _instance(i: int, template: str, rng: random.Random, size: tuple[int, int]) -> Instance:
    width, height = size
    horizon = round(height * rng.uniform(0.58, 0.66))
    g = _Geo(min(horizon / 2.4, width / 5.5), horizon)
    build, instruction, affordance = TEMPLATES[template]
    pieces, target, occluder, reference = build(rng, g)
    # Pieces get copied when shifted, so remember the target and occluder by position.
    ti, oi = (next(k for k, p in enumerate(pieces) if p is q) for q in (target, occluder))
    lo, hi, gap = min(p.box[0] for p in pieces), max(p.box[2] for p in pieces), g.x(0.15)
    dx = rng.randint(gap - lo, width - gap - hi)
    pieces = [replace(p, box=(p.box[0] + dx, p.box[1], p.box[2] + dx, p.box[3])) for p in pieces]
    # Decor goes on the wider free side, never repeating a kind the instruction might refer to.
    left = lo + dx > width - (hi + dx)
    x, end = (gap / g.m, (lo + dx - gap) / g.m) if left else ((hi + dx + gap) / g.m, (width - gap) / g.m)
    decor = []
    for kind in rng.sample(sorted(set(DECOR) - {p.kind for p in pieces}), 2):
        piece = _decor(rng, g, kind, x + rng.uniform(0, 0.3))
        if piece.box[2] <= g.x(end):
            decor.append(piece)
            x = piece.box[2] / g.m + 0.15
    layout = Layout(_tint(rng, WALLS), _tint(rng, FLOORS), horizon, tuple(decor + pieces))
    return Instance(f"syn-{i:03d}", instruction, template, affordance, reference,
                    pieces[ti], pieces[oi], layout)


def _check(inst: Instance, size: tuple[int, int]) -> None:
    x1, y1, x2, y2 = inst.box
    o = inst.occluder.box
    inside = min(x1, y1) >= 0 and x2 <= size[0] and y2 <= size[1]
    sized = min(x2 - x1, y2 - y1) >= 10 and (x2 - x1) * (y2 - y1) <= 0.05 * size[0] * size[1]
    covered = o[0] <= x1 and o[1] <= y1 and x2 <= o[2] and y2 <= o[3]
    if not (inside and sized and covered):
        raise ValueError(f"bad target box {inst.box} (occluder {o}) in {inst.id}")


def make_layouts(n: int = 24, seed: int = 0, size: tuple[int, int] = (640, 480)) -> list[Instance]:
    """``n`` instances; templates rotate in a seed-dependent order so every one appears."""
    order = sorted(TEMPLATES)
    random.Random(seed).shuffle(order)
    out = []
    for i in range(n):
        # A per-instance generator keeps instance i the same whatever n is.
        inst = _instance(i, order[i % len(order)], random.Random(f"{seed}/{i}"), size)
        _check(inst, size)
        out.append(inst)
    return out


def write_synthetic_set(out_dir: str | Path, n: int = 24, seed: int = 0,
                        size: tuple[int, int] = (640, 480)) -> Path:
    """Write ``images/<id>.png`` and ``instances.jsonl`` under ``out_dir``; return the jsonl path."""
    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for inst in make_layouts(n, seed, size):
        draw_room(inst.layout, size).save(out / "images" / f"{inst.id}.png", format="PNG")
        lines.append(json.dumps(inst.record()) + "\n")
    path = out / "instances.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path
