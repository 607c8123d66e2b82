"""Defaults that agree (issue 28): ``compare`` pairs against ``direct`` as ``unseen run``
prints, in every format; one ``-b sim`` plays every model of a Director design."""

from __future__ import annotations

import json

from helpers import read_journal, run_tiny_study, tiny_design

from unseen.commands.director_run import sim_in_every_place
from unseen.evals.director.study.design import load_design


def test_compare_json_pairs_against_direct_by_default_as_run_prints(sample_data, tmp_path,
                                                                     run_main):
    run = tmp_path / "r"
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-s", "cot",
                               "--limit", "3", "--out", str(run)])
    assert code == 0 and "paired difference against direct" in " ".join(out.split()), err
    code, out, err = run_main(["compare", str(run), "--format", "json"])
    assert code == 0, err
    rows = {r["strategy"]: r for r in json.loads(out)}
    assert rows["cot"]["delta_dist"] is not None and rows["direct"]["delta_dist"] is None
    code, out, _ = run_main(["compare", str(run), "--format", "json", "--baseline", "none"])
    assert code == 0 and all(r.get("delta_dist") is None for r in json.loads(out))


def test_compare_of_one_strategy_has_no_default_baseline(sample_data, tmp_path, run_main):
    run = tmp_path / "r"
    assert run_main(["run", "--data", str(sample_data), "-s", "direct", "--limit", "2",
                     "--out", str(run)])[0] == 0
    code, out, _ = run_main(["compare", str(run), "--format", "json"])
    assert code == 0 and all(r.get("delta_dist") is None for r in json.loads(out))


DESIGN = tiny_design(n=2, batches={"a": {"models": ["gpt-x", "gpt-y"], "conditions": ["move"]},
                                   "b": {"models": ["gpt-z"], "conditions": ["move"]}})


def test_one_sim_flag_plays_every_model_of_the_design_each_with_its_own_seed(
        tmp_path, director_scenes):
    design = tmp_path / "d.toml"
    design.write_text(DESIGN)
    d = load_design(design)
    assert sim_in_every_place(d, ["sim"]) == [
        "gpt-x=sim,seed=0", "gpt-y=sim,seed=1", "gpt-z=sim,seed=2"]
    # a model another backend plays keeps it; the spec's seed and profile carry over
    assert sim_in_every_place(d, ["gpt-y=openai:gpt-4o", "sim:director-strong,seed=10"]) == [
        "gpt-y=openai:gpt-4o", "gpt-x=sim:director-strong,seed=10",
        "gpt-z=sim:director-strong,seed=12"]
    _, run_dir = run_tiny_study(tmp_path, DESIGN, ["sim"], director_scenes)
    records = read_journal(run_dir)
    assert {r["backend"] for r in records} == {"sim,seed=0", "sim,seed=1", "sim,seed=2"}
    study = json.loads((run_dir / "study.json").read_text())
    played = {b["model"]: b["spec"] for b in study["backends"]}
    assert played == {"gpt-x": "sim,seed=0", "gpt-y": "sim,seed=1", "gpt-z": "sim,seed=2"}
    again = tmp_path / "again"
    again.mkdir()
    _, run2 = run_tiny_study(again, DESIGN, ["sim"], director_scenes)
    assert [r["steps"][-1]["reply"]["text"] for r in read_journal(run2)] == \
        [r["steps"][-1]["reply"]["text"] for r in records]  # deterministic


def test_a_design_that_asks_any_model_takes_sim_as_it_is():
    assert sim_in_every_place(load_design("quick"), ["sim"]) == ["sim"]
