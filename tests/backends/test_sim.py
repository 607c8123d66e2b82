"""The simulated respondent: deterministic, labelled, and answering in its convention."""

import json

import pytest

import unseen
from unseen.backends import BackendConfigError, make_backend
from unseen.engine.oracle import BoxTruth, ChoiceTruth
from unseen.engine.types import Message, Request, TextPart


def box_request(sample=0, instance="i1"):
    return Request(
        messages=[Message(role="user", parts=[TextPart(text="where?")])], sample=sample,
        oracle=BoxTruth(instance=instance, box=[100, 100, 120, 130], width=640, height=480),
    )


async def test_deterministic_given_seed_request_and_sample():
    sim = make_backend("sim")
    a = await sim.complete(box_request())
    b = await make_backend("sim").complete(box_request())
    assert a.text == b.text
    others = {(await sim.complete(box_request(sample=s))).text for s in range(8)}
    assert len(others) > 1  # samples differ
    seeded = make_backend("sim:default,seed=7")
    other_seed = {(await seeded.complete(box_request(sample=s))).text for s in range(8)}
    assert other_seed != others  # the seed changes the draws


async def test_needs_a_task_it_knows():
    from unseen.engine.backend import ProviderError

    with pytest.raises(ProviderError, match="needs a strategy"):
        await make_backend("sim").complete(
            Request(messages=[Message(role="user", parts=[TextPart(text="x")])]))


def test_spec_errors():
    with pytest.raises(BackendConfigError, match="unknown sim profile"):
        make_backend("sim:genius")
    with pytest.raises(BackendConfigError, match="bad sim knob 'skill'"):
        make_backend("sim:default,skill=abc")
    with pytest.raises(BackendConfigError, match="knob=value"):
        make_backend("sim:default,skill")
    with pytest.raises(BackendConfigError, match="bad sim knob 'wisdom'"):
        make_backend("sim:default,wisdom=1")


def test_describe_labels_it_a_simulation():
    d = make_backend("sim:strong").describe()
    assert d["simulated"] is True and "SIMULATED" in d["note"] and d["knobs"]["skill"] == 0.7


@pytest.mark.parametrize("fmt", ["pixel", "norm1000", "gemini", "unit", "qwen2.5"])
def test_oracle_in_every_convention_parses_back_to_a_containing_box(sample_data, tmp_path, fmt):
    """End to end: sim answers in `fmt`, the prompt asked for `fmt`, the parser converts back."""
    res = unseen.run(sample_data, ["direct"], [f"sim:oracle,box_format={fmt}"],
                     out=tmp_path / "r", cache=False, progress=False)
    assert res.answered == 24
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    assert all(r["metrics"]["cacc50"] == 1.0 for r in rows)
    assert all(r["simulated"] for r in rows)


def test_skill_knob_moves_the_metrics(sample_data, tmp_path):
    unseen.run(sample_data, ["direct"], ["sim:weak", "sim:strong"], out=tmp_path / "r",
               cache=False, progress=False)
    from unseen.evals.scenefunri import summarize

    rows = {r["model"]: r for r in summarize([tmp_path / "r"])}
    assert rows["sim-strong"]["dist"] < rows["sim-weak"]["dist"]


def test_noisy_profile_yields_parse_failures_scored_as_misses(sample_data, tmp_path):
    unseen.run(sample_data, ["direct"], ["sim:noisy,unparseable=0.5"], out=tmp_path / "r",
               cache=False, progress=False)
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["status"] == "unanswered"]
    assert failed, "expected some unparseable replies"
    for r in failed:
        assert r["error"]["kind"] == "parse" and r["prediction"] is None
        assert r["metrics"]["cacc50"] == 0 and r["metrics"]["iou"] == 0


# --- issue 13: each request its own draw --------------------------------------------------


def _choice_request(image: str, overlay: dict | None, sample: int = 0) -> Request:
    from unseen.engine.types import ImagePart

    return Request(
        messages=[Message(role="user", parts=[ImagePart(path=image, overlay=overlay),
                                              TextPart(text="Which part is less likely?")])],
        sample=sample,
        oracle=ChoiceTruth(instance="i1", box=[10, 10, 20, 20],
                           regions=[[0, 0, 50, 100], [50, 0, 100, 100]], labels=["A", "B"]),
    )


def test_draw_depends_on_overlay_and_image_bytes(tmp_path):
    """Requests with the same text but other regions drawn, or another image, are other
    draws; the same request is the same draw (issue 13: SPoE rounds repeated one draw)."""
    sim = make_backend("sim")
    img = tmp_path / "a.png"
    img.write_bytes(b"first image bytes")
    overlays = [{"boxes": [[0, 0, 50 - i, 100], [50 - i, 0, 100, 100]], "labels": ["A", "B"]}
                for i in range(6)]
    draws = [sim._rng(_choice_request(str(img), o)).random() for o in overlays]
    assert len(set(draws)) == len(draws)
    again = sim._rng(_choice_request(str(img), overlays[0])).random()
    assert again == draws[0]
    img.write_bytes(b"other image bytes, same path")
    assert sim._rng(_choice_request(str(img), overlays[0])).random() != draws[0]


def test_spoe_choices_are_independent_across_rounds(sample_data, tmp_path):
    """A chooser without skill picks at random in every round: a choice agrees with the one
    two rounds earlier about half the time, and almost no sequence is periodic (before the
    fix: every odd round and every even round repeated one draw, agreement 1.0)."""
    unseen.run(sample_data, ["spoe:T=8"], ["sim:default,skill=0,unparseable=0,format_noise=0"],
               out=tmp_path / "r", cache=False, progress=False)
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    seqs = ["".join(s["parsed"]["choice"] for s in r["steps"]) for r in rows]
    assert all(len(q) == 8 for q in seqs)
    lag2 = [q[i] == q[i + 2] for q in seqs for i in range(6)]
    assert 0.35 <= sum(lag2) / len(lag2) <= 0.65
    periodic = [q for q in seqs if all(q[i] == q[i + 2] for i in range(6))]
    assert len(periodic) <= 2  # chance: 24 sequences x 2^-6


def test_skilled_sim_curve_falls_with_t(sample_data, tmp_path):
    """A skilled simulated chooser narrows in on the target: Dist falls round after round
    (before the fix the offline Figure 2 curve rose after t = 2)."""
    from unseen.evals.scenefunri.report.curves import curves

    unseen.run(sample_data, ["spoe:T=6"], ["sim:strong"], out=tmp_path / "r", cache=False,
               progress=False)
    dist = [r["dist"] for r in sorted(curves([tmp_path / "r"]), key=lambda r: r["t"])]
    assert len(dist) == 7
    assert all(b <= a + 0.5 for a, b in zip(dist, dist[1:], strict=False)), dist
    assert dist[-1] < dist[1] - 10


def test_knobs_beyond_the_profile_name_the_model():
    """Two respondents that differ in a knob are two rows of every table, never one."""
    assert make_backend("sim").model == "sim-default"
    assert make_backend("sim:default,skill=0").model == "sim-default,skill=0"
    assert make_backend("sim:strong,seed=2").model == "sim-strong,seed=2"


def test_one_knob_syntax_and_one_set_of_names(run_main, tmp_path, director_scenes):
    """Issue 28: ``-b sim,skill=0.9`` was taken for NAME=SPEC; ``sim,uplift=0.3`` for a
    backend named '0.3'; ``director power`` lists ``uplift`` but the spec took only
    ``dir_uplift``. One syntax, ``sim[:PROFILE][,knob=value...]``, one set of names."""
    from unseen.api import parse_backend
    from unseen.backends import make_backend

    assert parse_backend("sim,skill=0.9") == ("sim,skill=0.9", None)
    assert parse_backend("gpt-6-sol=sim:strong") == ("sim:strong", "gpt-6-sol")
    assert make_backend("sim,skill=0.9").knobs.skill == 0.9
    plain = make_backend("sim:default,uplift=0.3").extras["dir_"]
    prefixed = make_backend("sim:default,dir_uplift=0.3").extras["dir_"]
    assert plain.uplift == prefixed.uplift == 0.3
    code, out, err = run_main(["run", "-b", "sim,skill=0.9", "--limit", "1", "-q",
                               "--out", str(tmp_path / "r")])
    assert code == 0, err
