"""Flat, frontal room drawings: a back wall, a floor and furniture as shaded shapes.

Everything is a pure function of the layout, so the same layout always gives the same pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageDraw

RGB = tuple[int, int, int]
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Piece:
    """One object; ``kind`` picks the drawing, ``box`` is (x1, y1, x2, y2) in pixels."""

    kind: str
    box: Box
    colour: RGB
    flip: bool = False  # mirrors asymmetric details (door hinge, desk pedestal)


@dataclass(frozen=True)
class Layout:
    """A room: wall and floor colours, the y of the wall/floor line, pieces back to front."""

    wall: RGB
    floor: RGB
    horizon: int
    pieces: tuple[Piece, ...] = ()


def shade(c: RGB, f: float) -> RGB:
    return tuple(max(0, min(255, round(v * f))) for v in c)  # type: ignore[return-value]


def sub(box: Box, fx1: float, fy1: float, fx2: float, fy2: float, flip: bool = False) -> Box:
    """The part of ``box`` given in fractions of its size, optionally mirrored left-right."""
    if flip:
        fx1, fx2 = 1 - fx2, 1 - fx1
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    return (round(x1 + fx1 * w), round(y1 + fy1 * h), round(x1 + fx2 * w), round(y1 + fy2 * h))


def drawer_knobs(box: Box, n: int = 3) -> list[Box]:
    """Knob boxes of an ``n``-drawer cabinet drawn in ``box``, top to bottom."""
    r = max(6, round(0.04 * (box[2] - box[0])))
    cx = (box[0] + box[2]) // 2
    out = []
    for i in range(n):
        cy = round(box[1] + (0.06 + 0.88 * (i + 0.5) / n) * (box[3] - box[1]))
        out.append((cx - r, cy - r, cx + r, cy + r))
    return out


WHITE, DARK, METAL = (240, 240, 236), (38, 38, 44), (180, 180, 186)

# Each kind is a list of (shape, fractions of the box, colour[, extra]) drawn in order. A float
# colour shades the piece's own colour; "panel" is a filled, outlined rectangle (extra: corner
# radius in px) and "drawers" is n drawer fronts with knobs (extra: n).
SHAPES: dict[str, list[tuple]] = {
    "bed": [("panel", (0, 0, 1, 0.5), 0.55, 6), ("panel", (0.02, 0.33, 0.98, 0.56), WHITE),
            ("panel", (0.06, 0.27, 0.47, 0.42), (248, 247, 242), 8),
            ("panel", (0.53, 0.27, 0.94, 0.42), (248, 247, 242), 8),
            ("poly", (0.04, 0.45, 0.96, 0.45, 1, 0.95, 0, 0.95), 1.0),
            ("line", (0.01, 0.6, 0.99, 0.6), 1.2, 3),
            ("fill", (0.02, 0.95, 0.07, 1), 0.4), ("fill", (0.93, 0.95, 0.98, 1), 0.4)],
    "bedside_table": [("panel", (0.04, 0.08, 0.96, 0.9), 1.0), ("panel", (0, 0, 1, 0.08), 1.1),
                      ("drawers", (0.04, 0.08, 0.96, 0.9), 0.92, 2),
                      ("fill", (0.06, 0.9, 0.16, 1), 0.5), ("fill", (0.84, 0.9, 0.94, 1), 0.5)],
    "lamp": [("fill", (0.47, 0.4, 0.53, 0.9), (90, 90, 90)), ("oval", (0.25, 0.86, 0.75, 1), 0.6),
             ("poly", (0.25, 0, 0.75, 0, 1, 0.45, 0, 0.45), 1.0)],
    "cabinet": [("panel", (0.03, 0.06, 0.97, 0.94), 1.0), ("panel", (0, 0, 1, 0.06), 1.1),
                ("drawers", (0, 0, 1, 1), 0.93, 3),
                ("fill", (0.05, 0.94, 0.15, 1), 0.5), ("fill", (0.85, 0.94, 0.95, 1), 0.5)],
    "wardrobe": [("panel", (0, 0, 1, 1), 1.0), ("panel", (0, 0, 1, 0.04), 1.1),
                 ("panel", (0.04, 0.06, 0.495, 0.94), 0.95), ("panel", (0.505, 0.06, 0.96, 0.94), 0.95),
                 ("fill", (0.44, 0.42, 0.47, 0.56), 0.45), ("fill", (0.53, 0.42, 0.56, 0.56), 0.45)],
    "desk": [("panel", (0.03, 0.07, 0.97, 0.62), 0.72), ("fill", (0.03, 0.07, 0.09, 1), 0.6),
             ("panel", (0.6, 0.07, 0.97, 1), 0.9), ("drawers", (0.6, 0.07, 0.97, 1), 0.85, 3),
             ("panel", (0, 0, 1, 0.07), 1.1)],
    "laptop": [("panel", (0.1, 0, 0.9, 0.88), 0.7, 3), ("fill", (0.15, 0.07, 0.85, 0.8), (40, 60, 90)),
               ("panel", (0, 0.86, 1, 1), 1.0)],
    "door": [("panel", (0, 0, 1, 1), WHITE), ("panel", (0.07, 0.04, 0.93, 1), 1.0),
             ("panel", (0.19, 0.08, 0.81, 0.47), 0.93), ("panel", (0.19, 0.55, 0.81, 0.94), 0.93),
             ("fill", (0.91, 0.04, 0.93, 1), DARK)],  # ajar: a dark gap on the latch side
    "doorway": [("panel", (0, 0, 1, 1), WHITE), ("fill", (0.07, 0.04, 0.93, 1), DARK),
                ("fill", (0.07, 0.85, 0.93, 1), (70, 64, 58))],
    # An open leaf seen edge-on: its free edge is nearer the camera, so taller.
    "door_leaf": [("poly", (0, 1 / 30, 1, 0, 1, 1, 0, 11 / 12), 1.0),
                  ("line", (0.78, 0.46, 0.9, 0.46), (60, 60, 60), 4)],
    "washbasin": [("panel", (0.15, 0, 0.85, 0.35), (200, 215, 225), 4),
                  ("fill", (0.45, 0.38, 0.55, 0.47), METAL),
                  ("panel", (0.35, 0.55, 0.65, 1), 1.0), ("panel", (0, 0.45, 1, 0.6), 1.0, 10)],
    "radiator": [("panel", (0, 0, 1, 1), 1.0, 3),
                 *[("line", (i / 10, 0.06, i / 10, 0.94), 0.8, 1) for i in range(1, 10)]],
    "armchair": [("panel", (0.12, 0, 0.88, 0.7), 1.0, 10), ("panel", (0.04, 0.68, 0.96, 0.94), 0.8),
                 ("panel", (0.15, 0.5, 0.85, 0.74), 1.08, 6),
                 ("panel", (0, 0.3, 0.18, 0.9), 0.9, 8), ("panel", (0.82, 0.3, 1, 0.9), 0.9, 8),
                 ("fill", (0.08, 0.94, 0.14, 1), (60, 45, 35)),
                 ("fill", (0.86, 0.94, 0.92, 1), (60, 45, 35))],
    # The first leaf oval is the dense core that hides things (see synthetic.py).
    "plant": [("poly", (0.28, 0.78, 0.72, 0.78, 0.65, 1, 0.35, 1), (176, 96, 62)),
              ("oval", (0.1, 0.05, 0.9, 0.7), 0.8), ("oval", (0, 0.2, 0.6, 0.75), 0.9),
              ("oval", (0.4, 0.15, 1, 0.72), 1.0), ("oval", (0.2, 0, 0.7, 0.45), 1.1)],
    "window": [("panel", (0, 0, 1, 1), WHITE), ("fill", (0.06, 0.05, 0.94, 0.9), (168, 206, 235)),
               ("line", (0.5, 0.05, 0.5, 0.9), WHITE, 4), ("line", (0.06, 0.45, 0.94, 0.45), WHITE, 4),
               ("panel", (-0.04, 0.9, 1.04, 1), (228, 228, 222))],
    "socket": [("panel", (0, 0, 1, 1), 1.0, 2), ("oval", (0.3, 0.4, 0.42, 0.6), (50, 50, 50)),
               ("oval", (0.6, 0.4, 0.72, 0.6), (50, 50, 50))],
    "switch": [("panel", (0, 0, 1, 1), 1.0, 2), ("panel", (0.3, 0.25, 0.7, 0.75), 0.9)],
    "knob": [("oval", (0, 0, 1, 1), 1.0)],
    "panel": [("panel", (0, 0, 1, 1), 1.0)],
    "valve": [("fill", (0.4, 0.5, 0.6, 1), METAL), ("oval", (0.1, 0, 0.9, 0.7), 1.0)],
    "handle": [("oval", (0.6, 0.25, 1, 0.75), 1.0), ("fill", (0, 0.38, 0.8, 0.62), 1.0)],
}


def _draw_piece(d: ImageDraw.ImageDraw, p: Piece) -> None:
    x1, y1, x2, y2 = p.box
    for shape, fr, col, *extra in SHAPES[p.kind]:
        c = shade(p.colour, col) if isinstance(col, float) else col
        if shape == "poly":
            xs = [1 - f if p.flip else f for f in fr[::2]]
            pts = [(x1 + fx * (x2 - x1), y1 + fy * (y2 - y1)) for fx, fy in zip(xs, fr[1::2], strict=True)]
            d.polygon(pts, fill=c, outline=shade(c, 0.6))
            continue
        b = sub(p.box, fr[0], fr[1], fr[2], fr[3], p.flip)
        if shape == "panel":
            d.rounded_rectangle(b, extra[0] if extra else 0, fill=c, outline=shade(c, 0.6))
            d.line((b[0] + 1, b[1] + 1, b[2] - 1, b[1] + 1), fill=shade(c, 1.15))
        elif shape == "fill":
            d.rectangle(b, fill=c)
        elif shape == "oval":
            d.ellipse(b, fill=c, outline=shade(c, 0.6))
        elif shape == "line":
            d.line(b, fill=c, width=extra[0])
        elif shape == "drawers":
            n = extra[0]
            for i in range(n):
                _draw_piece(d, Piece("panel", sub(b, 0.08, 0.06 + 0.88 * (i + 0.06) / n, 0.92,
                                                  0.06 + 0.88 * (i + 0.94) / n), c))
            for k in drawer_knobs(b, n):
                d.ellipse(k, fill=shade(c, 0.5))


def draw_room(layout: Layout, size: tuple[int, int]) -> Image.Image:
    """Draw ``layout`` on a ``size`` (width, height) RGB canvas; later pieces cover earlier."""
    w, h = size
    y0 = layout.horizon
    img = Image.new("RGB", size, layout.wall)
    d = ImageDraw.Draw(img)
    d.rectangle((0, y0, w, h), fill=layout.floor)
    # Boards converge on a point above the floor, which is what makes it read as depth.
    vx, spread = w / 2, w / 14
    for i in range(-8, 9):
        d.line((vx + i * spread, y0, vx + i * spread * 3.2, h), fill=shade(layout.floor, 0.88))
    skirt = max(3, (h - y0) // 25)
    d.rectangle((0, y0 - skirt, w, y0), fill=shade(layout.wall, 1.1), outline=shade(layout.wall, 0.8))
    for p in layout.pieces:
        _draw_piece(d, p)
    return img
