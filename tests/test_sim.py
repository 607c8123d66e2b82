"""The simulated respondent: deterministic, labelled, and answering in its convention."""

import json

import pytest

import unseen
from unseen.backends import BackendConfigError, make_backend
from unseen.engine.types import Message, Request, TextPart


def box_request(sample=0, instance="i1"):
    return Request(
        messages=[Message(role="user", parts=[TextPart(text="where?")])], sample=sample,
        oracle={"task": "box", "instance": instance, "truth": [100, 100, 120, 130],
                "width": 640, "height": 480},
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
