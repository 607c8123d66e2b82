"""The simulated Director respondent: the model's probabilities and the sim backend's replies."""

import json
import math
import random

import pytest

from unseen.backends import make_backend
from unseen.backends.sim import PROFILES, parse_sim_spec
from unseen.engine.types import Message, Request, TextPart
from unseen.evals.director.sim import respondent as R
from unseen.evals.director.sim import simulated as S
from unseen.evals.director.task.oracle import DirectorTruth, SceneKey
from unseen.evals.director.task.parse import parse_reply
from unseen.evals.director.task.prompts import build, conditions
from unseen.evals.director.task.strategy import FIELD_TYPES

# a main-set key: the hidden block 7 carries the largest digit; 9 is the largest-digit visible
# block, not the director-view block (5); 2 is another visible block
KEY = {"hidden_digit": 7, "visible_digits": [2, 5, 9], "director_view_digit": 5,
       "largest_digit_visible": 9, "apparent_size_flag": False, "digits": [2, 5, 7, 9]}
# three blocks, the director-view block has the largest visible digit (no ldv)
KEY3 = {"hidden_digit": 1, "visible_digits": [4, 8], "director_view_digit": 8,
        "largest_digit_visible": None, "apparent_size_flag": True, "digits": [1, 4, 8]}


def director_knobs(spec: str) -> R.DirectorKnobs:
    """The Director knobs a sim spec sets (the defaults where it sets none)."""
    return make_backend(f"sim:{spec}").extra("dir_")


def _types(fields):
    return {f: FIELD_TYPES[f] for f in fields}


def _oracle(condition, turn, key=KEY, instance="main-003"):
    fields = build(condition).fields_per_turn[turn]
    return DirectorTruth(instance=instance, condition=condition, turn=turn, fields=fields,
                         key=SceneKey(**key))


def _request(condition, turn=0, sample=0, key=KEY, instance="main-003"):
    return Request(messages=[Message(role="user", parts=[TextPart(text=f"{condition}/{turn}")])],
                   sample=sample, oracle=_oracle(condition, turn, key, instance))


# --- the model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [KEY, KEY3])
def test_outcome_probabilities_sum_to_one_and_carry_the_asked_fields(key):
    k = R.DirectorKnobs()
    for cond in conditions():
        outs = R.outcome_probs(k, cond, key, offset=0.3, acc_offset=-0.2)
        assert math.isclose(sum(p for p, _ in outs), 1.0, abs_tol=1e-12)
        assert all(p >= 0 for p, _ in outs)
        want = build(cond).fields
        for _, fields in outs:
            assert fields is None or list(fields) == want


def test_default_rates_resemble_the_paper():
    k = R.DirectorKnobs()
    rate = lambda c: R.hidden_rate(k, c)  # noqa: E731
    assert rate("move/novis") == pytest.approx(0.05)
    assert rate("move") == pytest.approx(0.45)
    assert rate("mean") <= 0.03 and rate("mean/novis") <= 0.02
    assert rate("move+combined") < 0.02
    assert rate("move-want") < rate("move") < rate("move-will")
    assert rate("move/novis") < rate("move/count") < rate("move/stated") + 0.02 < rate("move")
    assert rate("move+padding") == rate("move") > rate("move+knowledge") > rate("move+combined")
    assert R.accuracy_rate(k, "move") == R.accuracy_rate(k, "mean") == 0.9


def test_rates_are_population_means_over_the_scene_offsets():
    k = R.DirectorKnobs(top_digit_pull=0.0, scene_sd=1.3, acc_scene_sd=0.7)
    feats = R.features([KEY])
    for cond in ("move", "move/novis", "mean", "move+combined"):
        h, a = R.mean_rates(k, cond, feats)
        assert h[0] == pytest.approx(R.hidden_rate(k, cond), abs=1e-9)
        assert a[0] == pytest.approx(0.9, abs=1e-9)


def test_scene_offsets_are_deterministic_per_scene_and_seed():
    k = R.DirectorKnobs()
    assert R.scene_offsets(k, "main-001", 0) == R.scene_offsets(k, "main-001", 0)
    assert R.scene_offsets(k, "main-001", 0) != R.scene_offsets(k, "main-002", 0)
    assert R.scene_offsets(k, "main-001", 0) != R.scene_offsets(k, "main-001", 1)
    zs = [R.scene_offsets(k, f"main-{i:03d}")[0] for i in range(2000)]
    mean = sum(zs) / len(zs)
    sd = math.sqrt(sum((z - mean) ** 2 for z in zs) / len(zs))
    assert abs(mean) < 0.1 and sd == pytest.approx(k.scene_sd, rel=0.08)


def test_own_view_target_in_the_rotated_set_is_the_director_view_block():
    assert R.own_view_digit(KEY3, "rotated-000") == 1  # hidden block is the largest
    assert R.own_view_digit(KEY3, "rotated-001") == 8  # middle: the largest is visible
    assert R.own_view_digit(KEY3, "main-001") == 1
    assert R.own_view_digit({**KEY3, "largest_digit": 4}, "main-001") == 4


def test_a_report_that_adds_the_hidden_block_pulls_the_choice_in_the_same_reply_only():
    k = R.DirectorKnobs(follow_report=1.0, vis_acc=0.5, error_adds_hidden=1.0, answer_rate=1.0)
    for cond, coupled in (("move", True), ("move/after", True), ("move/twoturn", False)):
        outs = R.outcome_probs(k, cond, KEY)
        with_hidden = [(p, f) for p, f in outs if f and 7 in f["visible"]]
        p_hidden = sum(p for p, f in with_hidden if f["block"] == 7) / sum(p for p, _ in with_hidden)
        assert (p_hidden == pytest.approx(1.0)) is coupled


# --- the backend -------------------------------------------------------------------------------


def test_every_condition_and_turn_parses_and_answers_only_the_fields_asked():
    noisy = R.DirectorKnobs(format_noise=1.0, answer_rate=1.0)
    plain = R.DirectorKnobs(format_noise=0.0, answer_rate=1.0)
    silent = R.DirectorKnobs(answer_rate=0.0)
    rng = random.Random(0)
    for cond in conditions():
        for turn, fields in enumerate(build(cond).fields_per_turn):
            oracle = _oracle(cond, turn)
            for _ in range(6):
                got = parse_reply(S.respond(noisy, oracle, rng), _types(fields))
                assert got is not None and set(got) == set(fields)
                assert all(d in KEY["digits"] for d in got.get("visible", []))
            assert list(json.loads(S.respond(plain, oracle, rng))) == fields
            for _ in range(3):
                assert parse_reply(S.respond(silent, oracle, rng), _types(fields)) is None


async def test_backend_is_deterministic_and_two_turns_split_the_fields():
    spec = "sim:director-strong,dir_format_noise=0,dir_answer_rate=1"
    sim = make_backend(spec)
    a = await sim.complete(_request("move/twoturn", turn=0))
    b = await make_backend(spec).complete(_request("move/twoturn", turn=0))
    assert a.text == b.text
    texts = {(await sim.complete(_request("move", sample=s))).text for s in range(12)}
    assert len(texts) > 1
    assert list(json.loads(a.text)) == ["visible"]
    second = await sim.complete(_request("move/twoturn", turn=1))
    assert list(json.loads(second.text)) == ["block"]
    assert list(json.loads((await sim.complete(_request("move/after"))).text)) == ["block", "visible"]


def test_profiles_and_knobs_reach_the_respondent():
    _, box, extras = parse_sim_spec("director-strong,dir_uplift=0.3,skill=0.5")
    assert box.skill == 0.5 and extras["dir_"].uplift == 0.3
    with pytest.raises(Exception, match="dir_uplift"):
        parse_sim_spec("default,dir_uplift=lots")
    for name in ("director-flat", "director-strong", "director-oracle"):
        assert name in PROFILES
    d = director_knobs("director-strong,dir_uplift=0.3,dir_scene_sd=0")
    assert d.uplift == 0.3 and d.scene_sd == 0 and d.will_factor == 1.1
    flat = director_knobs("director-flat")
    assert R.hidden_rate(flat, "move") == R.hidden_rate(flat, "move/novis")


async def test_the_oracle_profile_answers_the_key():
    sim = make_backend("sim:director-oracle")
    for cond in ("move", "mean/count", "move/know", "move+combined"):
        fields = build(cond).fields_per_turn[0]
        got = parse_reply((await sim.complete(_request(cond))).text, _types(fields))
        assert got["block"] == KEY["director_view_digit"]
        for f in ("visible", "known"):
            if f in got:
                assert sorted(got[f]) == KEY["visible_digits"]
        if "count" in got:
            assert got["count"] == 4


async def _hidden_share(spec, cond, n, key=KEY, instance="main-003"):
    sim = make_backend(spec)
    hits = answered = 0
    for s in range(n):
        got = parse_reply((await sim.complete(_request(cond, sample=s, key=key,
                                                      instance=instance))).text, _types(
            build(cond).fields_per_turn[0]))
        if got is not None:
            answered += 1
            hits += got["block"] == key["hidden_digit"]
    return hits / answered, answered


@pytest.mark.parametrize("cond", ["move", "move/novis", "mean/count"])
async def test_empirical_hidden_rate_matches_the_model(cond):
    spec = "sim:default,seed=3"
    knobs = director_knobs("default,seed=3")
    off, acc_off = R.scene_offsets(knobs, "main-003", 3)
    outs = R.outcome_probs(knobs, cond, KEY, off, acc_off, "main-003")
    p = sum(q for q, f in outs if f and f["block"] == 7) / sum(q for q, f in outs if f)
    share, n = await _hidden_share(spec, cond, 1500)
    assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-3


async def test_the_uplift_knob_moves_the_hidden_rate():
    low, _ = await _hidden_share("sim:default,dir_uplift=0,dir_scene_sd=0", "move", 400)
    high, _ = await _hidden_share("sim:default,dir_uplift=0.6,dir_scene_sd=0", "move", 400)
    assert low < 0.12 and high > 0.5
