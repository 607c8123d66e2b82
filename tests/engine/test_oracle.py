"""The simulator's side channel (``engine.oracle``): typed truths, cues, and the kit's builders."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from pydantic import ValidationError

import unseen
from unseen.backends import make_backend
from unseen.backends.sim import SimKnobs
from unseen.backends.sim_tasks import effective_skill
from unseen.engine.backend import ProviderError
from unseen.engine.box import Box
from unseen.engine.oracle import TASKS, BoxTruth, CellsTruth, ChoiceTruth, Cue, OracleError
from unseen.engine.types import Instance, Message, Request, TextPart
from unseen.evals.director.task.oracle import DirectorTruth, SceneKey
from unseen.strategies.kit import box_truth, cells_truth, choice_truth
from unseen.strategies.spoe import question

H, C, R, F = Cue.HIDDEN, Cue.COMMONSENSE, Cue.REASONING, Cue.REFLECTION


def _request(truth) -> Request:
    return Request(messages=[Message(role="user", parts=[TextPart(text="where?")])],
                   oracle=truth)


@pytest.mark.parametrize(("cues", "skill"), [
    # the default knobs, by hand: skill 0.35; hidden +0.15, common -0.05, cot +0.05, reflect +0.05
    (set(), 0.35), ({H}, 0.50), ({C}, 0.30), ({H, C}, 0.45), ({R}, 0.40), ({R, F}, 0.45),
])
def test_each_cue_moves_skill_by_its_knob(cues, skill):
    assert effective_skill(SimKnobs(), frozenset(cues)) == pytest.approx(skill)


def test_skill_stays_a_probability():
    assert effective_skill(SimKnobs(skill=0.95), frozenset({H})) == 1.0
    assert effective_skill(SimKnobs(skill=0.02, common_gain=-0.5), frozenset({C})) == 0.0


async def test_a_cue_reaches_the_simulator():
    """With skill 0 and a hidden gain of 1, only a request that carries the cue is answered
    from the truth: its boxes all hold the target's centre; without it, boxes are guesses."""
    sim = make_backend("sim:default,skill=0,hidden_gain=1,spread=0,size_jitter=0,"
                       "unparseable=0,format_noise=0,box_format=pixel")
    target = [300, 200, 320, 230]
    held = defaultdict(int)
    for cues in (frozenset(), frozenset({H})):
        for i in range(40):
            truth = BoxTruth(instance=f"i{i}", box=target, width=640, height=480, cues=cues)
            box = Box.of(json.loads((await sim.complete(_request(truth))).text)["box"])
            held[cues] += box.x1 <= 310 <= box.x2 and box.y1 <= 215 <= box.y2
    assert held[frozenset({H})] == 40
    assert held[frozenset()] < 10


async def test_the_reasoning_cue_gets_reasoning_before_the_box():
    sim = make_backend("sim:oracle")
    base = BoxTruth(instance="i1", box=[10, 10, 20, 20], width=100, height=100)
    plain = (await sim.complete(_request(base))).text
    reasoned = (await sim.complete(_request(base.model_copy(update={"cues": {R}})))).text
    assert plain.startswith("{") and "Step 1." not in plain
    assert reasoned.startswith("Step 1.") and "Final answer: {" in reasoned


def test_every_strategy_sends_the_cues_of_its_prompt(sample_data, tmp_path, monkeypatch):
    seen: set[frozenset[Cue]] = set()
    real = TASKS["box"]

    def spy(sim, truth, rng):
        seen.add(truth.cues)
        return real(sim, truth, rng)

    cases = {"direct": [set()], "direct:prompt=hidden": [{H}], "direct:prompt=common": [{C}],
             "direct:prompt=both": [{H, C}], "cot": [{R}], "cot-sr": [{R}, {R, F}]}
    for spec, want in cases.items():
        seen.clear()
        monkeypatch.setitem(TASKS, "box", spy)
        unseen.run(sample_data, [spec], ["sim:oracle"], out=tmp_path / spec.replace(":", "_"),
                   limit=1, cache=False, progress=False)
        assert seen == {frozenset(c) for c in want}, spec


def test_a_mapping_is_validated_as_its_kind():
    r = _request({"task": "choice", "box": [1, 1, 2, 2], "regions": [[0, 0, 5, 5]],
                  "labels": ["A"]})
    assert isinstance(r.oracle, ChoiceTruth) and r.oracle.options == []
    with pytest.raises(ValidationError, match="unknown kind of truth 'guess'"):
        _request({"task": "guess"})
    # the untyped dict of old (``truth`` for the box) is refused, not read as no truth
    with pytest.raises(ValidationError, match="truth"):
        _request({"task": "box", "truth": [1, 1, 2, 2], "width": 10, "height": 10})
    with pytest.raises(ValidationError, match="must be a Truth"):
        _request(["box"])
    with pytest.raises(OracleError):
        from unseen.engine.oracle import truth_of
        truth_of(42)  # type: ignore[arg-type]


def test_the_truth_is_never_dumped():
    r = _request(BoxTruth(instance="i1", box=[1, 2, 3, 4], width=10, height=10, cues={H}))
    assert "oracle" not in r.model_dump() and "oracle" not in r.model_dump_json()
    assert "1.0, 2.0" not in repr(r) and "hidden" not in repr(r)


async def test_sim_refuses_what_it_cannot_answer_in_one_line():
    sim = make_backend("sim")
    with pytest.raises(ProviderError, match="Making a strategy answerable offline") as exc:
        await sim.complete(_request(None))
    assert exc.value.kind == "client"
    with pytest.raises(ProviderError, match="no truth box") as exc:
        await sim.complete(_request(BoxTruth(instance="i9", box=None, width=10, height=10)))
    assert exc.value.kind == "client" and "\n" not in exc.value.message


def _inst(**truth) -> Instance:
    return Instance(id="k1", image="/nowhere.png", width=100, height=80,
                    truth={"box": [30, 20, 50, 40], **truth})


def test_box_truth_in_a_crop_by_hand():
    inst = _inst()
    whole = box_truth(inst, cues={H})
    assert (whole.box, whole.width, whole.height, whole.cues) == (
        [30, 20, 50, 40], 100, 80, frozenset({H}))
    # crop [20.4, 10.6, 60.2, 50.5] rounds to [20, 11, 60, 50]: a 40 x 39 frame; the target
    # moves by (-20, -11)
    t = box_truth(inst, crop=[20.4, 10.6, 60.2, 50.5])
    assert (t.box, t.width, t.height) == ([10, 9, 30, 29], 40, 39)
    # half inside: clipped to the crop
    assert box_truth(inst, crop=[40, 0, 100, 80]).box == [0, 20, 10, 40]
    # cut away: a 4-pixel box in the corner, so the respondent still answers
    assert box_truth(inst, crop=[60, 0, 100, 80]).box == [0, 0, 4, 4]
    assert box_truth(Instance(id="n", image="/x", width=9, height=9), crop=[0, 0, 5, 5]).box \
        is None


def test_choice_and_cells_truth_offer_the_labels_by_default():
    inst = _inst()
    c = choice_truth(inst, [[0, 0, 50, 80], [50, 0, 100, 80]], ["A", "B"])
    assert (c.task, c.options, c.mode, c.instance, c.box) == (
        "choice", ["A", "B"], "eliminate", "k1", [30, 20, 50, 40])
    assert choice_truth(inst, [], ["A", "B"], options=["A", "B", "C"], mode="keep").options \
        == ["A", "B", "C"]
    assert isinstance(cells_truth(inst, [[0, 0, 1, 1]]), CellsTruth)


def test_the_unsure_question_fills_slots_and_reads_as_before():
    """The text SPoE sent before its template had slots (``spoe.py`` replaced "Answer with
    one letter: A or B." in the rendered prompt), written out by hand."""
    inst = _inst()
    inst = inst.model_copy(update={"text": {"instruction": "Open the drawer."}})
    head = ("Task: Open the drawer.\n\nThe object needed for this task is hidden somewhere in "
            "the picture. Two regions are outlined: region A (the left part) and region B (the "
            "right part). Which region is LESS likely to contain the object? ")
    assert question(inst, "eliminate", 1) == head + "Answer with one letter: A or B."
    assert question(inst, "eliminate", 1, unsure=True) == head + (
        "If neither region is clearly less likely than the other, answer C. "
        "Answer with one letter: A, B or C.")
    keep = question(inst, "keep", 2, unsure=True)
    assert "(the top part)" in keep and "MORE likely" in keep and keep.endswith("A, B or C.")


def test_the_director_key_keeps_only_its_fields():
    truth = {"hidden_digit": 7, "visible_digits": [2, 5], "director_view_digit": 5,
             "largest_digit_visible": None, "apparent_size_flag": True, "digits": [2, 5, 7],
             "largest_digit": 7, "boxes": "not a key field"}
    key = SceneKey.of(truth)
    assert key.as_dict() == {k: v for k, v in truth.items() if k != "boxes"}
    t = DirectorTruth(instance="main-001", condition="move", fields=["block"], key=key)
    assert t.task == "director" and t.turn == 0 and "director" in make_backend("sim").answers
