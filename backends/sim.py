"""``sim``: a seeded, simulated respondent for offline runs, tests and power analysis.

It sees the truth through ``Request.oracle``, a typed side channel (``engine.oracle``) that
real backends never read and that is never sent, cached or logged. Each kind of truth is
answered by the simulator task its ``task`` names (SceneFunRI's: ``.sim_tasks``). Its
behaviour is set by explicit knobs (below), and every output labels it a simulation.
Deterministic given the seed and the whole request (images and overlays included).

Spec: ``sim[:PROFILE][,knob=value,...]``, e.g. ``sim``, ``sim:strong``, ``sim:default,skill=0.9``.
A benchmark adds its own tasks (:func:`task`) and knobs with a prefix (:func:`register_knobs`)
in a module listed under the entry-point group ``unseen.sim_tasks``: the Director Task's are
spelled ``dir_...`` (``sim:director-strong,dir_uplift=0.6``, ``evals.director.sim_tasks``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..engine.backend import Capabilities, ProviderError
from ..engine.cache import request_key
from ..engine.oracle import KNOBS as EXTRA_KNOBS
from ..engine.oracle import PROFILES, TASKS, SimAnswer, register_knobs
from ..engine.oracle import sim_task as task
from ..engine.types import Reply, Request, Usage
from .base import BackendConfigError, BaseBackend, provider

__all__ = ["EXTRA_KNOBS", "PROFILES", "TASKS", "Sim", "SimAnswer", "SimKnobs", "parse_sim_spec",
           "register_knobs", "task"]


class SimKnobs(BaseModel):
    """What the simulated respondent does. Effects are parameters, not findings."""

    # finite numbers only, probabilities in [0, 1]: a knob of nan or 2 is refused, never run
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    skill: float = Field(0.35, ge=0, le=1)  # chance a box is placed near the truth
    spread: float = Field(0.6, ge=0)  # centre jitter of a placed box, in target sizes
    size: float = Field(2.5, gt=0)  # box side relative to the target's side
    size_jitter: float = Field(0.25, ge=0)  # log-normal spread of that size
    format_noise: float = Field(0.15, ge=0, le=1)  # chance the JSON is fenced, wrapped or bare
    unparseable: float = Field(0.03, ge=0, le=1)  # chance the reply holds no box at all
    box_format: str = "norm1000"  # the convention it answers in
    delay_s: float = Field(0.0, ge=0)  # simulated latency
    seed: int = 0
    # how a prompt's cues (engine.oracle.Cue) move `skill` (simulated effects, not findings
    # about models): hidden, commonsense, reasoning, reflection
    hidden_gain: float = Field(0.15, ge=-1, le=1)
    common_gain: float = Field(-0.05, ge=-1, le=1)
    cot_gain: float = Field(0.05, ge=-1, le=1)
    reflect_gain: float = Field(0.05, ge=-1, le=1)


# the simulator's own profiles; a benchmark registers its own (``register_knobs``)
PROFILES.update({
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
})

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

    @property  # in place of BaseBackend's attribute: the tasks registered so far
    def answers(self) -> frozenset[str]:  # type: ignore[override]
        """The tasks it answers: the ``unseen.sim_tasks`` group's and any registered since."""
        return frozenset(TASKS)

    @property
    def seed(self) -> int:
        return self.knobs.seed

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
        instance = request.oracle.instance if request.oracle is not None else None
        blob = json.dumps([self.knobs.seed, instance, request_key("sim", "", request)],
                          separators=(",", ":"))
        return random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))

    async def complete(self, request: Request) -> Reply:
        truth = request.oracle
        if truth is None or truth.task not in TASKS:
            raise ProviderError("client", "the sim backend needs a strategy that puts a truth "
                                "on its requests (README: Making a strategy answerable "
                                f"offline); task {truth.task if truth else None!r} unknown")
        if self.knobs.delay_s > 0:
            await asyncio.sleep(self.knobs.delay_s)
        answer = TASKS[truth.task](self, truth, self._rng(request))
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
        if prefix is None and k not in SimKnobs.model_fields:
            # a benchmark's knob by its own name (``uplift``, as ``director power`` lists
            # it): the one registered set that has it; its prefix (``dir_uplift``) works too
            owners = [p for p, model in EXTRA_KNOBS.items() if k in model.model_fields]
            if len(owners) == 1:
                grouped[owners[0]][k] = values.pop(k)
                continue
        if prefix is not None:
            grouped[prefix][k.removeprefix(prefix)] = values.pop(k)
    extras: dict[str, BaseModel] = {}
    specs: list[tuple[str, type[BaseModel], dict[str, Any]]] = [
        ("", SimKnobs, values), *((p, EXTRA_KNOBS[p], v) for p, v in grouped.items() if v)]
    for prefix, model, given in specs:
        try:
            extras[prefix] = model(**given)
        except ValidationError as exc:
            first = exc.errors()[0]
            knob = f"{prefix}{first['loc'][0]}"
            raise BackendConfigError(f"bad sim knob {knob!r}: {first['msg']}") from None
    knobs = extras.pop("")
    return name, knobs, extras  # type: ignore[return-value]


@provider("sim", lambda: "sim[:PROFILE][,knob=value...]  (offline simulation; profiles: "
          + ", ".join(PROFILES) + ")")
def _sim(target: str, *, spec: str, box_format: str | None = None, **_: Any) -> Sim:
    name, knobs, extras = parse_sim_spec(target)
    if box_format:
        knobs = knobs.model_copy(update={"box_format": box_format})
    overrides = ",".join(p.strip() for p in target.split(",") if "=" in p)
    return Sim(knobs, name, spec=spec, extras=extras, overrides=overrides)
