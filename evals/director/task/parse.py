"""Read a Director Task reply: the last JSON object that holds the fields the prompt asks for.

The paper's rule (appendix, "Collection"): a reply counts as answered when, with any Markdown
code fences removed, it contains a JSON object with the fields the prompt asks for, each of the
type asked. Text around the object is ignored, the last such object is read, a number in quotes
is accepted, and a number not on the table is kept here (it is scored wrong later).

Decisions, beyond the paper's words:

- Fences: only the fence markers are removed (```` ``` ```` with any language tag); the text
  between and around fences is kept, so an answer written after a fenced block still counts.
  (``unseen.engine.boxtext.strip_fences`` keeps only the fenced contents, which could hide
  that later answer, so it is not reused.)
- Objects: "last" means the last TOP-LEVEL JSON value in the text that holds an object with
  the fields; within one top-level value the outermost such object wins, so an alternative
  nested in the answer never replaces it (``{"visible": [1, 2], "block": 3, "alt": {"visible":
  [4], "block": 5}}`` reads block 3), while an answer wrapped in an object or a list without
  the fields counts (``{"answer": {...}}``, ``[{...}]``). Thinking text (``<think>...
  </think>``) is not the answer and is never read (the paper parses "only the answer").
- "int": a JSON integer; a float with a whole value (``3.0``: JSON does not tell the two apart,
  and JSON Schema's "integer" accepts it); or a string holding such a number, optionally signed
  and with surrounding whitespace (``"3"``, ``" 3 "``, ``"3.0"``). Booleans, ``null``,
  fractions (``3.5``), non-finite numbers, exponents in strings (``"1e3"``), underscores and
  non-ASCII digits are not integers.
- "ints": a JSON list (possibly empty) whose every item is an "int" as above.
- A candidate object with any required field missing or of the wrong type does not count, and
  the search goes on to earlier objects. Extra fields are ignored; keys match exactly.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Literal, TypeVar

from ....engine.boxtext import answer_text

FieldType = Literal["int", "ints"]
T = TypeVar("T")

_FENCE = re.compile(r"```[A-Za-z0-9_+.-]*")
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?", re.ASCII)
_MAX_TRIES = 5000  # bounded work on pathological replies (counted from the end of the text)
_ENCLOSE_TRIES = 200  # starts tried before an answer, for an object that encloses it
_DECODER = json.JSONDecoder()


def _as_int(v: Any) -> int | None:
    """``v`` as an integer under the rules above, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v.is_integer() else None
    if isinstance(v, str):
        s = v.strip(" \t\r\n")
        if not _INT_TEXT.fullmatch(s):
            return None
        d = Decimal(s)
        return int(d) if d == d.to_integral_value() else None
    return None


def _read(obj: dict, fields: Mapping[str, FieldType]) -> dict[str, int | list[int]] | None:
    out: dict[str, int | list[int]] = {}
    for name, kind in fields.items():
        if name not in obj:
            return None
        v = obj[name]
        if kind == "int":
            n = _as_int(v)
            if n is None:
                return None
            out[name] = n
        else:
            if not isinstance(v, list):
                return None
            ns = [_as_int(x) for x in v]
            if any(n is None for n in ns):
                return None
            out[name] = ns  # type: ignore[assignment]
    return out


def remove_fences(text: str) -> str:
    """``text`` with every Markdown code-fence marker (and its language tag) removed."""
    return _FENCE.sub("\n", text)


def parse_reply(text: Any, fields: Mapping[str, FieldType]) -> dict[str, int | list[int]] | None:
    """The required ``fields`` of the last JSON object in ``text`` that holds them all, each of
    its type ("int" or "ints"), converted to ``int``; None when the reply is unanswered.

    Never raises on any ``text``; raises ``ValueError`` only for a malformed ``fields``.
    """
    if not fields:
        raise ValueError("fields must name at least one field")
    for name, kind in fields.items():
        if kind not in ("int", "ints"):
            raise ValueError(f"field {name!r}: type must be 'int' or 'ints', not {kind!r}")
    return last_object(text, lambda v: _read(v, fields) if isinstance(v, dict) else None)


def last_object(text: Any, read: Callable[[Any], T | None]) -> T | None:
    """``read`` of the JSON object that answers: the last one in ``text`` (fences and
    thinking removed) for which ``read`` is not None, unless an object that encloses it is
    one too (the outermost wins). Searched from the end, so a long reply with many braces
    before the answer still finds it; bounded work (``_MAX_TRIES`` starts, and after an
    answer is found ``_ENCLOSE_TRIES`` more for an enclosing one)."""
    if not isinstance(text, str) or "{" not in text:
        return None
    text = remove_fences(answer_text(text))
    best: tuple[int, int, T] | None = None  # start, end, reading
    end, tries, best_tries = len(text), 0, 0
    while tries < (_MAX_TRIES if best is None else best_tries + _ENCLOSE_TRIES):
        j = text.rfind("{", 0, end)
        if j < 0:
            break
        end, tries = j, tries + 1
        try:
            value, stop = _DECODER.raw_decode(text, j)
        except (ValueError, RecursionError):
            continue
        if best is not None and not stop >= best[1]:
            continue  # before the answer, not around it: an earlier answer never wins
        if (out := read(value)) is not None:
            best, best_tries = (j, stop, out), tries
    return best[2] if best is not None else None
