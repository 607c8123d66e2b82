"""A probability model of a Director Task respondent, shared by the ``sim`` backend and the
power simulation (:mod:`..analysis.power`). The effects are knobs (:class:`DirectorKnobs`), not findings.

One reply, given the condition ``<request>[/<question>][+<insert>]`` and the scene's key:

1. **Answered** with probability ``answer_rate`` per turn (a two-turn dialogue needs both).
2. **Report** (where the condition asks ``visible`` or ``known``): exactly right with
   probability ``a`` (the scene's accuracy); else wrong, adding the hidden block with
   probability ``error_adds_hidden``, or dropping one visible block (each equally likely).
3. **Count** (``count`` question): right with probability ``count_acc``, else one off (up or
   down, equally likely).
4. **Block choice**: with probability ``h`` (the scene's own-view rate) the *own-view reading*
   takes the largest block on the table, which is the hidden block in the main set. A reply
   whose report adds the hidden block (so it believes the director sees every block) takes that
   block anyway with probability ``follow_report`` (same reply only: not in ``twoturn``, where the
   choice comes in a later turn and is drawn independently of the report). Any other choice takes
   the director-view block, except for a share ``miss`` that misses it: a miss takes the
   largest-digit visible block (where that is not the director-view block) with probability
   ``digit_reading``, else another visible block (each equally likely); where only one of the two
   exists, the miss takes that one.

**The own-view rate of a condition** (a population mean over scenes, before the digit pull):

    rate = insert_factor * (base(request) + uplift(request) * question_factor(question))

* ``base``: ``hidden_novis`` for the move-type requests (``move``, ``move-want``,
  ``move-will``), ``hidden_mean`` for ``mean``;
* ``uplift``: ``uplift`` under ``move``, ``uplift * will_factor`` under ``move-will`` (naming the
  model's own move: more), ``uplift * want_factor`` under ``move-want`` (naming what the director
  wants: less), ``uplift_mean`` under ``mean``;
* ``question_factor``: 1 for ``vis``, ``after_factor`` for ``after``, ``twoturn_factor`` for
  ``twoturn``, ``know_factor`` for ``know``, ``stated_factor`` for ``stated``, ``count_factor``
  for ``count``, 0 for ``novis``;
* ``insert_factor``: 1 without an insert, else ``combined_factor``, ``knowledge_factor``,
  ``reference_factor`` or ``padding_factor``;

clipped to [0, 1]. Visibility accuracy is ``vis_acc``, plus ``acc_move`` under the move-type
requests, clipped to [0, 1].

**Scenes differ.** Each scene has two logit offsets, ``scene_sd * z1`` on the own-view rate and
``acc_scene_sd * z2`` on the accuracy (z1, z2 independent standard normals), deterministic per
scene id and seed (:func:`scene_offsets`) and shared by every condition: this is what makes
replies of one scene correlated and clustering matter. A condition's logit intercept is solved
so that the *mean over scenes* equals its rate above (:func:`intercept`), so ``uplift`` is the
change in the population's own-view rate. In scenes where the hidden block carries the largest
digit on the table, the own-view logit gets ``top_digit_pull`` more (a reading of "largest" by
digit would also take it).

**Which block is largest on the table.** The own-view target is ``key["largest_digit"]`` when
present (scene sets loaded by ``dataset`` and the power simulation carry it), else, in a scene
of the rotated set (``rotated-NNN`` with NNN % 3 != 0: the hidden block is the middle or
smallest one, see ``sets.py``), the director-view block, else the hidden block (main and
rearranged sets).

Every probability is affine in ``h`` and in ``a`` separately, so with independent offsets the
expectation over scenes of any outcome probability is the same function of E[h] and E[a]
(:func:`mean_rates`): :mod:`..analysis.power` computes its true differences that way, exactly.

**Reasoning traces.** :func:`.simulated.respond_with_trace` adds a reasoning trace to a share
``traces`` of the answered replies that choose a block (0: a provider that returns none), written to
latent codes of the codebook (:mod:`.traces`, :func:`.traces.sim_codes`) drawn from the chosen
block's role: the own-view block reads ``own_view`` (``prior_knowledge`` with probability
``trace_prior``), the director-view block ``director_view``, the largest-digit visible block
``largest_digit``, another block ``none``. A trace works out the director's view where the
condition asks a report or a count, else with probability ``trace_works_out``; it states the
hidden block unseen with probability ``trace_states_unseen`` after working out the view, and a
belief that the block is seen with probability ``trace_states_seen`` where it does not. The
reply text is the same as without the trace. ``coder_error`` is the simulated coder's.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from ..task.prompts import Condition, build, parse_condition
from .knobs import DirectorKnobs

#: Report kinds (index 0, 1, 2 of :attr:`RoleProbs.report`).
REPORTS = ("correct", "adds_hidden", "drops_one")
#: Choice roles (last index of :attr:`RoleProbs.choice`): the own-view target (the largest block
#: on the table), the director-view block, the largest-digit visible block, another visible one.
CHOICES = ("own", "dv", "ldv", "other")
#: The answer-key fields the model reads.
KEY_FIELDS = ("hidden_digit", "visible_digits", "director_view_digit", "largest_digit_visible",
              "apparent_size_flag", "digits", "largest_digit")

# --- conditions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What a condition asks, as the model needs it."""

    condition: Condition
    report: str | None  # "visible", "known" or None
    count: bool
    coupled: bool  # the choice can follow the report (same reply)
    turns: int
    fields: tuple[str, ...]  # every field over all turns
    fields_per_turn: tuple[tuple[str, ...], ...]

    @property
    def move_type(self) -> bool:
        return self.condition.request != "mean"


@lru_cache(maxsize=512)
def plan(condition: str | Condition) -> Plan:
    cond = parse_condition(condition) if isinstance(condition, str) else condition
    prompt = build(cond)
    fields = tuple(prompt.fields)
    report = "visible" if "visible" in fields else "known" if "known" in fields else None
    return Plan(cond, report, "count" in fields, report is not None and len(prompt.turns) == 1,
                len(prompt.turns), fields, tuple(tuple(t) for t in prompt.fields_per_turn))


def hidden_rate(knobs: DirectorKnobs, condition: str | Condition) -> float:
    """The own-view rate of ``condition``: a population mean over scenes, before the digit
    pull (module docstring)."""
    c = plan(condition).condition
    k = knobs
    if c.request == "mean":
        base, up = k.hidden_mean, k.uplift_mean
    else:
        base = k.hidden_novis
        up = k.uplift * {"move": 1.0, "move-will": k.will_factor, "move-want": k.want_factor}[c.request]
    q = {"vis": 1.0, "novis": 0.0, "after": k.after_factor, "twoturn": k.twoturn_factor,
         "know": k.know_factor, "stated": k.stated_factor, "count": k.count_factor}[c.question]
    ins = 1.0 if c.insert is None else getattr(k, f"{c.insert}_factor")
    return min(1.0, max(0.0, ins * (base + up * q)))


def accuracy_rate(knobs: DirectorKnobs, condition: str | Condition) -> float:
    """The report accuracy of ``condition``: a population mean over scenes."""
    shift = knobs.acc_move if plan(condition).move_type else 0.0
    return min(1.0, max(0.0, knobs.vis_acc + shift))


# --- scenes ------------------------------------------------------------------------------------

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
_ROTATED = re.compile(r"rotated-(\d+)")


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@lru_cache(maxsize=4096)
def intercept(p: float, sd: float) -> float:
    """The logit intercept l with E[expit(l + sd Z)] = p, Z standard normal (p in (0, 1))."""
    if sd == 0:
        return _logit(p)
    f = lambda lo: float(_WEIGHTS @ expit(lo + sd * _NODES)) - p  # noqa: E731
    return float(brentq(f, -60.0, 60.0, xtol=1e-12))


def scene_offsets(knobs: DirectorKnobs, scene_id: str, seed: int = 0) -> tuple[float, float]:
    """The scene's logit offsets (own-view rate, accuracy): deterministic in (seed, scene id)."""
    digest = hashlib.sha256(f"director-scene/{seed}/{scene_id}".encode()).digest()
    nd = NormalDist()
    z = [nd.inv_cdf((int.from_bytes(digest[i:i + 8], "big") + 0.5) / 2**64) for i in (0, 8)]
    return knobs.scene_sd * z[0], knobs.acc_scene_sd * z[1]


def own_view_digit(key: dict[str, Any], scene_id: str | None = None) -> int:
    """The largest block on the table (module docstring, "Which block is largest")."""
    if key.get("largest_digit") is not None:
        return int(key["largest_digit"])
    m = _ROTATED.fullmatch(scene_id or "")
    if m and int(m.group(1)) % 3 != 0:
        return int(key["director_view_digit"])
    return int(key["hidden_digit"])


@dataclass(frozen=True)
class Features:
    """Scene features the model reads, as arrays over scenes (or 0-d for one scene)."""

    own_is_hidden: np.ndarray  # the largest block on the table is the hidden one
    hidden_top: np.ndarray  # the hidden block carries the largest digit on the table
    has_ldv: np.ndarray  # a largest-digit visible block other than the director-view one
    n_other: np.ndarray  # visible blocks that are neither director-view nor largest-digit
    n_blocks: np.ndarray
    apparent: np.ndarray  # the answer key's apparent_size_flag

    @property
    def pulled(self) -> np.ndarray:
        """Scenes whose own-view logit gets ``top_digit_pull``."""
        return self.own_is_hidden & self.hidden_top

    def take(self, idx: np.ndarray) -> Features:
        return Features(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def digits_of(key: dict[str, Any]) -> list[int]:
    return sorted(key.get("digits") or [*key["visible_digits"], key["hidden_digit"]])


def features(keys: list[dict[str, Any]], scene_ids: list[str] | None = None) -> Features:
    ids: list[str | None] = list(scene_ids) if scene_ids else [None] * len(keys)
    rows = []
    for key, sid in zip(keys, ids, strict=True):
        digits = digits_of(key)
        has_ldv = key.get("largest_digit_visible") is not None
        rows.append((own_view_digit(key, sid) == key["hidden_digit"],
                     key["hidden_digit"] == max(digits), has_ldv,
                     len(key["visible_digits"]) - 1 - int(has_ldv), len(digits),
                     bool(key.get("apparent_size_flag"))))
    cols = list(zip(*rows, strict=True)) if rows else [()] * 6
    return Features(*(np.asarray(c, dtype=t) for c, t in
                      zip(cols, (bool, bool, bool, int, int, bool), strict=True)))


def scene_rates(knobs: DirectorKnobs, condition: str | Condition, feats: Features,
                offset: Any = 0.0, acc_offset: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(h, a): each scene's own-view rate and report accuracy, given its logit offsets."""
    p = hidden_rate(knobs, condition)
    shape = np.broadcast_shapes(feats.own_is_hidden.shape, np.shape(offset))
    if p <= 0.0 or p >= 1.0:
        h = np.full(shape, p)
    else:
        logit = intercept(p, knobs.scene_sd) + knobs.top_digit_pull * feats.pulled + offset
        h = np.broadcast_to(expit(logit), shape).astype(float)
    acc = accuracy_rate(knobs, condition)
    if acc <= 0.0 or acc >= 1.0:
        a = np.full(np.shape(acc_offset), acc)
    else:
        a = np.asarray(expit(intercept(acc, knobs.acc_scene_sd) + np.asarray(acc_offset)))
    return h, a


def mean_rates(knobs: DirectorKnobs, condition: str | Condition,
               feats: Features) -> tuple[np.ndarray, np.ndarray]:
    """(E[h], E[a]) per scene: the rates averaged over the scene offsets (Gauss-Hermite)."""
    column = Features(*(np.asarray(getattr(feats, f))[..., None] for f in feats.__dataclass_fields__))
    h, a = scene_rates(knobs, condition, column, knobs.scene_sd * _NODES,
                       knobs.acc_scene_sd * _NODES)  # (..., nodes), (nodes,)
    shape = feats.own_is_hidden.shape
    return h @ _WEIGHTS, np.full(shape, float(np.broadcast_to(a, _NODES.shape) @ _WEIGHTS))


# --- outcome probabilities -----------------------------------------------------------------------


@dataclass(frozen=True)
class RoleProbs:
    """A reply's outcome by role. P(report r, choice c | answered) = report[..., r] *
    choice[..., r, c]; where no report is asked, report is [1, 0, 0]."""

    plan: Plan
    answered: float  # the whole reply (both turns of a dialogue)
    report: np.ndarray  # (..., 3) over REPORTS
    choice: np.ndarray  # (..., 3, 4) over REPORTS x CHOICES
    count_ok: float


def role_probs(knobs: DirectorKnobs, condition: str | Condition, feats: Features,
               h: Any, a: Any) -> RoleProbs:
    """Outcome probabilities by role for scenes with own-view rates ``h`` and accuracies ``a``
    (arrays broadcast against ``feats``)."""
    pl = plan(condition)
    k = knobs
    shape = np.broadcast_shapes(feats.own_is_hidden.shape, np.shape(h), np.shape(a))
    h = np.broadcast_to(np.asarray(h, dtype=float), shape)
    a = np.broadcast_to(np.asarray(a, dtype=float), shape)
    if pl.report:
        report = np.stack([a, (1 - a) * k.error_adds_hidden, (1 - a) * (1 - k.error_adds_hidden)],
                          axis=-1)
    else:
        report = np.broadcast_to(np.array([1.0, 0.0, 0.0]), (*shape, 3))
    follow = k.follow_report if pl.coupled else 0.0
    own = np.stack([h, h + (1 - h) * follow, h], axis=-1)  # (..., 3)
    rest = 1 - own
    has_ldv = np.broadcast_to(feats.has_ldv, shape)
    n_other = np.broadcast_to(feats.n_other, shape)
    to_ldv = np.where(has_ldv, np.where(n_other > 0, k.digit_reading, 1.0), 0.0)[..., None]
    choice = np.stack([own, rest * (1 - k.miss), rest * k.miss * to_ldv,
                       rest * k.miss * (1 - to_ldv)], axis=-1)
    return RoleProbs(pl, k.answer_rate ** pl.turns, report, choice,
                     k.count_acc if pl.count else 1.0)


def outcome_probs(knobs: DirectorKnobs, condition: str | Condition, key: dict[str, Any],
                  offset: float = 0.0, acc_offset: float = 0.0,
                  scene_id: str | None = None) -> list[tuple[float, dict[str, Any] | None]]:
    """Every outcome of one reply with its probability: ``(p, fields)`` with ``fields`` the
    parsed answer over all turns (as ``parse_reply`` would read it), or ``None`` for an
    unanswered reply. The probabilities sum to 1."""
    feats = features([key], [scene_id] if scene_id else None)
    h, a = scene_rates(knobs, condition, feats, offset, acc_offset)
    rp = role_probs(knobs, condition, feats, h, a)
    pl = rp.plan
    hidden, dv, ldv = key["hidden_digit"], key["director_view_digit"], key["largest_digit_visible"]
    visible = sorted(key["visible_digits"])
    own = own_view_digit(key, scene_id)
    others = [d for d in visible if d not in (dv, ldv)]
    n = len(digits_of(key))
    reports: list[tuple[int, float, list[int]]] = [(0, 1.0, visible)]
    if pl.report:
        reports = [(0, 1.0, visible), (1, 1.0, sorted([*visible, hidden]))]
        reports += [(2, 1 / len(visible), [d for d in visible if d != v]) for v in visible]
    choices: list[tuple[int, float, int]] = [(0, 1.0, own), (1, 1.0, dv)]
    if ldv is not None:
        choices.append((2, 1.0, ldv))
    choices += [(3, 1 / len(others), d) for d in others]
    counts = [(rp.count_ok, n), ((1 - rp.count_ok) / 2, n - 1), ((1 - rp.count_ok) / 2, n + 1)]
    merged: dict[str, tuple[float, dict[str, Any]]] = {}
    for r, wr, rep in reports:
        pr = float(rp.report[0, r]) * wr
        for c, wc, block in choices:
            pc = pr * float(rp.choice[0, r, c]) * wc
            for pn, count in (counts if pl.count else [(1.0, n)]):
                p = rp.answered * pc * pn
                if p <= 0:
                    continue
                fields: dict[str, Any] = {"block": block}
                if pl.report:
                    fields[pl.report] = rep
                if pl.count:
                    fields["count"] = count
                fields = {f: fields[f] for f in pl.fields}
                tag = json.dumps(fields, sort_keys=True)
                merged[tag] = (merged.get(tag, (0.0, fields))[0] + p, fields)
    return [*merged.values(), (1 - rp.answered, None)]


# --- sampling a reply ----------------------------------------------------------------------------


def sample(knobs: DirectorKnobs, condition: str | Condition, key: dict[str, Any],
           rng: random.Random, offset: float = 0.0, acc_offset: float = 0.0,
           scene_id: str | None = None) -> dict[str, Any]:
    """One answered outcome (all fields over all turns), drawn from :func:`outcome_probs`
    given that the reply is answered."""
    outs = [(p, f) for p, f in outcome_probs(knobs, condition, key, offset, acc_offset, scene_id)
            if f is not None]
    total = sum(p for p, _ in outs)
    u = rng.random() * total
    for p, fields in outs:
        u -= p
        if u < 0:
            return fields
    return outs[-1][1]


def choice_role(block: int, key: dict[str, Any], scene_id: str | None = None) -> str:
    """The role (:data:`CHOICES`) of a chosen block; where one block has two roles (the
    director-view block is also the largest on the table), the director-view role wins."""
    if block == key["director_view_digit"]:
        return "dv"
    if block == own_view_digit(key, scene_id):
        return "own"
    if block == key.get("largest_digit_visible"):
        return "ldv"
    return "other"
