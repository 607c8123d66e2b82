"""Reading a choice among labels (``A``, ``B``, ...) from a reply, as real models write it.

The answer is the one the reply STATES, looked for in this order (thinking text,
``<think>...</think>``, is never read; nor are questions the reply restates):

1. a JSON object's ``choice`` / ``answer`` / ``region`` / ``eliminate`` / ``keep`` field (the
   last such object);
2. a reply that is only a label (``B``, ``**B**``, ``Region B.``);
3. an answer line: ``Answer: B``, ``**Final answer:** Region B``, ``My answer: B``,
   ``<answer>B</answer>``, an ``Answer`` heading over the label; the last one wins;
4. explicit statements: a verb with a label (``I eliminate region B``, ``rule out A``,
   ``Keep A``, ``I choose B``) or a likelihood (``region B is less likely``, ``A is more likely
   to contain it``, ``the target is probably in region A``). A statement of the opposite
   of what was asked names the other label, where there are two (``Keep A`` answers B when
   the question asks which to eliminate). They must agree: statements that name different
   answers and no answer line are ``ambiguous``.

A reply that names labels without stating an answer is ``ambiguous``; one that names none
(a refusal, "Sorry, unsure.") is ``parse``. Labels are capital letters standing alone, or
any case after "region" (``region b``), so the article "a" is never a label.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..engine.boxtext import answer_text, json_values, strip_fences

#: what the question asks for: the label LESS likely to hold the target (``eliminate``), or
#: the MORE likely one (``keep``, and any plain pick)
LESS, MORE = "less", "more"
_MODES = {"eliminate": LESS, "keep": MORE, "pick": MORE}
_JSON_KEYS = (("choice", None), ("answer", None), ("region", None), ("eliminate", LESS),
              ("keep", MORE))
_ELIMINATE = r"eliminat\w*|rule\s+out|ruling\s+out|remove|discard|exclude|drop"
_KEEP = r"keep|retain"
_PICK = r"choose|chose|pick|select|go\s+with"
_ANSWER = r"(?:final\s+answer|my\s+answer|answer|choice|decision)"


@dataclass(frozen=True)
class Choice:
    """A reading: the ``label``, or ``reason`` (``ambiguous`` / ``parse``) and why."""

    label: str | None
    reason: str | None = None
    error: str | None = None


def _plain(text: str) -> str:
    """Markdown emphasis, code and heading marks removed, so ``**Region A**`` reads as
    ``Region A``."""
    return re.sub(r"[*_`#>]+", " ", text)


def _label_pattern(labels: list[str]) -> str:
    """A label: ``region X`` in any case, or the capital letter alone."""
    alt = "|".join(re.escape(x) for x in labels)
    low = "|".join(re.escape(x.lower()) for x in labels)
    return rf"(?:\b[Rr][Ee][Gg][Ii][Oo][Nn]\s+(?:{alt}|{low})\b|(?<![A-Za-z'])(?:{alt})(?![A-Za-z']))"


def _label_of(found: str, labels: list[str]) -> str | None:
    word = re.sub(r"(?i)^\s*region\s+", "", found).strip().upper()
    return word if word in labels else None


def _sentences(text: str) -> list[str]:
    """The text's sentences and lines, questions left out."""
    parts = re.split(r"(?<=[.!?;])\s+|\n+", text)
    return [p for p in parts if p.strip() and not p.rstrip().endswith("?")]


def _implied(label: str, polarity: str, asked: str, labels: list[str]) -> str | None:
    """The answer a statement gives: its label when it says what was asked, else the other
    one of two."""
    if polarity == asked:
        return label
    two = [x for x in labels if x != "C"]
    if len(two) == 2 and label in two:
        return two[1] if label == two[0] else two[0]
    return None


def read(text: str, labels: list[str], mode: str = "eliminate") -> Choice:
    """The label ``text`` answers among ``labels`` for a question in ``mode``
    (``eliminate``: which is less likely; ``keep`` or ``pick``: which is more likely)."""
    asked = _MODES.get(mode, MORE)
    if not isinstance(text, str) or not text.strip():
        return Choice(None, "parse", "an empty reply")
    answer = answer_text(text)
    snippet = " ".join(answer.split())[:60]
    if not answer.strip():
        return Choice(None, "parse", "the reply holds thinking and no answer")
    for v in reversed(json_values(strip_fences(answer))):
        if not isinstance(v, dict):
            continue
        for key, polarity in _JSON_KEYS:
            value = v.get(key)
            label = _label_of(value, labels) if isinstance(value, str) else None
            if label is not None:
                got = _implied(label, polarity or asked, asked, labels)
                if got is not None:
                    return Choice(got)
    answer = re.sub(r"(?i)<answer>\s*(.*?)\s*</answer>", r"\nAnswer: \1\n", answer)
    plain = _plain(answer)
    bare = re.sub(r"[\s.:!()\[\]'\"]", " ", plain).strip()
    if (label := _label_of(bare, labels)) is not None:
        return Choice(label)
    lab = _label_pattern(labels)
    lines = re.findall(rf"(?i:\b{_ANSWER}\b)\s*[:\-–—=]?\s*(?:is\s+)?\(?({lab})", plain)
    if lines:
        return Choice(_label_of(lines[-1], labels))
    stated = _statements(plain, labels, lab, asked)
    if len(set(stated)) == 1:
        return Choice(stated[0])
    if stated:
        return Choice(None, "ambiguous", f"the reply states {' and '.join(sorted(set(stated)))}"
                      f" as its answer: {snippet!r}")
    if re.search(lab, plain):
        return Choice(None, "ambiguous",
                      f"the reply names regions but states no answer: {snippet!r}")
    return Choice(None, "parse", f"no choice of {' or '.join(labels)} in the reply: {snippet!r}")


def _statements(plain: str, labels: list[str], lab: str, asked: str) -> list[str]:
    """The answers the reply's statements give, in order."""
    out: list[str] = []
    verbs = ((_ELIMINATE, LESS), (_KEEP, MORE), (_PICK, asked))
    for sentence in _sentences(plain):
        found: list[tuple[int, str]] = []
        for verb, polarity in verbs:
            for m in re.finditer(rf"(?i:\b(?:{verb})\b)\s*[:\-]?\s*(?:(?i:the\s+))?({lab})",
                                 sentence):
                if (label := _label_of(m.group(1), labels)) is not None:
                    found.append((m.start(), _implied(label, polarity, asked, labels) or ""))
        for m in re.finditer(rf"({lab})\s*(?:\([^)]*\)|,[^,.]*,)?\s*(?i:is|seems|looks)\s+"
                             rf"(?i:(?:far|much|a\s+lot|clearly|slightly|the)\s+)*"
                             rf"(?i:(less|more|most|least))\s+(?i:likely|plausible|probable)",
                             sentence):
            polarity = LESS if m.group(2).lower() in ("less", "least") else MORE
            if (label := _label_of(m.group(1), labels)) is not None:
                found.append((m.start(), _implied(label, polarity, asked, labels) or ""))
        for m in re.finditer(rf"(?i:\b(?:probably|most\s+likely)\b)[^:;]*?({lab})", sentence):
            if (label := _label_of(m.group(1), labels)) is not None:
                found.append((m.start(), _implied(label, MORE, asked, labels) or ""))
        out += [a for _, a in sorted(found) if a]
    return out


def read_choice(text: str, labels: list[str], mode: str = "eliminate") -> str | None:
    """The label a reply answers (:func:`read`), or None when it states none."""
    return read(text, labels, mode).label


@dataclass(frozen=True)
class Cells:
    """A reading of grid cells to eliminate: ``cells`` (sorted, unique), or why not."""

    cells: list[int] | None
    error: str | None = None


def _ints(items: object) -> list[int] | None:
    if isinstance(items, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                       for x in items):
        return list(items)
    return None


_NUMBERS = r"(\d{1,3}(?:\s*(?:,|and|or|&)\s*\d{1,3})*)"


def read_cells(text: str, k: int) -> Cells:
    """The cells (numbered 1..k) a reply eliminates: the last JSON object's ``eliminate``
    list (or a bare JSON list of integers), else the last statement "eliminate cells 2 and
    3" / "Eliminate: 1, 4"; thinking is never read. A cell out of 1..k, or every cell, is
    no reading (at least one cell must stay)."""
    if not isinstance(text, str) or not text.strip():
        return Cells(None, "an empty reply")
    answer = answer_text(text)
    found: list[int] | None = None
    for v in reversed(json_values(strip_fences(answer))):
        found = _ints(v.get("eliminate")) if isinstance(v, dict) else _ints(v)
        if found is not None:
            break
    if found is None:
        said = re.findall(rf"(?i:\b(?:{_ELIMINATE})\b)\s*:?\s*(?i:cells?\s*)?{_NUMBERS}",
                          _plain(answer))
        if said:
            found = [int(n) for n in re.findall(r"\d+", said[-1])]
    if found is None:
        snippet = " ".join(answer.split())[:60]
        return Cells(None, f"no cells to eliminate in the reply: {snippet!r}")
    if any(not 1 <= n <= k for n in found):
        return Cells(None, f"cells {found}: the grid has cells 1 to {k}")
    cells = sorted(set(found))
    if len(cells) == k:
        return Cells(None, f"every cell ({k}) was eliminated; at least one must stay")
    return Cells(cells)


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
