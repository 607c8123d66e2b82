"""Director Task prompts: a base prompt per request and its variants, built from named parts.

A condition is named ``<request>[/<question>][+<insert>]``:

* request: ``mean``, ``move``, ``move-want``, ``move-will`` (Question B);
* question: ``vis`` (default: the visibility question as Question A), ``novis`` (no
  Question A), ``count``, ``know``, ``stated`` (a line states the visible blocks),
  ``after`` (Question A after Question B), ``twoturn`` (Question A alone in a first turn);
* insert: ``combined``, ``knowledge``, ``reference``, ``padding`` (a paragraph before the
  line on block numbers).

A prompt is an ordered list of named parts (:data:`PARTS`); every condition changes only the
parts its name implies (:attr:`Prompt.changed`), and :func:`check_identity` proves that the
text outside them is identical byte for byte to the base prompt of the same request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from itertools import cycle

from ....engine.errors import UnseenError

REQUESTS = ("mean", "move", "move-want", "move-will")
QUESTIONS = ("vis", "novis", "count", "know", "stated", "after", "twoturn")
INSERTS = ("combined", "knowledge", "reference", "padding")

#: The parts of every prompt, in order. Empty parts contribute no text.
PARTS = ("intro", "insert", "numbers", "question_a", "format_a", "turn_break", "question_b",
         "question_a_after", "format")

#: The visible blocks of the placeholder example used by ``stated`` without a scene.
PLACEHOLDER_VISIBLE = (3, 7)

_TURN_BREAK = "\x00TURN\x00"  # never in a template; splits the joined text into turns

# The parts each question or insert variant changes, relative to the base of its request.
_CHANGED_BY_QUESTION = {
    "vis": (), "novis": ("question_a", "format"), "count": ("question_a", "format"),
    "know": ("question_a", "format"), "stated": ("question_a", "format"),
    "after": ("question_a", "question_a_after", "format"),
    "twoturn": ("format_a", "turn_break", "format"),
}


class PromptError(UnseenError, ValueError):
    """An unknown or malformed condition name, or a prompt that breaks byte identity."""


@dataclass(frozen=True)
class Condition:
    request: str
    question: str = "vis"
    insert: str | None = None

    @property
    def name(self) -> str:
        """The canonical name: ``/vis`` is left out."""
        name = self.request
        if self.question != "vis":
            name += f"/{self.question}"
        if self.insert:
            name += f"+{self.insert}"
        return name

    @property
    def changed(self) -> tuple[str, ...]:
        """The parts this condition changes relative to the base of its request."""
        parts = list(_CHANGED_BY_QUESTION[self.question])
        if self.insert:
            parts.append("insert")
        return tuple(p for p in PARTS if p in parts)


@dataclass
class Prompt:
    condition: Condition
    parts: dict[str, str]
    fields_per_turn: list[list[str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.condition.name

    @property
    def changed(self) -> tuple[str, ...]:
        return self.condition.changed

    @property
    def text(self) -> str:
        """All turns joined (no separator)."""
        return "".join(self.turns)

    @property
    def turns(self) -> list[str]:
        return "".join(self.parts[p] for p in PARTS).split(_TURN_BREAK)

    @property
    def chars(self) -> int:
        """Characters of all turns together."""
        return sum(len(t) for t in self.turns)

    @property
    def fields(self) -> list[str]:
        """Every JSON field the replies must carry, over all turns."""
        return [f for turn in self.fields_per_turn for f in turn]


def parse_condition(name: str) -> Condition:
    """``move/novis+combined`` -> Condition; a clear :class:`PromptError` for unknown parts."""
    m = re.fullmatch(r"([^/+]*)(?:/([^/+]*))?(?:\+([^/+]*))?", name.strip())
    if not m:
        raise PromptError(f"bad condition name {name!r}: expected <request>[/<question>][+<insert>]")
    request, question, insert = m.group(1), m.group(2), m.group(3)
    if request not in REQUESTS:
        raise PromptError(f"unknown request {request!r} in condition {name!r}; "
                          f"known: {', '.join(REQUESTS)}")
    if question is not None and question not in QUESTIONS:
        raise PromptError(f"unknown question {question!r} in condition {name!r}; "
                          f"known: {', '.join(QUESTIONS)}")
    if insert is not None and insert not in INSERTS:
        raise PromptError(f"unknown insert {insert!r} in condition {name!r}; "
                          f"known: {', '.join(INSERTS)}")
    return Condition(request, question or "vis", insert)


def conditions() -> list[str]:
    """Every valid condition, by canonical name: request x question x (no insert or insert)."""
    return [Condition(r, q, i).name
            for r in REQUESTS for q in QUESTIONS for i in (None, *INSERTS)]


@cache
def templates() -> dict[str, str]:
    """The named texts of ``prompts/parts.txt``."""
    raw = resources.files(__package__).joinpath("prompts/parts.txt").read_text(encoding="utf-8")
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in raw.split("\n"):
        header = re.fullmatch(r"\[([a-z_.-]+)\]", line)
        if header:
            current = out.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v).rstrip("\n") for k, v in out.items()}


def pad_to(constraint: str, padding: str, target: int) -> str:
    """``constraint`` padded to exactly ``target`` characters with ``padding``'s words.

    The rule: append a space and the padding sentence (repeated, space-separated, as often
    as needed) and cut the result at ``target`` characters; a cut that would end on a space
    drops that space and puts the next character of the padding there instead, so the text
    never ends in whitespace. A constraint longer than ``target`` is an error (no trimming
    of the constraint itself)."""
    if len(constraint) > target:
        raise PromptError(f"constraint has {len(constraint)} characters, over the {target} target")
    if len(constraint) == target:
        return constraint
    words = cycle(padding.split())
    text = constraint
    while len(text) < target + 1:
        text += " " + next(words)
    cut = text[:target]
    if cut.endswith(" "):
        cut = cut[:-1] + text[target]
    return cut


def insert_text(kind: str) -> str:
    """The inserted paragraph; knowledge and reference padded to the combined one's length."""
    t = templates()
    target = len(t["insert.combined"])
    if kind == "combined":
        return t["insert.combined"]
    if kind == "padding":
        return t["pad.knowledge"]
    if kind == "knowledge":
        return pad_to(t["insert.knowledge"], t["pad.knowledge"], target)
    if kind == "reference":
        return pad_to(t["insert.reference"], t["pad.reference"], target)
    raise PromptError(f"unknown insert {kind!r}; known: {', '.join(INSERTS)}")


def _numbers_phrase(digits: list[int]) -> str:
    digits = sorted(digits)
    if len(digits) == 1:
        return str(digits[0])
    return ", ".join(str(d) for d in digits[:-1]) + f" and {digits[-1]}"


def _format(fields: list[str]) -> str:
    t = templates()
    lines = "\n".join(t[f"field.{f}"] for f in fields)
    return "\n" + t["format"].format(fields=lines)


def build(condition: str | Condition, scene: dict | None = None) -> Prompt:
    """The prompt of ``condition``; ``scene`` (a scenes.jsonl record) gives ``stated`` its
    visible blocks, else :data:`PLACEHOLDER_VISIBLE`."""
    cond = parse_condition(condition) if isinstance(condition, str) else condition
    t = templates()
    parts = dict.fromkeys(PARTS, "")
    parts["intro"] = t["intro"] + "\n\n"
    parts["numbers"] = t["numbers"] + "\n\n"
    parts["question_b"] = t[f"request.{cond.request}"] + "\n"
    if cond.insert:
        parts["insert"] = insert_text(cond.insert) + "\n\n"
    q = cond.question
    first = {"vis": "visible", "count": "count", "know": "known"}
    if q in ("vis", "count", "know"):
        parts["question_a"] = t[f"question.{q}"] + "\n"
        fields_per_turn = [[first[q], "block"]]
    elif q == "novis":
        fields_per_turn = [["block"]]
    elif q == "stated":
        if scene is not None:
            try:
                visible = [int(d) for d in scene["visible_digits"]]
            except (KeyError, TypeError, ValueError):
                raise PromptError(f"scene {scene.get('id', '?')!r} has no visible_digits") from None
        else:
            visible = list(PLACEHOLDER_VISIBLE)
        parts["question_a"] = t["stated"].format(numbers=_numbers_phrase(visible)) + "\n"
        fields_per_turn = [["block"]]
    elif q == "after":
        parts["question_a_after"] = t["question.vis"] + "\n"
        fields_per_turn = [["block", "visible"]]
    elif q == "twoturn":
        parts["question_a"] = t["question.vis"] + "\n"
        parts["format_a"] = _format(["visible"])
        parts["turn_break"] = _TURN_BREAK
        fields_per_turn = [["visible"], ["block"]]
    else:  # pragma: no cover - parse_condition guards this
        raise PromptError(f"unknown question {q!r}")
    parts["format"] = _format(fields_per_turn[-1])
    return Prompt(cond, parts, fields_per_turn)


def check_identity(base: Prompt, variant: Prompt) -> list[str]:
    """The names of the parts in which ``variant`` differs from ``base``.

    Raises :class:`PromptError` when a part differs that the variant's condition does not
    change (relative to a base of another request, Question B may differ too), or when the
    text outside the changed parts is not identical byte for byte."""
    differ = [p for p in PARTS if base.parts[p] != variant.parts[p]]
    allowed = set(variant.changed) | set(base.changed)
    if base.condition.request != variant.condition.request:
        allowed.add("question_b")
    stray = [p for p in differ if p not in allowed]
    if stray:
        raise PromptError(f"{variant.name} differs from {base.name} outside its changed parts: "
                          f"{', '.join(stray)}")
    kept = [p for p in PARTS if p not in differ]
    outside_base = "".join(base.parts[p] for p in kept).encode("utf-8")
    outside_var = "".join(variant.parts[p] for p in kept).encode("utf-8")
    if outside_base != outside_var:  # pragma: no cover - implied by the part comparison
        raise PromptError(f"{variant.name}: text outside {', '.join(differ)} differs from {base.name}")
    # the joined text must be the parts in order, nothing added or lost
    for prompt in (base, variant):
        if _TURN_BREAK.join(prompt.turns) != "".join(prompt.parts[p] for p in PARTS):
            raise PromptError(f"{prompt.name}: turns do not join to its parts")
    return differ



def messages(prompt: Prompt, replies: list[str] | None = None) -> list[dict]:
    """The chat messages for the last turn: each earlier turn's message and its reply, then
    the last turn's message (the image goes with the first message, by the caller)."""
    replies = replies or []
    if len(replies) != len(prompt.turns) - 1:
        raise PromptError(f"{prompt.name} has {len(prompt.turns)} turns: needs "
                          f"{len(prompt.turns) - 1} earlier replies, got {len(replies)}")
    out: list[dict] = []
    for turn, reply in zip(prompt.turns[:-1], replies, strict=True):
        out += [{"role": "user", "content": turn}, {"role": "assistant", "content": reply}]
    return out + [{"role": "user", "content": prompt.turns[-1]}]
