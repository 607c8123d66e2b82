"""Writing a scene set: one PNG per scene and ``scenes.jsonl``, every key checked twice."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ....engine.errors import UnseenError
from .files import SCENES_FILE
from .layout import Layout, make_layout, rearranged
from .render import Unreadable, render_scene, write_scene

SETS = ("main", "rotated", "rearranged")
DEFAULT_N = {"main": 160, "rotated": 150, "rearranged": 160}
MAX_REDRAWS = 50


class SceneSizeError(UnseenError, ValueError):
    """A size at which no layout of a scene renders with every digit readable."""


def _accepted(set_name: str, index: int, seed: int, size: tuple[int, int], supersample: int):
    """Scene ``index``, drawn again (deterministically) while a digit is unreadable."""
    kw: dict[str, Any] = {"n": 3, "role": ("largest", "middle", "smallest")[index % 3]} if set_name == "rotated" else {}
    for redraw in range(MAX_REDRAWS):
        layout = make_layout(set_name, index, seed, redraw=redraw, **kw)
        try:
            return render_scene(layout, *size, supersample=supersample)
        except Unreadable:
            continue
    raise SceneSizeError(f"{set_name}-{index:03d}: no layout renders with every digit readable "
                         f"at {size[0]}x{size[1]} in {MAX_REDRAWS} draws; render at a larger "
                         "size nearer 4:3 (the default is 1024x768)")


def build_set(set_name: str, out: str | Path, n: int | None = None, seed: int = 0,
              size: tuple[int, int] = (1024, 768), supersample: int = 2,
              progress: bool = True) -> Path:
    """Render a set into ``out``; returns the path of ``scenes.jsonl``.

    ``main``: the hidden cube is the largest; ``rotated``: three cubes, the hidden one the
    largest, middle or smallest in equal thirds; ``rearranged``: ``main`` with each scene's
    digits permuted (same seed → same geometry as ``main``).
    """
    if set_name not in SETS:
        raise ValueError(f"unknown scene set {set_name!r}; choose {', '.join(SETS)}")
    n = n or DEFAULT_N[set_name]
    if set_name == "rotated" and n % 3:
        raise ValueError("the rotated set needs a multiple of 3 scenes (equal thirds)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from rich.progress import Progress

    rng = random.Random(f"rearranged/{seed}")
    records = []
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task(f"rendering {set_name}", total=n)
        for i in range(n):
            if set_name == "rearranged":
                base: Layout = _accepted("main", i, seed, size, supersample).layout
                scene = render_scene(rearranged(base, rng), *size, supersample=supersample)
            else:
                scene = _accepted(set_name, i, seed, size, supersample)
            records.append(write_scene(scene, out))
            bar.advance(task)
    path = out / SCENES_FILE
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    return path
