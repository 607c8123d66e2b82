"""``sim``: a seeded, simulated respondent for offline runs, tests and power analysis.

It sees the truth through ``Request.oracle``, a side channel that real backends never read
and that is never sent, cached or logged. Its behaviour is set by explicit knobs (below), and
every output labels it a simulation. Deterministic given the seed and the whole request
(images and overlays included).

Spec: ``sim[:PROFILE][,knob=value,...]``, e.g. ``sim``, ``sim:strong``, ``sim:default,skill=0.9``.
A benchmark adds its own task (:func:`task`) and knobs with a prefix (:func:`register_knobs`):
the Director Task's are spelled ``dir_...`` (``sim:director-strong,dir_uplift=0.6``), wired in
by ``unseen.director``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..engine.backend import Capabilities, ProviderError
from ..engine.box import Box, BoxError
from ..engine.cache import request_key
from ..engine.types import Reply, Request, Usage
from .base import BackendConfigError, BaseBackend, provider


class SimKnobs(BaseModel):
    """What the simulated respondent does. Effects are parameters, not findings."""

    model_config = ConfigDict(extra="forbid")
    skill: float = 0.35  # chance a box is placed near the truth rather than guessed
    spread: float = 0.6  # centre jitter of a placed box, in target sizes
    size: float = 2.5  # box side relative to the target's side
    size_jitter: float = 0.25  # log-normal spread of that size
    format_noise: float = 0.15  # chance the JSON is fenced, wrapped in prose or bare
    unparseable: float = 0.03  # chance the reply holds no box at all
    box_format: str = "norm1000"  # the convention it answers in
    delay_s: float = 0.0  # simulated latency
    seed: int = 0
    # how prompt variants move `skill` (simulated effects, not findings about models)
    hidden_gain: float = 0.15
    common_gain: float = -0.05
    cot_gain: float = 0.05
    reflect_gain: float = 0.05


PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "weak": {"skill": 0.15, "size": 3.0},
    "strong": {"skill": 0.7, "spread": 0.4, "size": 2.0},
    "oracle": {"skill": 1.0, "spread": 0.0, "size": 1.5, "size_jitter": 0.0,
               "format_noise": 0.0, "unparseable": 0.0},
    "flat": {"hidden_gain": 0.0, "common_gain": 0.0, "cot_gain": 0.0, "reflect_gain": 0.0},
    "noisy": {"format_noise": 0.6, "unparseable": 0.15},
    "gemini": {"box_format": "gemini"},
    "qwen2.5": {"box_format": "qwen2.5"},
    "unit": {"box_format": "unit"},
}

_NATIVE_KEY = {"gemini": "box_2d", "qwen2.5": "bbox_2d"}


@dataclass(frozen=True)
class SimAnswer:
    """An answer with more than its text: log-probabilities of its tokens, a reasoning trace
    (``Reply.reasoning``, as reasoning models return one)."""

    text: str
    logprobs: list | None = None
    reasoning: str | None = None


# task name → answer function; later benchmarks add their own tasks
# an answer is the reply text, (text, log-probabilities of its tokens), or a SimAnswer
Answer = Callable[["Sim", dict[str, Any], random.Random], "str | tuple[str, list] | SimAnswer"]
TASKS: dict[str, Answer] = {}


def task(name: str) -> Callable[[Answer], Answer]:
    def deco(fn: Answer) -> Answer:
        TASKS[name] = fn
        return fn

    return deco


# knob prefix → the knobs a benchmark's task reads (e.g. "dir_" → the Director respondent's)
EXTRA_KNOBS: dict[str, type[BaseModel]] = {}


def register_knobs(prefix: str, knobs: type[BaseModel],
                   profiles: dict[str, dict[str, Any]] | None = None) -> None:
    """Knobs of a benchmark's task, spelled ``<prefix><knob>`` in a spec, and profiles that
    may set them (and the box knobs)."""
    EXTRA_KNOBS[prefix] = knobs
    PROFILES.update(profiles or {})


def _fmt(values: list[float], convention: str) -> list[float | int]:
    return [round(v, 3) for v in values] if convention == "unit" else [round(v) for v in values]


def effective_skill(k: SimKnobs, prompt: str | None) -> float:
    """``skill`` moved by the prompt variant: hidden, common, both, cot or reflect."""
    gain = {"hidden": k.hidden_gain, "common": k.common_gain,
            "both": k.hidden_gain + k.common_gain, "cot": k.cot_gain,
            "reflect": k.cot_gain + k.reflect_gain}.get(prompt or "", 0.0)
    return min(1.0, max(0.0, k.skill + gain))


_REASONING = (
    "Step 1. The task needs a small functional part of the furniture it names.\n"
    "Step 2. It is not visible in the image; something stands in front of it.\n"
    "Step 3. From where such parts usually are and the furniture in view, it must be here.\n"
)


@task("box")
def answer_box(sim: Sim, oracle: dict[str, Any], rng: random.Random) -> str:
    """A box near the truth with probability ``skill`` (moved by the prompt variant), else
    a guess, in its convention; chain-of-thought prompts get reasoning before the box."""
    k = sim.knobs
    prompt = oracle.get("prompt")
    skill = effective_skill(k, prompt)
    w, h = oracle["width"], oracle["height"]
    truth = Box.of(oracle["truth"])
    if rng.random() < k.unparseable:
        return rng.choice(["I cannot determine where the object is.",
                           "The object is not visible in the image.", "Sorry, unsure."])
    scale = math.exp(rng.gauss(0, k.size_jitter))
    bw = min(w, max(4.0, truth.width * k.size * scale))
    bh = min(h, max(4.0, truth.height * k.size * scale))
    if rng.random() < skill:
        cx = truth.center[0] + rng.gauss(0, k.spread * truth.width)
        cy = truth.center[1] + rng.gauss(0, k.spread * truth.height)
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
    if prompt in ("cot", "reflect"):
        return _REASONING + "Final answer: " + body
    if rng.random() < k.format_noise:
        style = rng.randrange(3)
        if style == 0:
            return f"```json\n{body}\n```"
        if style == 1:
            return f"The target should be just behind the furniture. Answer: {body} (estimated)."
        return json.dumps(values)
    return body


@task("choice")
def answer_choice(sim: Sim, oracle: dict[str, Any],
                  rng: random.Random) -> str | tuple[str, list]:
    """Pick among labelled regions: with probability ``skill`` the right one (the region
    holding less of the truth when eliminating, more when keeping; ties go to the first),
    else a random one; offered "C" (unsure), it takes it, with probability ``skill``, when
    the truth lies across both regions."""
    k = sim.knobs
    if rng.random() < k.unparseable:
        return rng.choice(["Both regions look equally likely.", "I cannot tell."])
    truth = Box.of(oracle["truth"])
    cover = [truth.intersection(Box.of(r)) for r in oracle["regions"]]
    labels = oracle["labels"]
    # offered a way out, a calibrated respondent takes it when the target straddles the cut
    if "C" in oracle.get("options", ()) and all(c > 0 for c in cover) and rng.random() < k.skill:
        return "C"
    if oracle.get("mode", "eliminate") == "eliminate":
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


@task("cells")
def answer_cells(sim: Sim, oracle: dict[str, Any], rng: random.Random) -> str:
    """Name grid cells to eliminate: each cell without the target is named with probability
    ``skill``, each cell holding part of it with probability (1 - skill) / 2; at least one
    cell is always kept."""
    k = sim.knobs
    if rng.random() < k.unparseable:
        return "All cells look plausible."
    truth = Box.of(oracle["truth"])
    gone = []
    for i, cell in enumerate(oracle["regions"], start=1):
        holds = truth.intersection(Box.of(cell)) > 0
        if rng.random() < ((1 - k.skill) / 2 if holds else k.skill):
            gone.append(i)
    if len(gone) == len(oracle["regions"]):
        gone.pop(rng.randrange(len(gone)))
    return json.dumps({"eliminate": gone})


class Sim(BaseBackend):
    provider = "sim"
    simulated = True
    cacheable = False  # instant and deterministic: caching would only hide changes
    capabilities = Capabilities(json_schema=True, choices=True, logprobs=True)

    def __init__(self, knobs: SimKnobs, profile_name: str, spec: str,
                 extras: dict[str, BaseModel] | None = None, overrides: str = ""):
        self.knobs = knobs
        self.extras = extras or {}
        self.profile_name = profile_name
        # the knobs set beyond the profile belong to the name: two respondents that differ
        # in a knob are two rows of every table, never one pooled row
        model = f"sim-{profile_name}" + (f",{overrides}" if overrides else "")
        super().__init__(model, box_format=knobs.box_format, spec=spec)

    @property
    def answers(self) -> frozenset[str]:
        """The tasks registered so far: each benchmark teaches the simulator its own."""
        return frozenset(TASKS)

    def extra(self, prefix: str) -> Any:
        """The knobs registered under ``prefix``: as the spec set them, else the defaults."""
        return self.extras.get(prefix) or EXTRA_KNOBS[prefix]()

    def describe(self) -> dict[str, Any]:
        extras = {p: k.model_dump() for p, k in self.extras.items()}
        return {**super().describe(), "profile": self.profile_name,
                "knobs": self.knobs.model_dump(), **({"extra_knobs": extras} if extras else {}),
                "note": "SIMULATED respondent"}

    def _rng(self, request: Request) -> random.Random:
        """A generator seeded by the seed and everything that tells two requests apart: the
        messages (image bytes and overlay specs by digest, as the reply cache keys them),
        decoding, sample and draw. Two SPoE rounds with the same text but other regions
        drawn on the image thus get independent draws; the same request, the same draw."""
        oracle = request.oracle or {}
        blob = json.dumps([self.knobs.seed, oracle.get("instance"),
                           request_key("sim", "", request)], separators=(",", ":"))
        return random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))

    async def complete(self, request: Request) -> Reply:
        oracle = request.oracle
        if not oracle or oracle.get("task") not in TASKS:
            raise ProviderError("client", "the sim backend needs a strategy that supports it "
                                f"(task {oracle.get('task') if oracle else None!r} unknown)")
        if self.knobs.delay_s > 0:
            await asyncio.sleep(self.knobs.delay_s)
        answer = TASKS[oracle["task"]](self, oracle, self._rng(request))
        if not isinstance(answer, SimAnswer):
            text, logprobs = answer if isinstance(answer, tuple) else (answer, None)
            answer = SimAnswer(text, logprobs)
        text, logprobs, reasoning = answer.text, answer.logprobs, answer.reasoning
        if not request.decoding.logprobs:
            logprobs = None
        words = sum(len(m.text.split()) for m in request.messages)
        usage = Usage(input_tokens=words, output_tokens=len(text.split()),
                      reasoning_tokens=len(reasoning.split()) if reasoning else 0)
        return Reply(text=text, reasoning=reasoning, usage=usage, latency_s=self.knobs.delay_s,
                     finish_reason="stop", logprobs=logprobs)


def parse_sim_spec(target: str) -> tuple[str, SimKnobs, dict[str, BaseModel]]:
    """``PROFILE,knob=value,...`` → (profile name, knobs, registered knobs by prefix)."""
    parts = [p for p in target.split(",") if p] if target else []
    name = "default"
    if parts and "=" not in parts[0]:
        name = parts.pop(0)
    if name not in PROFILES:
        raise BackendConfigError(f"unknown sim profile {name!r}; known: {', '.join(PROFILES)}")
    values: dict[str, Any] = dict(PROFILES[name])
    for p in parts:
        k, eq, v = p.partition("=")
        if not eq:
            raise BackendConfigError(f"sim options are knob=value, got {p!r}")
        values[k.strip()] = v.strip()
    grouped: dict[str, dict[str, Any]] = {prefix: {} for prefix in EXTRA_KNOBS}
    for k in list(values):
        prefix = next((p for p in EXTRA_KNOBS if k.startswith(p)), None)
        if prefix is not None:
            grouped[prefix][k.removeprefix(prefix)] = values.pop(k)
    extras = {}
    for prefix, model, given in [("", SimKnobs, values),
                                 *((p, EXTRA_KNOBS[p], v) for p, v in grouped.items() if v)]:
        try:
            extras[prefix] = model(**given)
        except ValidationError as exc:
            first = exc.errors()[0]
            knob = f"{prefix}{first['loc'][0]}"
            raise BackendConfigError(f"bad sim knob {knob!r}: {first['msg']}") from None
    knobs = extras.pop("")
    return name, knobs, extras  # type: ignore[return-value]


@provider("sim", "sim[:PROFILE][,knob=value...]  (offline simulation; profiles: "
          + ", ".join(PROFILES) + ")")
def _sim(target: str, *, spec: str, box_format: str | None = None, **_: Any) -> Sim:
    name, knobs, extras = parse_sim_spec(target)
    if box_format:
        knobs = knobs.model_copy(update={"box_format": box_format})
    overrides = ",".join(p.strip() for p in target.split(",") if "=" in p)
    return Sim(knobs, name, spec=spec, extras=extras, overrides=overrides)
