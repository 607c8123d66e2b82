"""The commonsense table of the ``common`` and ``both`` prompts (``prompts/commonsense.toml``)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class Entry:
    id: str
    objects: tuple[str, ...]
    affordances: tuple[str, ...]
    text: str


@lru_cache(maxsize=1)
def table() -> tuple[Entry, ...]:
    raw = resources.files(__package__).joinpath("prompts", "commonsense.toml").read_text("utf-8")
    return tuple(Entry(e["id"], tuple(e.get("objects", ())), tuple(e.get("affordances", ())),
                       e["text"].strip()) for e in tomllib.loads(raw)["entry"])


def lookup(instruction: str, affordance: str | None = None) -> Entry:
    """The first entry whose object word occurs in the instruction and, when the affordance
    is known, that lists it; the last entry (with no objects) is the fallback."""
    words = instruction.lower()
    fallback = None
    for e in table():
        if not e.objects:
            fallback = fallback or e
            continue
        if affordance and e.affordances and affordance not in e.affordances:
            continue
        if any(re.search(rf"\b{re.escape(o)}\b", words) for o in e.objects):
            return e
    if fallback is None:
        raise ValueError("the commonsense table needs an entry without objects as fallback")
    return fallback
