"""Reasoning traces of the simulated Director respondent: written to known codes, read back."""

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unseen.backends import make_backend
from unseen.engine.types import Message, Request, TextPart
from unseen.evals.director.sim import respondent as R
from unseen.evals.director.sim import simulated as S
from unseen.evals.director.sim import traces as T
from unseen.evals.director.task.codebook import READINGS, SEES, Codes
from unseen.evals.director.task.oracle import DirectorTruth, SceneKey
from unseen.evals.director.task.prompts import build

# a main-set key: the hidden block 7 is the largest on the table; 5 is the director-view block,
# 9 the largest-digit visible block, 2 another visible block
KEY = {"hidden_digit": 7, "visible_digits": [2, 5, 9], "director_view_digit": 5,
       "largest_digit_visible": 9, "apparent_size_flag": False, "digits": [2, 5, 7, 9]}
KEY3 = {"hidden_digit": 1, "visible_digits": [4, 8], "director_view_digit": 8,
        "largest_digit_visible": None, "apparent_size_flag": True, "digits": [1, 4, 8]}
ALL = [Codes(reading=r, sees=s, works_out=w) for r in READINGS for s in SEES for w in (False, True)]


def _oracle(condition, turn=0, key=KEY, instance="main-003"):
    fields = build(condition).fields_per_turn[turn]
    return DirectorTruth(instance=instance, condition=condition, turn=turn, fields=fields,
                         key=SceneKey(**key))


def _request(condition, turn=0, sample=0, key=KEY):
    return Request(messages=[Message(role="user", parts=[TextPart(text=f"{condition}/{turn}")])],
                   sample=sample, oracle=_oracle(condition, turn, key))


# --- writing and reading -----------------------------------------------------------------------


scenes = st.lists(st.integers(1, 9), min_size=2, max_size=7, unique=True)


@settings(max_examples=150, deadline=None)
@given(scene=scenes, pick=st.integers(0, 6), believes_all=st.booleans(), seed=st.integers(0, 2**32))
def test_read_trace_inverts_write_trace_for_every_valid_code(scene, pick, believes_all, seed):
    hidden, visible = scene[0], sorted(scene[1:])
    if believes_all:  # a report that lists the hidden block too
        visible = sorted(scene)
    block = scene[pick % len(scene)]
    rng = random.Random(seed)
    for codes in T.valid_codes():
        trace = T.write_trace(codes, block, hidden, visible, rng)
        assert T.read_trace(trace) == codes, trace
        assert 3 <= trace.count(". ") + 1 <= 6
        assert re.search(rf"\b{block}\b", trace.split(". ", 2)[2])  # after the openings


def test_valid_codes_are_all_but_the_ambiguous_ones():
    valid = T.valid_codes()
    assert {c.reading for c in valid} == set(READINGS) and {c.sees for c in valid} == set(SEES)
    for codes in ALL:
        ambiguous = ((codes.reading == "prior_knowledge" and codes.sees != "unseen")
                     or (codes.works_out and codes.sees == "not_stated"))
        assert (codes in valid) is not ambiguous


@pytest.mark.parametrize("sees", ["seen", "not_stated"])
def test_prior_knowledge_needs_the_block_unseen(sees):
    with pytest.raises(ValueError, match="prior_knowledge"):
        T.write_trace(Codes(reading="prior_knowledge", sees=sees, works_out=False), 7, 7,
                      [2, 5], random.Random(0))


def test_working_out_the_view_states_a_belief():
    with pytest.raises(ValueError, match="not_stated"):
        T.write_trace(Codes(reading="none", sees="not_stated", works_out=True), 5, 7, [2, 5],
                      random.Random(0))


def test_the_paper_phrasing_of_the_own_view_reading_occurs():
    codes = Codes(reading="own_view", sees="not_stated", works_out=False)
    seen = {T.write_trace(codes, 7, 7, [2, 5], random.Random(s)) for s in range(40)}
    phrase = 'The phrasing "the largest block" likely means the largest among all blocks, which is 7.'
    assert any(phrase in t for t in seen)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_read_trace_never_raises_and_reads_other_text_as_nothing(text):
    codes = T.read_trace(text)
    assert isinstance(codes, Codes)


def test_a_real_trace_reads_as_nothing_unless_it_holds_a_template_sentence():
    real = ("Okay, so the partition covers the left side. I think the director can probably "
            "see the blocks on the right. The biggest one overall looks like the 7.")
    assert T.read_trace(real) == Codes(reading="none", sees="not_stated", works_out=False)
    assert T.read_trace(real + " The director cannot see block 7 from where they sit.").sees == "unseen"
    assert T.read_trace(None).reading == "none"  # type: ignore[arg-type]


def test_the_last_reading_and_the_last_belief_count():
    text = ("I will go with block 5. The director can see block 5. The largest number among the "
            "blocks is 9, so I take that one. The director cannot see block 9 from where they sit.")
    assert T.read_trace(text) == Codes(reading="largest_digit", sees="unseen", works_out=False)


def test_test_traces_cover_every_code_and_read_back():
    got = T.test_traces(30, random.Random(3))
    assert len(got) == 30
    assert {c.reading for _, c, _ in got} == set(READINGS)
    assert {c.sees for _, c, _ in got} == set(SEES)
    assert {c.works_out for _, c, _ in got} == {False, True}
    for trace, codes, block in got:
        assert T.read_trace(trace) == codes
        assert str(block) in trace
    five = T.test_traces(5, random.Random(0))
    assert {c.reading for _, c, _ in five} == set(READINGS)


# --- the simulated reply's codes ---------------------------------------------------------------


def test_sim_codes_follow_the_knobs():
    k = R.DirectorKnobs(trace_prior=0.0, trace_works_out=0.0, trace_states_seen=0.0,
                        trace_states_unseen=1.0)
    rng = random.Random(0)
    assert T.sim_codes("dv", None, False, k, rng) == Codes(reading="director_view",
                                                           sees="not_stated", works_out=False)
    assert T.sim_codes("own", [2, 5, 9], True, k, rng, chosen_hidden=True) == Codes(
        reading="own_view", sees="unseen", works_out=True)
    assert T.sim_codes("ldv", None, True, k, rng).sees == "seen"
    assert T.sim_codes("other", None, False, k, rng).reading == "none"
    always = R.DirectorKnobs(trace_prior=1.0)
    for _ in range(20):
        c = T.sim_codes("own", None, False, always, rng, chosen_hidden=True)
        assert (c.reading, c.sees) == ("prior_knowledge", "unseen")
        T.check_codes(c)  # every code it draws can be written


# --- the respondent and the sim backend ---------------------------------------------------------


@pytest.mark.parametrize("cond", ["move", "move/novis", "move/twoturn", "mean/count", "move/know"])
@pytest.mark.parametrize("key", [KEY, KEY3])
def test_respond_with_trace_gives_respond_s_text(cond, key):
    k = R.DirectorKnobs(format_noise=0.5, answer_rate=0.8)
    for turn in range(len(build(cond).turns)):
        for s in range(15):
            text, trace = S.respond_with_trace(k, _oracle(cond, turn, key), random.Random(s))
            assert text == S.respond(k, _oracle(cond, turn, key), random.Random(s))
            if "block" not in build(cond).fields_per_turn[turn]:
                assert trace is None


def _block(text):
    return json.loads(text)["block"]


async def test_sim_replies_carry_a_trace_read_as_their_choice():
    sim = make_backend("sim:default,dir_format_noise=0,dir_answer_rate=1")
    roles = set()
    for cond in ("move", "move/novis", "mean"):
        for s in range(40):
            reply = await sim.complete(_request(cond, sample=s))
            assert reply.reasoning and reply.usage.reasoning_tokens > 0
            codes, block = T.read_trace(reply.reasoning), _block(reply.text)
            role = R.choice_role(block, KEY, "main-003")
            roles.add(role)
            assert codes.reading in {"dv": ("director_view",), "ldv": ("largest_digit",),
                                     "other": ("none",),
                                     "own": ("own_view", "prior_knowledge")}[role]
            assert codes.works_out or cond != "move"  # the visibility question works it out
            if codes.reading == "prior_knowledge":
                assert codes.sees == "unseen"
    assert {"dv", "own"} <= roles


async def test_without_traces_or_without_a_block_there_is_no_reasoning():
    none = make_backend("sim:default,dir_traces=0")
    for s in range(10):
        assert (await none.complete(_request("move", sample=s))).reasoning is None
    first_turn = make_backend("sim:default,dir_answer_rate=1")
    assert (await first_turn.complete(_request("move/twoturn", turn=0))).reasoning is None
    assert (await first_turn.complete(_request("move/twoturn", turn=1))).reasoning
