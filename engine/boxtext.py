"""Read a box out of a model's reply text, without guessing its convention.

Accepted, fenced or not, with any text around it: a JSON object holding four numbers under
``box`` or a family's native key (``box_2d``, ``bbox_2d``, ``bbox``), a list of such objects,
a bare JSON list of four numbers, InternVL's ``<box>[[x1,y1,x2,y2]]</box>`` and Qwen2-VL's
``(x1,y1),(x2,y2)``. When several boxes appear, the last one counts (models reason first and
answer last); never the best of several readings. The numbers are returned as written; the
caller converts them with the convention the prompt asked for.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

BOX_KEYS = ("box", "box_2d", "bbox_2d", "bbox", "bounding_box")

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"
_INTERNVL = re.compile(r"<box>\s*\[\[" + ",".join([_NUM] * 4) + r"\]\]\s*</box>")
_QWEN2 = re.compile(r"\(" + _NUM + "," + _NUM + r"\)\s*,\s*\(" + _NUM + "," + _NUM + r"\)")
_MAX_CANDIDATES = 500  # bounded work on pathological replies


class BoxParseError(ValueError):
    """The reply holds no readable box; the message says why."""


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def _four(v: Any) -> list[float] | None:
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
        v = v[0]  # [[x1, y1, x2, y2]]
    if isinstance(v, list) and len(v) == 4:
        nums = [_number(x) for x in v]
        if all(n is not None for n in nums):
            return nums  # type: ignore[return-value]
    return None


def _from_value(v: Any, keys: tuple[str, ...]) -> list[float] | None:
    if isinstance(v, dict):
        for k in keys:
            if k in v and (box := _four(v[k])) is not None:
                return box
        for inner in v.values():  # e.g. {"answer": {"box": [...]}}
            if isinstance(inner, dict | list) and (box := _from_value(inner, keys)):
                return box
        return None
    if isinstance(v, list):
        if (box := _four(v)) is not None:
            return box
        found = [b for item in v if isinstance(item, dict) and (b := _from_value(item, keys))]
        return found[-1] if found else None
    return None


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array embedded in ``text``, in order."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    i, tries = 0, 0
    while i < len(text) and tries < _MAX_CANDIDATES:
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        tries += 1
        try:
            value, end = decoder.raw_decode(text, j)
        except (ValueError, RecursionError):
            i = j + 1
            continue
        values.append(value)
        i = end
    return values


def strip_fences(text: str) -> str:
    """Fenced blocks' contents joined, or the text itself when it has no fence."""
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text


def parse_box(text: str, keys: tuple[str, ...] = BOX_KEYS) -> list[float]:
    """The last box written in ``text``, as four numbers in the reply's own convention."""
    if not isinstance(text, str) or not text.strip():
        raise BoxParseError("empty reply")
    for source in (strip_fences(text), text):
        boxes = [b for v in json_values(source) if (b := _from_value(v, keys)) is not None]
        if boxes:
            return boxes[-1]
    for pattern in (_INTERNVL, _QWEN2):
        matches = pattern.findall(text)
        if matches:
            return [float(x) for x in matches[-1]]
    snippet = text.strip().replace("\n", " ")
    snippet = snippet[:80] + ("…" if len(snippet) > 80 else "")
    raise BoxParseError(f"no box of four numbers in the reply: {snippet!r}")
