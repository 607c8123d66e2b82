"""The simulated Director respondent's replies: the outcomes of its probability model
(:mod:`.respondent`) as reply text (:func:`respond`), with a reasoning trace
(:func:`respond_with_trace`). ``sim`` answers the ``director`` task with them
(:mod:`..sim_tasks`). The effects are knobs, not findings.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ..task.oracle import DirectorTruth
from .respondent import DirectorKnobs, choice_role, plan, sample, scene_offsets
from .traces import sim_codes, write_trace

_PROSE_BEFORE = ("Looking at the picture, the partition blocks part of the director's view.",
                 "Let me work out what the director can see first.", "Here is my answer:")
_PROSE_AFTER = ("I hope this helps.", "That is my final answer.", "(Based on the picture.)")
_UNANSWERED = ("I cannot tell from the picture which block is meant.",
               "The blocks are hard to read in this image.", '{"answer": "unclear"}')


def format_reply(fields: dict[str, Any], noise: float, rng: random.Random) -> str:
    """The JSON of ``fields``, with probability ``noise`` in a noisier form that
    ``parse_reply`` still reads: fenced, wrapped in prose, numbers in quotes, or after a draft."""
    body = json.dumps(fields)
    if rng.random() >= noise:
        return body
    style = rng.randrange(4)
    if style == 0:
        return f"```json\n{json.dumps(fields, indent=2)}\n```"
    if style == 1:
        return f"{rng.choice(_PROSE_BEFORE)}\n{body}\n{rng.choice(_PROSE_AFTER)}"
    if style == 2:
        quoted = {k: [str(x) for x in v] if isinstance(v, list) else str(v)
                  for k, v in fields.items()}
        return json.dumps(quoted)
    draft = {k: v for k, v in fields.items() if k != "block"} or {"note": "draft"}
    return f"Draft: {json.dumps(draft)}\nFinal answer:\n```\n{body}\n```"


def unanswered_reply(fields: list[str] | tuple[str, ...], rng: random.Random) -> str:
    """A reply that ``parse_reply`` reads as unanswered for ``fields``."""
    style = rng.randrange(3)
    if style == 0:
        return rng.choice(_UNANSWERED)
    if style == 1:  # a field missing
        return json.dumps({f: None for f in fields[:-1]} | {"reason": "not sure"})
    return "{" + ", ".join(f'"{f}": ' for f in fields)[:-2] + "..."  # cut off


def _reply(knobs: DirectorKnobs, truth: DirectorTruth, rng: random.Random,
           seed: int) -> tuple[str, dict[str, Any] | None]:
    """The reply text (as :func:`respond`) and the full outcome it was drawn from (``None``
    for an unanswered reply)."""
    fields = list(truth.fields)
    if rng.random() >= knobs.answer_rate:
        return unanswered_reply(fields, rng), None
    scene = truth.instance or ""
    offset, acc_offset = scene_offsets(knobs, scene, seed)
    full = sample(knobs, truth.condition, truth.key.as_dict(), rng, offset, acc_offset, scene)
    return format_reply({f: full[f] for f in fields}, knobs.format_noise, rng), full


def respond(knobs: DirectorKnobs, truth: DirectorTruth, rng: random.Random,
            seed: int = 0) -> str:
    """The reply text to one request of the ``director`` strategy (``truth``: its
    ``Request.oracle``): the fields of ``truth.fields`` only. Each turn is answered with
    probability ``answer_rate``; a turn's fields come from one outcome drawn with ``rng``."""
    return _reply(knobs, truth, rng, seed)[0]


def respond_with_trace(knobs: DirectorKnobs, truth: DirectorTruth, rng: random.Random,
                       seed: int = 0) -> tuple[str, str | None]:
    """:func:`respond`'s reply text (the same text for the same ``rng`` state), and a
    reasoning trace where the turn asks a block, the reply is answered and a draw falls under
    ``traces`` (:mod:`.respondent`, "Reasoning traces"); else ``None``."""
    text, full = _reply(knobs, truth, rng, seed)
    if full is None or "block" not in truth.fields:
        return text, None
    # every draw for the trace comes from its own generator, seeded after the text is drawn,
    # so the text stays what respond() gives
    trng = random.Random(rng.getrandbits(64))
    if trng.random() >= knobs.traces:
        return text, None
    key = truth.key.as_dict()
    pl = plan(truth.condition)
    block = int(full["block"])
    report = full.get(pl.report) if pl.report else None
    visible = list(report) if report is not None else list(key["visible_digits"])
    codes = sim_codes(choice_role(block, key, truth.instance or ""), report,
                      pl.report is not None or pl.count, knobs, trng,
                      chosen_hidden=block == key["hidden_digit"])
    return text, write_trace(codes, block, int(key["hidden_digit"]), visible, trng)
