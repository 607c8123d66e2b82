"""A rendered scene set (``scenes.jsonl`` + PNGs) as engine Instances with the answer key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ....engine.errors import UnseenError
from ....engine.images import inside
from ....engine.types import Instance
from ....engine.userfiles import decode, read_bytes
from ....renderers.camera import Camera
from .files import SCENES_FILE
from .geometry import OBox


class SceneSetError(UnseenError, ValueError):
    """A scene folder that is missing or malformed."""


def block_boxes(record: dict) -> dict[str, list[float]]:
    """Each block's pixel box in the model's image (its 8 corners projected), by digit."""
    cam = record["camera"]
    camera = Camera(cam["K"], cam["world_to_camera"], cam["width"], cam["height"])
    out = {}
    for b in record["blocks"]:
        h = b["edge"] / 2
        uv, _ = camera.project(OBox(tuple(b["center"]), (h, h, h), b["yaw_deg"]).corners())
        x1, y1 = np.nanmin(uv, axis=0)
        x2, y2 = np.nanmax(uv, axis=0)
        out[str(b["digit"])] = [round(float(v), 1) for v in (x1, y1, x2, y2)]
    return out


def instance(record: dict, folder: Path) -> Instance:
    """One scene as an Instance: ``truth`` is the answer key, ``meta`` the set and boxes."""
    cam = record["camera"]
    truth = {k: record[k] for k in ("hidden_digit", "visible_digits", "director_view_digit",
                                    "largest_digit_visible", "apparent_size_flag")}
    truth["digits"] = sorted(b["digit"] for b in record["blocks"])
    # the largest block on the table, the own-view reading's pick (not the hidden one in
    # two thirds of the rotated set)
    truth["largest_digit"] = max(record["blocks"], key=lambda b: b["edge"])["digit"]
    return Instance(
        id=record["id"], image=str((folder / record["image"]).resolve()),
        width=cam["width"], height=cam["height"], truth=truth,
        meta={"set": record["set"], "benchmark": "director", "boxes": block_boxes(record)},
    )


def load_scenes(folder: str | Path) -> tuple[list[Instance], str]:
    """The scenes of one set folder in file order, and a fingerprint of ``scenes.jsonl``."""
    folder = Path(folder)
    path = folder / SCENES_FILE
    if not path.is_file():
        raise SceneSetError(f"no {SCENES_FILE} in {folder} (make one with `unseen data director`)")
    raw = read_bytes(path)
    out = []
    for n, line in enumerate(decode(path, raw).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            inst = instance(rec, folder)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError,
                AttributeError, RecursionError) as exc:
            raise SceneSetError(f"{path}:{n}: not a scene record ({type(exc).__name__}: {exc})") from None
        if not inside(folder, inst.image):
            raise SceneSetError(f"{path}:{n}: image {rec['image']} lies outside {folder}")
        if not Path(inst.image).is_file():
            raise SceneSetError(f"{path}:{n}: image {rec['image']} is missing")
        out.append(inst)
    if not out:
        raise SceneSetError(f"{path} holds no scenes")
    return out, hashlib.sha256(raw).hexdigest()[:16]
