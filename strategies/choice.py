"""Reading a choice among labels ("A", "B", ...) from a reply, and its confidence."""

from __future__ import annotations

import math
import re
from typing import Any

from ..engine.boxtext import json_values, strip_fences

_CUE = r"(?:answer|choice|eliminate|eliminating|remove|keep|region|option|pick|choose)"


def read_choice(text: str, labels: list[str]) -> str | None:
    """The label a reply names, or None when it names none or several ambiguously.

    In order: a JSON object's ``choice`` (or ``answer``/``region``) field; a reply that is
    only a label (with punctuation, quotes or Markdown); the last label after a cue word
    ("answer: B", "eliminate region A"); the only label that appears as a word.
    """
    if not text or not text.strip():
        return None
    alt = "|".join(re.escape(x) for x in labels)
    for v in reversed(json_values(strip_fences(text))):
        if isinstance(v, dict):
            for k in ("choice", "answer", "region", "eliminate", "keep"):
                val = v.get(k)
                if isinstance(val, str) and val.strip().upper().removeprefix("REGION ").strip() in labels:
                    return val.strip().upper().removeprefix("REGION ").strip()
    bare = re.sub(r"[\s*_`'\".:()\[\]]", "", text).upper()
    bare = bare.removeprefix("REGION")
    if bare in labels:
        return bare
    cued = re.findall(rf"\b{_CUE}\b\s*[:\-]?\s*(?:is\s+)?(?:region\s+)?\**\(?({alt})\b", text,
                      flags=re.IGNORECASE)
    if cued:
        return cued[-1].upper()
    words = {m.upper() for m in re.findall(rf"(?<![A-Za-z])({alt})(?![A-Za-z])", text)}
    return words.pop() if len(words) == 1 else None


def choice_confidence(logprobs: list[dict[str, Any]] | None, labels: list[str],
                      chosen: str) -> float | None:
    """P(chosen) renormalised over the labels, from the first output token that is a label
    (its top alternatives give the others); None without log-probabilities."""
    if not logprobs:
        return None
    for tok in logprobs:
        t = tok.get("token", "").strip().strip('"').upper()
        if t not in labels:
            continue
        probs: dict[str, float] = {}
        for alt in [tok, *tok.get("top", [])]:
            a = alt.get("token", "").strip().strip('"').upper()
            if a in labels and a not in probs:
                probs[a] = math.exp(alt["logprob"])
        total = sum(probs.values())
        return probs.get(chosen, 0.0) / total if total > 0 else None
    return None
