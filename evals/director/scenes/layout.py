"""Director Task layouts: where the table, cubes, partition and director stand, and the keys.

World frame: metres, z up; the model sits at −y looking across the table, the director sits
at +y facing the model. A layout is drawn by rejection sampling from a seeded generator and
kept only when its answer key is unambiguous with a margin:

- the hidden cube is hidden from the director's eye by the partition even when the cube is
  dilated by ``MARGIN`` (1 cm);
- every other cube is in the director's sight as a whole, even when dilated by ``MARGIN``,
  so no cube is half hidden and "visible" needs no threshold;
- every cube is in the model's sight as a whole (its digit readable is checked on pixels
  by the renderer);
- each cube's edge is at least ``RATIO_MIN`` (1.20) times the next smaller cube's.

"Hidden" means hidden by anything (the partition or another cube); both checkers test it.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import asdict, dataclass, field

import numpy as np

from .geometry import OBox, verdict, visual_angle

TABLE_Z = 0.75  # table top height
TABLE_X = 0.62  # half width (left-right in the model's view)
TABLE_Y = 0.42  # half depth (towards the director)
MARGIN = 0.01
RATIO_MIN = 1.20
PARTITION_THICKNESS = 0.02
MODEL_EYE = (0.0, -1.02, 1.30)
MODEL_TARGET = (0.0, 0.12, 0.86)
MODEL_FOV_Y = 50.0

PALETTE = {
    "red": (0.80, 0.18, 0.16), "blue": (0.16, 0.36, 0.78), "green": (0.20, 0.62, 0.28),
    "yellow": (0.95, 0.80, 0.20), "orange": (0.95, 0.52, 0.12), "purple": (0.52, 0.28, 0.70),
    "teal": (0.10, 0.60, 0.62), "pink": (0.92, 0.50, 0.66),
}
ROLES = ("largest", "middle", "smallest")


class LayoutError(RuntimeError):
    """No valid layout within the attempt budget (a bug or impossible settings)."""


@dataclass
class Block:
    digit: int
    edge: float
    center: tuple[float, float, float]
    yaw_deg: float
    color: str
    visible_to_director: bool = True

    def obox(self, margin: float = 0.0) -> OBox:
        h = self.edge / 2
        return OBox(self.center, (h, h, h), self.yaw_deg).grown(margin)


@dataclass
class Layout:
    id: str
    set: str
    blocks: list[Block]
    partition_center: tuple[float, float, float]
    partition_size: tuple[float, float, float]
    eye: tuple[float, float, float]
    director_x: float
    seed_key: str
    apparent_deg: dict[int, float] = field(default_factory=dict)

    # answer key -------------------------------------------------------------------------
    @property
    def hidden(self) -> Block:
        return next(b for b in self.blocks if not b.visible_to_director)

    @property
    def visible(self) -> list[Block]:
        return [b for b in self.blocks if b.visible_to_director]

    @property
    def director_view(self) -> Block:
        """The largest cube the director sees."""
        return max(self.visible, key=lambda b: b.edge)

    @property
    def largest_digit_visible(self) -> Block | None:
        """The visible cube with the largest digit, when it is not the director-view cube."""
        top = max(self.visible, key=lambda b: b.digit)
        return None if top is self.director_view else top

    @property
    def apparent_size_flag(self) -> bool:
        """Another visible cube looks larger from the director's eye than the director-view
        cube (visual angle 2·atan(e/2d))."""
        dv = self.apparent_deg[self.director_view.digit]
        return any(self.apparent_deg[b.digit] > dv for b in self.visible
                   if b is not self.director_view)

    def partition_box(self, margin: float = 0.0) -> OBox:
        half = tuple(s / 2 for s in self.partition_size)
        return OBox(self.partition_center, half).grown(margin)  # type: ignore[arg-type]

    def occluders_for(self, block: Block, margin: float = 0.0) -> list[OBox]:
        return [self.partition_box()] + [b.obox() for b in self.blocks if b is not block]

    def key(self) -> dict:
        ldv = self.largest_digit_visible
        return {
            "hidden_digit": self.hidden.digit,
            "visible_digits": sorted(b.digit for b in self.visible),
            "director_view_digit": self.director_view.digit,
            "largest_digit_visible": ldv.digit if ldv else None,
            "apparent_size_deg": {str(k): round(v, 4) for k, v in self.apparent_deg.items()},
            "apparent_size_flag": self.apparent_size_flag,
        }

    def record(self) -> dict:
        return {
            "id": self.id, "set": self.set, "eye": list(self.eye),
            "partition": {"center": list(self.partition_center),
                          "size": list(self.partition_size)},
            "blocks": [{**asdict(b), "center": list(b.center)} for b in self.blocks],
            **self.key(),
        }


def director_eye(x: float) -> tuple[float, float, float]:
    """The point between the director's eyes, for a director seated at ``x``."""
    return (x, 0.70, 1.23)


def analytic_visibility(layout: Layout, margin: float = 0.0) -> dict[int, str]:
    """Each cube's verdict from the director's eye (digit → hidden/full/partial/ambiguous)."""
    eye = np.asarray(layout.eye)
    return {b.digit: verdict(eye, b.obox(margin), layout.occluders_for(b))
            for b in layout.blocks}


def _edges(rng: random.Random, n: int) -> list[float]:
    """n edges, ascending, each at least RATIO_MIN times the previous."""
    edges = [rng.uniform(0.055, 0.075)]
    for _ in range(n - 1):
        edges.append(edges[-1] * rng.uniform(RATIO_MIN + 0.02, 1.42))
    return edges


def _partition_for(eye: np.ndarray, hidden: Block) -> tuple[tuple, tuple] | None:
    """The smallest upright panel (plus a margin) that hides the dilated cube from the eye."""
    corners = hidden.obox(MARGIN).corners()
    reach = hidden.edge / 2 * math.sqrt(2) + MARGIN
    gap = 0.035
    y_near = hidden.center[1] + reach + gap  # face towards the cube
    y_far = y_near + PARTITION_THICKNESS  # face towards the director
    t = (y_far - eye[1]) / (corners[:, 1] - eye[1])
    hits = eye + t[:, None] * (corners - eye)
    pad = 0.025
    x1, x2 = hits[:, 0].min() - pad, hits[:, 0].max() + pad
    top = hits[:, 2].max() + pad
    if top - TABLE_Z > 0.42 or x2 - x1 > 0.5:
        return None
    center = ((x1 + x2) / 2, (y_near + y_far) / 2, (TABLE_Z + top) / 2)
    size = (x2 - x1, PARTITION_THICKNESS, top - TABLE_Z)
    return center, size


def _fits_table(x: float, y: float, reach: float) -> bool:
    return abs(x) + reach < TABLE_X - 0.03 and abs(y) + reach < TABLE_Y - 0.03


def _apart(blocks: list[Block], x: float, y: float, reach: float) -> bool:
    return all(math.hypot(b.center[0] - x, b.center[1] - y) > reach + b.edge / 2 * math.sqrt(2)
               + 0.04 for b in blocks)


def _try_layout(rng: random.Random, n: int, role: str, digits: list[int], colors: list[str],
                sid: str, set_name: str, seed_key: str) -> Layout | None:
    edges = _edges(rng, n)
    hidden_index = {"largest": n - 1, "middle": n // 2, "smallest": 0}[role]
    director_x = rng.uniform(-0.12, 0.12)
    eye = np.asarray(director_eye(director_x))
    yaw = lambda: rng.uniform(-25, 25)  # noqa: E731
    he = edges[hidden_index]
    hx, hy = rng.uniform(-0.32, 0.32), rng.uniform(-0.22, 0.02)
    hidden = Block(digits[hidden_index], he, (hx, hy, TABLE_Z + he / 2), yaw(),
                   colors[hidden_index], visible_to_director=False)
    part = _partition_for(eye, hidden)
    if part is None:
        return None
    blocks = [hidden]
    pbox = OBox(part[0], tuple(s / 2 for s in part[1]))  # type: ignore[arg-type]
    for i, e in enumerate(edges):
        if i == hidden_index:
            continue
        for _ in range(60):
            reach = e / 2 * math.sqrt(2)
            x, y = rng.uniform(-0.5, 0.5), rng.uniform(-0.3, 0.28)
            if not _fits_table(x, y, reach) or not _apart(blocks, x, y, reach):
                continue
            # keep clear of the partition's footprint
            if abs(x - pbox.center[0]) < pbox.half[0] + reach + 0.02 and \
                    abs(y - pbox.center[1]) < pbox.half[1] + reach + 0.02:
                continue
            blocks.append(Block(digits[i], e, (x, y, TABLE_Z + e / 2), yaw(), colors[i]))
            break
        else:
            return None
    layout = Layout(sid, set_name, sorted(blocks, key=lambda b: b.edge), part[0], part[1],
                    tuple(eye.tolist()), director_x, seed_key)  # type: ignore[arg-type]
    if not _robust(layout):
        return None
    layout.apparent_deg = {b.digit: visual_angle(b.edge, eye, np.asarray(b.center))
                           for b in layout.blocks}
    return layout


def _robust(layout: Layout) -> bool:
    """The margin rule from the director's eye, and whole cubes in the model's sight."""
    eye = np.asarray(layout.eye)
    for b in layout.blocks:
        if b.visible_to_director:
            # in sight as a whole even when dilated, behind nothing
            if verdict(eye, b.obox(MARGIN), layout.occluders_for(b)) != "full":
                return False
        else:
            # hidden even when dilated, by the partition alone
            if verdict(eye, b.obox(MARGIN), [layout.partition_box()]) != "hidden":
                return False
    model = np.asarray(MODEL_EYE)
    return all(verdict(model, b.obox(MARGIN), layout.occluders_for(b)) == "full"
               for b in layout.blocks)


def make_layout(set_name: str, index: int, seed: int, n: int | None = None,
                role: str = "largest", attempts: int = 4000, redraw: int = 0) -> Layout:
    """Scene ``index`` of a set: deterministic in (set, seed, index, redraw)."""
    seed_key = f"{set_name}/{seed}/{index}" + (f"/redraw{redraw}" if redraw else "")
    rng = random.Random(seed_key)
    n = n or rng.choice((3, 4))
    digits = rng.sample(range(1, 10), n)  # distinct, independent of size
    colors = rng.sample(sorted(PALETTE), n)
    sid = f"{set_name}-{index:03d}"
    for _ in range(attempts):
        layout = _try_layout(rng, n, role, digits, colors, sid, set_name, seed_key)
        if layout is not None:
            return layout
    raise LayoutError(f"no valid layout for {sid} after {attempts} attempts")


def rearrangements(layout: Layout) -> list[dict[int, int]]:
    """Digit permutations (old digit → new digit) that change both whether a visible cube
    smaller than the director-view cube carries a larger digit, and whether the hidden cube
    carries the largest digit (Appendix "Rearranged digits")."""
    def features(assign: dict[int, int]) -> tuple[bool, bool]:
        dv = layout.director_view
        smaller_larger = any(assign[b.digit] > assign[dv.digit] for b in layout.visible
                             if b.edge < dv.edge)
        hidden_top = assign[layout.hidden.digit] == max(assign.values())
        return smaller_larger, hidden_top

    old = [b.digit for b in layout.blocks]
    base = features({d: d for d in old})
    out = []
    for perm in itertools.permutations(old):
        assign = dict(zip(old, perm, strict=True))
        f = features(assign)
        if f[0] != base[0] and f[1] != base[1]:
            out.append(assign)
    return out


def rearranged(layout: Layout, rng: random.Random) -> Layout:
    """A copy of ``layout`` with its digits permuted by one of ``rearrangements``."""
    options = rearrangements(layout)
    if not options:
        raise LayoutError(f"{layout.id}: no rearrangement changes both features")
    assign = rng.choice(options)
    blocks = [Block(assign[b.digit], b.edge, b.center, b.yaw_deg, b.color, b.visible_to_director)
              for b in layout.blocks]
    new = Layout(layout.id.replace("main", "rearranged"), "rearranged", blocks,
                 layout.partition_center, layout.partition_size, layout.eye, layout.director_x,
                 layout.seed_key)
    new.apparent_deg = {assign[d]: v for d, v in layout.apparent_deg.items()}
    return new


def make_set(set_name: str, n_scenes: int, seed: int = 0) -> list[Layout]:
    """``main`` (hidden = largest), ``rotated`` (three cubes; the hidden one is the largest,
    middle or smallest in equal thirds) or ``rearranged`` (``main`` with digits permuted)."""
    if set_name == "main":
        return [make_layout("main", i, seed) for i in range(n_scenes)]
    if set_name == "rotated":
        return [make_layout("rotated", i, seed, n=3, role=ROLES[i % 3]) for i in range(n_scenes)]
    if set_name == "rearranged":
        rng = random.Random(f"rearranged/{seed}")
        return [rearranged(lay, rng) for lay in make_set("main", n_scenes, seed)]
    raise ValueError(f"unknown scene set {set_name!r}; choose main, rotated or rearranged")
