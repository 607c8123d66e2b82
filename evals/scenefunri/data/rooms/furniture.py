"""Furniture groups along the walls, each with its functional parts, its occluder and its
task descriptions, and ``make_room``, which places them."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .....renderers.rooms3d import WALLS, WHITE, RoomLayout, drawer_spans, wall_frame
from .plan import (
    CABLE_OFF,
    DARK_GREY,
    FABRICS,
    FLOOR_COLORS,
    HANDLES,
    METAL_TAP,
    PLATES,
    WALL_COLORS,
    WOODS,
    Plan,
    armchair,
    cable,
    coat_rack,
    knob,
    plant,
    socket,
)


def _bed_group(p: Plan):
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
            knob(p, f"bedside_knob_{tag}", wall, s, 0.07 + td + 0.002, (z0 + z1) / 2,
                  table.name, knob_c)
            ss, sz = s + p.u(-0.5, 0.5) * (tw - 0.24), p.u(0.22, 0.32)
            sock = socket(p, f"socket_{tag}", wall, ss, sz)
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
            cable(p, f"cable_{tag}", path, col, wall, parent=ref.name)
            refs = (ref.name, table.name) if tag == "lamp" else (table.name, ref.name)
            p.task(f"{tag}_socket", sock.name, table.name, refs)
        if p.coin(0.4):
            p.task("bedside_drawer", "bedside_knob_lamp", None, ("lamp", "bedside_table_lamp"))

    return width, build


def _cabinet_group(p: Plan, near: str):
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
            knob(p, f"cabinet_knob_{k}", wall, s, cd + 0.002, (z0 + z1) / 2, cab.name, knob_c)
        bottom = f"cabinet_knob_{len(spans) - 1}"
        if occluded:
            # a low armchair: the lowest drawers hide, the upper ones show the pattern
            armchair(p, "cabinet_armchair", wall, s + p.u(-0.08, 0.08), cd + p.u(0.03, 0.12),
                      p.u(-12, 12), height=(0.72, 0.82))
        p.task("cabinet_knob", bottom, "cabinet_armchair" if occluded else None, (cab.name,),
               near=near)
        if p.coin(0.4):
            p.task("top_drawer", "cabinet_knob_0", None, (cab.name,))

    return width, build


def _door_group(p: Plan) -> tuple[float, Callable[[str, float], None]]:
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
            plant(p, "door_plant", wall, ss + hs * p.u(-0.03, 0.06), p.u(0.28, 0.36),
                   p.u(1.45, 1.7), sz)
            p.task("door_switch", switch.name, "door_plant", refs)
        else:
            p.task("door_switch", switch.name, None, refs)
        if variant in ("coats", "both"):
            hs_ = p.along(wall, hc)
            coat_rack(p, "coat_rack", wall, hs_ - lever * p.u(0.0, 0.12), p.u(0.3, 0.38))
            p.task("door_handle", "door_handle", "coat_rack", refs[::-1])
        elif variant == "plant" and p.coin(0.5):
            p.task("door_handle", "door_handle", None, refs[::-1])

    return width, build


def _window_group(p: Plan) -> tuple[float, Callable[[str, float], None]]:
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
            armchair(p, "radiator_armchair", wall, vsx - vs * p.u(-0.05, 0.15),
                      0.14 + p.u(0.1, 0.25), p.u(-15, 15))
        p.task("radiator_valve", "radiator_valve", "radiator_armchair" if arm else None,
               (rad.name, win.name))
        p.task("window_handle", "window_handle", "curtain_hidden" if curtain else None,
               (win.name,))

    return width, build


def _wardrobe_group(p: Plan):
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


def _vanity_group(p: Plan):
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


def _desk_group(p: Plan):
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
            knob(p, f"desk_knob_{k}", wall, pk, 0.05 + d - 0.018, (z0 + z1) / 2, desk.name, kc)
        ss = s - ps * p.u(0.0, 0.3)
        sock = socket(p, "socket_desk", wall, ss, p.u(0.25, 0.4), "plug_in")
        ls = s - ps * p.u(0.0, 0.25)
        lap = p.add("laptop", "laptop", wall, ls, 0.05 + p.u(0.15, 0.25), h, (0.33, 0.29, 0.235),
                    p.u(-10, 10), color=p.tint([(0.75, 0.76, 0.78), (0.3, 0.3, 0.32)]),
                    label="laptop", params={"open_deg": p.u(100, 115)})
        cs = p.along(wall, lap.center) - ps * 0.19
        coff = float(np.dot(np.asarray(lap.center[:2]) - p.point(wall, 0, 0),
                            wall_frame(wall, p.W, p.D)[2]))
        path = [p.point(wall, cs, coff, h + 0.004), p.point(wall, cs, 0.045, h + 0.004),
                p.point(wall, cs, 0.045, 0.1), p.point(wall, ss + 0.2 * ps, 0.045, 0.1)]
        cable(p, "cable_laptop", path, DARK_GREY, wall, parent=lap.name)
        p.task("laptop_socket", sock.name, desk.name, (lap.name, desk.name))
        if chair:
            p.add("office_chair", "office_chair", wall, pk + p.u(-0.05, 0.05),
                  0.05 + d + p.u(0.0, 0.1), 0.0, (0.5, 0.52, p.u(0.96, 1.05)), 180 + p.u(-8, 8),
                  color=p.tint(FABRICS + [DARK_GREY]), label="office chair", solid=True)
        p.task("desk_knob", "desk_knob_0", "office_chair" if chair else None, (desk.name,))

    return width, build


def _tv_group(p: Plan):
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
        sock = socket(p, "socket_tv", wall, ss, sz)
        cs = s + sg * 0.15
        path = [p.point(wall, cs, 0.07 + d / 2 - 0.03, h + 0.25),
                p.point(wall, cs, CABLE_OFF, h + 0.25), p.point(wall, cs, CABLE_OFF, sz),
                p.point(wall, ss, CABLE_OFF, sz)]
        cable(p, "cable_tv", path, DARK_GREY, wall, parent=tv.name)
        p.task("tv_socket", sock.name, stand.name, (tv.name,))

    return width, build


def _floor_lamp_group(p: Plan):
    """An armchair with a floor lamp beside it; the lamp's foot switch and its socket lie
    behind the armchair, the cable leading there along the floor."""
    fs = -1 if p.coin() else 1
    width = 0.9 + 0.75

    def build(wall: str, s0: float) -> None:
        sa = s0 + (0.5 if fs > 0 else width - 0.5)
        arm = armchair(p, "lamp_armchair", wall, sa, p.u(0.3, 0.38), p.u(-8, 8))
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
        sock = socket(p, "socket_floor_lamp", wall, ss, sz)
        z = 0.006
        path = [p.point(wall, lamp_s, 0.32, z), p.point(wall, lamp_s, sw_off, z),
                p.point(wall, ss, sw_off, z), p.point(wall, ss, CABLE_OFF, z),
                p.point(wall, ss, CABLE_OFF, sz)]
        cable(p, "cable_floor_lamp", path, DARK_GREY, wall, parent=lamp.name)
        p.task("floor_lamp_switch", "foot_switch", arm.name, (lamp.name,))
        p.task("floor_lamp_socket", sock.name, arm.name, (lamp.name,))

    return width, build


def make_room(index: int, seed: int = 0) -> RoomLayout:
    """A furnished room; the same (index, seed) gives the same layout."""
    p = Plan(index, seed)
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


def _decorate(p: Plan, bed_wall: str) -> None:
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

