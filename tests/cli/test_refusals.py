"""Combinations that cannot work are refused before any call: one line, exit 2, nothing run
(issue 13 §3); a rerun with another --limit records honestly what the run directory holds."""

from __future__ import annotations

import json

import pytest
from helpers import run_tiny_study, tiny_design

import unseen

TINY = tiny_design(batches={"q": ["move"]})


def one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_rule_cannot_answer_spoe(sample_data, run_main, tmp_path):
    """A fixed rule draws boxes; SPoE asks it to choose (before: 432 journal errors, exit 0)."""
    out = tmp_path / "r"
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "spoe", "-b",
                             "baseline:center", "--out", str(out), "-q"])
    line = one_line(err)
    assert code == 2 and "baseline:center" in line and "spoe" in line and "choice" in line
    assert not out.exists()


def test_a_rule_with_spoe_finish_needs_choice_too(sample_data, tmp_path):
    from unseen.engine.pairing import PairingError

    with pytest.raises(PairingError, match="choice"):
        unseen.run(sample_data, ["spoe:finish=direct"], ["baseline:prior"], out=tmp_path / "r",
                   cache=False, progress=False)
    # a rule still answers what it can: direct boxes
    res = unseen.run(sample_data, ["direct"], ["baseline:prior"], out=tmp_path / "ok",
                     cache=False, progress=False, limit=3)
    assert res.answered == 3


def test_director_strategy_on_scenefunri_data(sample_data, run_main, tmp_path):
    """Before: every trajectory ``internal: KeyError: 'visible_digits'``."""
    out = tmp_path / "r"
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "director:condition=move",
                             "--out", str(out), "-q"])
    line = one_line(err)
    assert code == 2 and "director" in line and "scenefunri" in line
    assert not out.exists()


def test_scenefunri_strategy_in_a_director_study_is_refused_before_scenes(tmp_path):
    from unseen.commands.director_run import run_study
    from unseen.engine.pairing import PairingError
    from unseen.evals.director.study.design import Design

    design = Design.model_validate({"name": "t", "size": "512x384", "sets": {"main": {"n": 2}},
                                    "batch": [{"name": "b", "conditions": ["move"]}]})
    with pytest.raises(PairingError, match="baseline:center"):
        run_study(design, ["baseline:center"], tmp_path / "run", progress=False, cache=False)
    assert not (tmp_path / "run").exists()  # no scene rendered, nothing written


@pytest.fixture(scope="module")
def director_run(tmp_path_factory, director_scenes):
    return run_tiny_study(tmp_path_factory.mktemp("dstudy"), TINY, ["sim:director-strong"],
                          director_scenes, cache=False)[1]


@pytest.mark.parametrize("argv", [["compare"], ["curve"], ["figure", "--instances", "main-000",
                                                           "--out", "x.png"]])
def test_director_run_given_to_scenefunri_views(director_run, run_main, argv, tmp_path):
    """Before: an empty table, or an error blaming ``scenes/instances.jsonl``."""
    argv = [a if a != "x.png" else str(tmp_path / "x.png") for a in argv]
    code, _, err = run_main([argv[0], str(director_run), *argv[1:]])
    line = one_line(err)
    assert code == 2 and "Director" in line and "director analyze" in line
    assert not (tmp_path / "x.png").exists()


def test_rerun_with_another_limit_records_what_the_run_holds(sample_data, tmp_path):
    """Before: a rerun with --limit 2 rewrote run.json to claim 2 instances beside 24."""
    out = tmp_path / "r"
    unseen.run(sample_data, ["direct"], ["sim"], out=out, cache=False, progress=False)
    full = json.loads((out / "run.json").read_text())
    assert full["instances"] == 24 and full["limit"] is None
    unseen.run(sample_data, ["cot"], ["sim"], out=out, limit=2, cache=False, progress=False)
    after = json.loads((out / "run.json").read_text())
    assert after["instances"] == 24 and after["limit"] is None
    assert {s["name"] for s in after["strategies"]} == {"direct", "cot"}

    small = tmp_path / "s"
    unseen.run(sample_data, ["direct"], ["sim"], out=small, limit=2, cache=False, progress=False)
    unseen.run(sample_data, ["direct"], ["sim"], out=small, limit=5, cache=False, progress=False)
    grown = json.loads((small / "run.json").read_text())
    assert grown["instances"] == 5 and grown["limit"] == 5
    lines = (small / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 5
