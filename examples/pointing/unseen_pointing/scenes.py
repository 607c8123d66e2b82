"""The pictures: grey screens standing on a floor, a coloured block hidden behind one of
them, other blocks in plain view.

A screen stands on two thin legs, ``GAP`` pixels above the floor, so the hidden block shows
only as a strip of colour under its screen: enough for a careful look to tell which screen
hides it and where along it, never the block's top. Everything is drawn from one seeded
``random.Random`` per picture, so a data set is the same on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

WIDTH, HEIGHT = 320, 240
FLOOR = 196  # the floor's top edge (y)
GAP = 6  # a screen's bottom edge stands this far above the floor
COLOURS = {"red": (214, 48, 49), "blue": (9, 132, 227), "green": (0, 160, 80),
           "yellow": (240, 190, 20), "purple": (142, 68, 173), "orange": (230, 126, 34)}
WALL, GROUND = (236, 231, 220), (196, 170, 130)
SCREEN, LEG = (150, 150, 150), (90, 90, 90)

Box = list[int]  # [x1, y1, x2, y2] in pixels


@dataclass
class Scene:
    """One picture's layout: the screens, the hidden block (``target``, behind
    ``screens[hidden]``) and the blocks in view, each with its colour's name."""

    colour: str
    target: Box
    screens: list[Box]
    hidden: int
    others: list[tuple[str, Box]] = field(default_factory=list)

    @property
    def instruction(self) -> str:
        return (f"A {self.colour} block is hidden behind one of the grey screens. "
                f"Where is the {self.colour} block?")


def layout(rng: random.Random) -> Scene:
    """Two or three screens across the floor, the target behind one of them, and a block of
    another colour in each gap wide enough to hold one (seven times in ten)."""
    k = rng.choice((2, 3))
    widths = [rng.randint(64, 84) for _ in range(k)]
    spare = WIDTH - sum(widths)
    cuts = sorted(rng.uniform(0, spare) for _ in range(k))
    gaps = [b - a for a, b in zip([0.0, *cuts], [*cuts, float(spare)], strict=True)]
    screens, x = [], gaps[0]
    for w, gap in zip(widths, gaps[1:], strict=True):
        h = rng.randint(70, 110)
        screens.append([round(x), FLOOR - GAP - h, round(x) + w, FLOOR - GAP])
        x += w + gap
    colour, *rest = rng.sample(sorted(COLOURS), 3)
    hidden = rng.randrange(k)
    sx1, sy1, sx2, sy2 = screens[hidden]
    bw = rng.randint(20, min(36, sx2 - sx1 - 16))  # clear of the legs, 8 px in from each side
    bh = rng.randint(20, min(40, sy2 - sy1 - 10))  # shorter than the screen: its top hidden
    bx = rng.randint(sx1 + 8, sx2 - 8 - bw)
    scene = Scene(colour, [bx, FLOOR - bh, bx + bw, FLOOR], screens, hidden)
    edges = [0, *(v for s in screens for v in (s[0], s[2])), WIDTH]
    for left, right in zip(edges[::2], edges[1::2], strict=True):
        if right - left >= 30 and rng.random() < 0.7:
            w, h = rng.randint(14, min(28, right - left - 8)), rng.randint(14, 36)
            x = rng.randint(left + 4, right - 4 - w)
            scene.others.append((rng.choice(rest), [x, FLOOR - h, x + w, FLOOR]))
    return scene


def draw(scene: Scene, out: Path) -> None:
    """The scene as a PNG: wall, floor, the blocks, then the screens in front of them."""
    im = Image.new("RGB", (WIDTH, HEIGHT), WALL)
    pen = ImageDraw.Draw(im)
    pen.rectangle([0, FLOOR, WIDTH, HEIGHT], fill=GROUND)
    for colour, box in [(scene.colour, scene.target), *scene.others]:
        pen.rectangle([box[0], box[1], box[2] - 1, box[3] - 1], fill=COLOURS[colour],
                      outline=tuple(v // 2 for v in COLOURS[colour]))
    for x1, y1, x2, y2 in scene.screens:
        pen.rectangle([x1, y1, x2 - 1, y2 - 1], fill=SCREEN, outline=LEG)
        for lx in (x1 + 2, x2 - 6):
            pen.rectangle([lx, y2, lx + 3, FLOOR + 1], fill=LEG)
    im.save(out, format="PNG")
