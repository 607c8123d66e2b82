"""A pointing data set: a folder with ``pointing.jsonl`` and the pictures it names.

Each line: ``{"id": str, "image": "<path inside the folder>", "instruction": str,
"box": [x1, y1, x2, y2], "meta": {...}}``, the box being the hidden block's in pixels of the
image. :func:`make` writes one (seeded); :func:`load` reads one into unseen ``Instance``s,
checking every line, and fingerprints it (a rerun into the same run directory must read the
same data).

An instance has SceneFunRI's shape (an image, ``text["instruction"]``, ``truth["box"]``),
which is what every box strategy reads: that is why the benchmark ``accepts``
``BOX_INSTANCES``.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from unseen.engine.box import Box, BoxError
from unseen.engine.errors import UnseenError
from unseen.engine.images import file_digest, inside, open_image
from unseen.engine.types import Instance
from unseen.engine.userfiles import iter_lines, parse_json, validated

from .scenes import draw, layout

FILE = "pointing.jsonl"


class PointingDataError(UnseenError, ValueError):
    """A data set that cannot be used: the message names the file, the line and why (an
    ``UnseenError``, so the command line prints it as one line and exits 2)."""


class Line(BaseModel):
    """One line of ``pointing.jsonl``, as read."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    image: str
    instruction: str = Field(min_length=1)
    box: list[float] = Field(min_length=4, max_length=4)
    meta: dict = Field(default_factory=dict)


def make(folder: Path, n: int = 12, seed: int = 0) -> Path:
    """Write ``n`` pictures and their ``pointing.jsonl`` into ``folder``; picture ``i`` is
    drawn from ``random.Random(f"{seed}:{i}")``, so a seed names one data set."""
    if (folder / FILE).exists():
        raise PointingDataError(f"{folder} already holds a data set; choose another folder")
    (folder / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        scene = layout(random.Random(f"{seed}:{i}"))
        name = f"images/pt-{i:03d}.png"
        draw(scene, folder / name)
        lines.append(json.dumps({
            "id": f"pt-{i:03d}", "image": name, "instruction": scene.instruction,
            "box": scene.target, "meta": {"colour": scene.colour, "screens": len(scene.screens),
                                          "screen": scene.screens[scene.hidden]}}))
    (folder / FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def load(path: Path) -> tuple[list[Instance], str]:
    """The instances of the data set at ``path`` (its folder or its ``pointing.jsonl``) and
    its fingerprint; raises :class:`PointingDataError` (or ``UserFileError``) at the first
    bad line."""
    file = path / FILE if path.is_dir() else path
    if not file.is_file():
        raise PointingDataError(f"{file}: not found (a pointing data set is a folder with "
                                f"{FILE}; make one with: python -m unseen_pointing DIR)")
    instances: list[Instance] = []
    seen: set[str] = set()
    digest = hashlib.sha256()
    for lineno, raw in iter_lines(file):
        if not raw.strip():
            continue
        line = validated(file, Line, parse_json(file, raw, lineno), lineno)
        inst = _instance(file, lineno, line)
        if inst.id in seen:
            raise PointingDataError(f"{file}:{lineno}: duplicate id {inst.id!r}")
        seen.add(inst.id)
        digest.update(raw.strip().encode() + file_digest(inst.image).encode())
        instances.append(inst)
    if not instances:
        raise PointingDataError(f"{file}: no instances")
    return instances, digest.hexdigest()[:16]


def _instance(file: Path, lineno: int, line: Line) -> Instance:
    where = f"{file}:{lineno}"
    image = (file.parent / line.image).resolve()
    if not inside(file.parent, image):  # a data set must not get a provider sent any file
        raise PointingDataError(f"{where}: image {line.image} lies outside {file.parent}")
    if not image.is_file():
        raise PointingDataError(f"{where}: image not found: {line.image}")
    with open_image(image) as im:  # an unreadable picture: one line naming it
        width, height = im.size
    try:
        box = Box.of(line.box)
    except BoxError as exc:
        raise PointingDataError(f"{where}: bad box {line.box}: {exc}") from None
    if not box.inside(width, height):
        raise PointingDataError(f"{where}: box {line.box} lies outside the {width}x{height} "
                                "image")
    return Instance(id=line.id, image=str(image), width=width, height=height,
                    text={"instruction": line.instruction}, truth={"box": box.to_list()},
                    meta=line.meta)
