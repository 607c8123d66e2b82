"""The simulated Director respondent's replies, and the simulator's Director tasks.

The respondent's probability model is :mod:`.respondent`; here its outcomes become reply
text (:func:`respond`, with a reasoning trace: :func:`respond_with_trace`), and ``sim`` learns
the Director Task: the ``director`` task (one turn of a condition, :class:`.oracle.DirectorTruth`),
the ``director-code`` task (a batch of traces coded by reading them back,
:class:`.oracle.CoderTruth`), the ``dir_`` knobs and the ``director-*`` profiles. The module is
listed under the entry-point group ``unseen.sim_tasks``, so the simulator knows the Director
Task whichever module was imported first. The effects are knobs, not findings.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ...engine.oracle import Respondent, SimAnswer, register_knobs, sim_task
from .coding.coder import sim_code
from .oracle import CoderTruth, DirectorTruth
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


# --- the simulator's Director tasks -----------------------------------------------------------

#: Simulated Director respondents (knobs: :class:`.respondent.DirectorKnobs`, spelled ``dir_``).
SIM_PROFILES = {
    "director-flat": {"dir_uplift": 0.0, "dir_uplift_mean": 0.0, "dir_follow_report": 0.0},
    "director-strong": {"dir_uplift": 0.8, "dir_uplift_mean": 0.03, "dir_want_factor": 0.5,
                        "dir_will_factor": 1.1, "dir_combined_factor": 0.05},
    "director-oracle": {"dir_vis_acc": 1.0, "dir_hidden_novis": 0.0, "dir_uplift": 0.0,
                        "dir_hidden_mean": 0.0, "dir_uplift_mean": 0.0, "dir_miss": 0.0,
                        "dir_answer_rate": 1.0, "dir_format_noise": 0.0, "dir_count_acc": 1.0,
                        "dir_top_digit_pull": 0.0, "dir_scene_sd": 0.0, "dir_acc_scene_sd": 0.0},
}
register_knobs("dir_", DirectorKnobs, SIM_PROFILES)


@sim_task("director")
def answer_director(sim: Respondent, truth: DirectorTruth, rng: random.Random) -> SimAnswer:
    """One turn of a Director condition: the JSON fields of ``truth.fields`` only, drawn
    from the respondent model with the ``dir_`` knobs; scene offsets from the scene id and
    ``seed``. A turn that chooses a block carries a reasoning trace (``dir_traces``)."""
    text, trace = respond_with_trace(sim.extra("dir_"), truth, rng, seed=sim.seed)
    return SimAnswer(text, reasoning=trace)


@sim_task("director-code")
def answer_coding(sim: Respondent, truth: CoderTruth, rng: random.Random) -> str:
    """A batch coded by reading the simulator's own traces back (``dir_coder_error``: the
    share of items given a wrong reading)."""
    return sim_code(truth.items, truth.second_pass, sim.extra("dir_").coder_error, rng)
