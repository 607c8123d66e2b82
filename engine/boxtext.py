"""Read a box out of a model's reply text, without guessing its convention.

Accepted, fenced or not, with any text around it: a JSON object holding four numbers under
``box`` or a family's native key (``box_2d``, ``bbox_2d``, ``bbox``), a list of such objects,
a bare JSON list of four numbers, InternVL's ``<box>[[x1,y1,x2,y2]]</box>`` and Qwen2-VL's
``(x1,y1),(x2,y2)``. When several boxes appear, the last one counts (models reason first and
answer last); never the best of several readings. Thinking text (``<think>...</think>``) is
not the answer and is read past (:func:`answer_text`). The numbers are returned as written,
with how they were written (:class:`Found`: the key, ``list``, ``internvl`` or ``qwen2``); the
caller checks that against the convention the prompt asked for and converts them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

BOX_KEYS = ("box", "box_2d", "bbox_2d", "bbox", "bounding_box")

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"
_INTERNVL = re.compile(r"<box>\s*\[\[" + ",".join([_NUM] * 4) + r"\]\]\s*</box>")
_QWEN2 = re.compile(r"\(" + _NUM + "," + _NUM + r"\)\s*,\s*\(" + _NUM + "," + _NUM + r"\)")
_MAX_CANDIDATES = 500  # bounded work on pathological replies
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)


def answer_text(text: str) -> str:
    """``text`` without its thinking: ``<think>...</think>`` blocks removed; text up to a
    closing tag with no opening one (a template that opened it in the prompt) removed; and
    text after an opening tag that never closes (cut while thinking) removed."""
    if "<" not in text:
        return text
    closes = list(_THINK_CLOSE.finditer(text))
    if closes and not _THINK_OPEN.search(text, 0, closes[0].start()):
        text = text[closes[0].end():]  # the opening tag was in the prompt
    out, pos = [], 0
    while (m := _THINK_OPEN.search(text, pos)) is not None:
        out.append(text[pos:m.start()])
        end = _THINK_CLOSE.search(text, m.end())
        if end is None:
            return "".join(out)
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


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


class Found(NamedTuple):
    """A box as the reply wrote it: four numbers and where they stood (the JSON key,
    ``list`` for a bare list, ``internvl`` or ``qwen2`` for those native forms)."""

    values: list[float]
    source: str


def _four(v: Any) -> list[float] | None:
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
        v = v[0]  # [[x1, y1, x2, y2]]
    if isinstance(v, list) and len(v) == 4:
        nums = [_number(x) for x in v]
        if all(n is not None for n in nums):
            return nums  # type: ignore[return-value]
    return None


def _from_value(v: Any, keys: tuple[str, ...]) -> Found | None:
    if isinstance(v, dict):
        for k in keys:
            if k in v and (box := _four(v[k])) is not None:
                return Found(box, k)
        for inner in v.values():  # e.g. {"answer": {"box": [...]}}
            if isinstance(inner, dict | list) and (found := _from_value(inner, keys)):
                return found
        return None
    if isinstance(v, list):
        if (box := _four(v)) is not None:
            return Found(box, "list")
        boxes = [b for item in v if isinstance(item, dict) and (b := _from_value(item, keys))]
        return boxes[-1] if boxes else None
    return None


def json_spans(text: str, max_tries: int = _MAX_CANDIDATES) -> list[tuple[int, Any]]:
    """Every top-level JSON object or array embedded in ``text``, with where it starts, in
    order (bounded work: at most ``max_tries`` starts are tried)."""
    decoder = json.JSONDecoder()
    values: list[tuple[int, Any]] = []
    i, tries = 0, 0
    while i < len(text) and tries < max_tries:
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        tries += 1
        try:
            value, end = decoder.raw_decode(text, j)
        except (ValueError, RecursionError):
            i = j + 1
            continue
        values.append((j, value))
        i = end
    return values


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array embedded in ``text``, in order."""
    return [v for _, v in json_spans(text)]


def strip_fences(text: str) -> str:
    """Fenced blocks' contents joined, or the text itself when it has no fence."""
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text


def find_box(text: str, keys: tuple[str, ...] = BOX_KEYS) -> Found:
    """The last box written in ``text`` outside its thinking, as four numbers in the reply's
    own convention, with how it was written."""
    if not isinstance(text, str) or not text.strip():
        raise BoxParseError("empty reply")
    answer = answer_text(text)
    if not answer.strip():
        raise BoxParseError("the reply holds thinking and no answer")
    # native forms first, masked out (same length), so the list inside InternVL's
    # <box>[[...]]</box> is not read again as a bare list; then the one written last wins
    found: list[tuple[int, Found]] = []
    masked = answer
    for pattern, name in ((_INTERNVL, "internvl"), (_QWEN2, "qwen2")):
        for m in pattern.finditer(masked):
            found.append((m.start(), Found([float(x) for x in m.groups()], name)))
            masked = masked[:m.start()] + " " * (m.end() - m.start()) + masked[m.end():]
    found += [(j, b) for j, v in json_spans(masked) if (b := _from_value(v, keys)) is not None]
    if found:
        return max(found, key=lambda jb: jb[0])[1]
    snippet = answer.strip().replace("\n", " ")
    snippet = snippet[:80] + ("…" if len(snippet) > 80 else "")
    raise BoxParseError(f"no box of four numbers in the reply: {snippet!r}")


def parse_box(text: str, keys: tuple[str, ...] = BOX_KEYS) -> list[float]:
    """The last box written in ``text`` (:func:`find_box`), its four numbers only."""
    return find_box(text, keys).values
