"""The simulator's SceneFunRI tasks: a box, a choice between regions, grid cells to eliminate.

Each answers one kind of truth (``engine.oracle``: :class:`BoxTruth`, :class:`ChoiceTruth`,
:class:`CellsTruth`) from the knobs of ``sim`` (:class:`.sim.SimKnobs`); found through the
entry-point group ``unseen.sim_tasks`` like any benchmark's tasks. The effects are knobs of a
simulation, not findings about models.
"""

from __future__ import annotations

import json
import math
import random

from ..engine.backend import ProviderError
from ..engine.box import Box, BoxError
from ..engine.oracle import BoxTruth, CellsTruth, ChoiceTruth, Cue, Respondent, sim_task
from .sim import SimKnobs

_NATIVE_KEY = {"gemini": "box_2d", "qwen2.5": "bbox_2d"}


def _fmt(values: list[float], convention: str) -> list[float | int]:
    return [round(v, 3) for v in values] if convention == "unit" else [round(v) for v in values]


def gains(k: SimKnobs) -> dict[Cue, float]:
    """How much each cue moves ``skill``: one knob per cue."""
    return {Cue.HIDDEN: k.hidden_gain, Cue.COMMONSENSE: k.common_gain,
            Cue.REASONING: k.cot_gain, Cue.REFLECTION: k.reflect_gain}


def effective_skill(k: SimKnobs, cues: frozenset[Cue] | set[Cue] = frozenset()) -> float:
    """``skill`` plus the gain of each cue the prompt carries, clipped to [0, 1]: e.g. a
    prompt that says the target is hidden and gives commonsense knowledge (``direct``'s
    ``both``) gets ``skill + hidden_gain + common_gain``."""
    gain = 0.0
    for cue, g in gains(k).items():  # a fixed order: the same sum for the same cues
        if cue in cues:
            gain += g
    return min(1.0, max(0.0, k.skill + gain))


def _target(truth: BoxTruth | ChoiceTruth | CellsTruth) -> Box:
    if truth.box is None:  # the client's fault: a request about an instance with no truth
        raise ProviderError("client", f"instance {truth.instance!r} has no truth box: the sim "
                            "backend has nothing to answer from")
    return Box.of(truth.box)


_REASONING = (
    "Step 1. The task needs a small functional part of the furniture it names.\n"
    "Step 2. It is not visible in the image; something stands in front of it.\n"
    "Step 3. From where such parts usually are and the furniture in view, it must be here.\n"
)


@sim_task("box")
def answer_box(sim: Respondent, truth: BoxTruth, rng: random.Random) -> str:
    """A box near the truth with probability ``skill`` (moved by the prompt's cues), else
    a guess, in its convention; a prompt that asks for reasoning gets reasoning first."""
    k: SimKnobs = sim.knobs
    skill = effective_skill(k, truth.cues)
    w, h = truth.width, truth.height
    target = _target(truth)
    if rng.random() < k.unparseable:
        return rng.choice(["I cannot determine where the object is.",
                           "The object is not visible in the image.", "Sorry, unsure."])
    scale = math.exp(rng.gauss(0, k.size_jitter))
    bw = min(w, max(4.0, target.width * k.size * scale))
    bh = min(h, max(4.0, target.height * k.size * scale))
    if rng.random() < skill:
        cx = target.center[0] + rng.gauss(0, k.spread * target.width)
        cy = target.center[1] + rng.gauss(0, k.spread * target.height)
    else:
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    cx = min(max(cx, bw / 2), w - bw / 2)
    cy = min(max(cy, bh / 2), h - bh / 2)
    try:
        box = Box(x1=cx - bw / 2, y1=cy - bh / 2, x2=cx + bw / 2, y2=cy + bh / 2).clip(w, h)
    except BoxError:
        box = Box.full(w, h)
    values = _fmt(box.to_convention(k.box_format, w, h), k.box_format)
    key = _NATIVE_KEY.get(k.box_format, "box")
    body = json.dumps({key: values})
    if Cue.REASONING in truth.cues:
        return _REASONING + "Final answer: " + body
    if rng.random() < k.format_noise:
        style = rng.randrange(3)
        if style == 0:
            return f"```json\n{body}\n```"
        if style == 1:
            return f"The target should be just behind the furniture. Answer: {body} (estimated)."
        return json.dumps(values)
    return body


@sim_task("choice")
def answer_choice(sim: Respondent, truth: ChoiceTruth,
                  rng: random.Random) -> str | tuple[str, list]:
    """Pick among labelled regions: with probability ``skill`` the right one (the region
    holding less of the truth when eliminating, more when keeping; ties go to the first),
    else a random one; offered "C" (unsure), it takes it, with probability ``skill``, when
    the truth lies across both regions."""
    k: SimKnobs = sim.knobs
    if rng.random() < k.unparseable:
        return rng.choice(["Both regions look equally likely.", "I cannot tell."])
    target = _target(truth)
    cover = [target.intersection(Box.of(r)) for r in truth.regions]
    labels = truth.labels
    # offered a way out, a calibrated respondent takes it when the target straddles the cut
    if "C" in truth.options and all(c > 0 for c in cover) and rng.random() < k.skill:
        return "C"
    if truth.mode == "eliminate":
        right = labels[min(range(len(cover)), key=lambda i: (cover[i], i))]
    else:
        right = labels[max(range(len(cover)), key=lambda i: (cover[i], -i))]
    label = right if rng.random() < k.skill else rng.choice(labels)
    # log-probabilities, as a calibrated respondent would give them: surer when right
    q = rng.uniform(0.6, 0.97) if label == right else rng.uniform(0.5, 0.75)
    others = [x for x in labels if x != label]
    logprobs = [{"token": label, "logprob": math.log(q), "top": [
        {"token": label, "logprob": math.log(q)},
        *({"token": x, "logprob": math.log((1 - q) / len(others))} for x in others)]}]
    text = label
    if rng.random() < k.format_noise:
        text = rng.choice([f"Region {label}", f"**{label}**", json.dumps({"choice": label}),
                           f"The answer is {label}."])
    return text, logprobs


@sim_task("cells")
def answer_cells(sim: Respondent, truth: CellsTruth, rng: random.Random) -> str:
    """Name grid cells to eliminate: each cell without the target is named with probability
    ``skill``, each cell holding part of it with probability (1 - skill) / 2; at least one
    cell is always kept."""
    k: SimKnobs = sim.knobs
    if rng.random() < k.unparseable:
        return "All cells look plausible."
    target = _target(truth)
    gone = []
    for i, cell in enumerate(truth.regions, start=1):
        holds = target.intersection(Box.of(cell)) > 0
        if rng.random() < ((1 - k.skill) / 2 if holds else k.skill):
            gone.append(i)
    if len(gone) == len(truth.regions):
        gone.pop(rng.randrange(len(gone)))
    return json.dumps({"eliminate": gone})
