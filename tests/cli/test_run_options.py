"""``unseen run``'s first-day options (issue 28): the counts its summary gives, unanswered
reasons by strategy, decoding for every strategy, and subsets other than the first N."""

from __future__ import annotations

import json

import pytest
from fake_providers import Reply
from helpers import read_journal

from unseen.evals.scenefunri import load_dataset

KEY = "sk-test-run-options-0123456789"


@pytest.fixture(autouse=True)
def keyed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COLUMNS", "200")


def fake(fp, data, out, *extra):
    return ["run", "--data", str(data), "-b", "openai:gpt-4o", "--base-url",
            fp.openai_base_url, "--out", str(out), "--no-cache", "--concurrency", "1", *extra]


def test_the_summary_counts_the_models_as_the_bar_does_and_the_rules_apart(sample_data,
                                                                           tmp_path, run_main):
    code, out, err = run_main(["run", "--data", str(sample_data), "--limit", "2",
                               "--out", str(tmp_path / "r")])
    assert code == 0, err
    # six strategies × 2 instances by the simulator; three rules × 2 with direct
    assert "12 new trajectories of the models, as the progress bar counted, and 6 of the " \
           "fixed rules" in " ".join(out.split())
    assert len(read_journal(tmp_path / "r")) == 18


def test_unanswered_reasons_are_split_by_strategy(fp, sample_data, tmp_path, run_main):
    fp.default = Reply("I cannot say where it is.")
    code, out, err = run_main(fake(fp, sample_data, tmp_path / "r", "-s", "direct", "-s", "cot",
                                   "--limit", "2"))
    assert code == 0, err
    assert "unanswered by reason: parse 4 (cot 2, direct 2)" in " ".join(out.split())


def test_temperature_and_max_tokens_reach_every_strategy_and_its_label(fp, sample_data,
                                                                        tmp_path, run_main):
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    code, _, err = run_main(fake(fp, sample_data, tmp_path / "r", "-s", "direct",
                                 "-s", "cot:temperature=0.3", "--limit", "1",
                                 "--temperature", "0.7", "--max-tokens", "64"))
    assert code == 0, err
    bodies = sorted((r.body["temperature"], r.body["max_completion_tokens"])
                    for r in fp.requests)
    assert bodies == [(0.3, 64), (0.7, 64)]  # the spec's own temperature wins
    labels = {r["strategy"] for r in read_journal(tmp_path / "r")}
    assert labels == {"direct:max_tokens=64,temperature=0.7", "cot:max_tokens=64,temperature=0.3"}


def test_decoding_a_strategy_lacks_is_refused_in_one_line(sample_data, tmp_path, run_main):
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "spoe",
                               "--max-tokens", "64", "--out", str(tmp_path / "r")])
    assert code == 2 and err.count("\n") == 1 and "'spoe' has no max_tokens" in err
    assert not (tmp_path / "r").exists()


def test_instances_by_id_are_run_recorded_and_held_to_on_resume(sample_data, tmp_path,
                                                                  run_main):
    ids = [i.id for i in load_dataset(sample_data).instances]
    chosen = [ids[3], ids[1]]
    argv = ["run", "--data", str(sample_data), "-s", "direct", "--out", str(tmp_path / "r"),
            "--instances", ",".join(chosen)]
    code, _, err = run_main(argv)
    assert code == 0, err
    assert {r["instance_id"] for r in read_journal(tmp_path / "r")} == set(chosen)
    config = json.loads((tmp_path / "r" / "run.json").read_text())
    assert config["subset"] == {"instances": chosen, "ids": [ids[1], ids[3]]}
    assert config["instances"] == 2
    code, out, err = run_main(argv)  # the same subset resumes
    assert code == 0 and "resumed: 2 trajectories were already done" in out
    for other in (["--instances", ids[0]], ["--limit", "2"], ["--sample", "2"]):
        code, _, err = run_main([*argv[:-2], *other])
        assert code == 2 and err.count("\n") == 1 and "give the same subset" in err, other
    assert len(read_journal(tmp_path / "r")) == 2  # nothing lost, nothing added


def test_a_seeded_sample_is_the_same_draw_each_time_and_another_seed_is_refused(
        sample_data, tmp_path, run_main):
    def run(out, seed):
        code, _, err = run_main(["run", "--data", str(sample_data), "-s", "direct",
                                 "--sample", "3", "--seed", str(seed), "--out", str(out)])
        assert code == 0, err
        return json.loads((out / "run.json").read_text())["subset"]

    first, again = run(tmp_path / "a", 5), run(tmp_path / "b", 5)
    assert first == again and first["sample"] == 3 and len(first["ids"]) == 3
    assert run(tmp_path / "c", 6)["ids"] != first["ids"]
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "--sample",
                             "3", "--seed", "6", "--out", str(tmp_path / "a")])
    assert code == 2 and "--sample 3 --seed 5, now --sample 3 --seed 6" in err


@pytest.mark.parametrize("extra, words", [
    (["--instances", "no-such-id"], "no instance 'no-such-id'"),
    (["--sample", "1000"], "holds only"),
    (["--sample", "2", "--limit", "2"], "give one of them"),
    (["--seed", "2"], "give --sample too"),
])
def test_a_bad_subset_is_one_line(sample_data, tmp_path, run_main, extra, words):
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct",
                               "--out", str(tmp_path / "r"), *extra])
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err
    assert not (tmp_path / "r" / "trajectories.jsonl").exists()


# --- unseen run CONFIG.toml ------------------------------------------------------------------


def write_config(tmp_path, sample_data, text=""):
    path = tmp_path / "conf" / "run.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f'data = "{sample_data}"\nstrategies = ["direct", "cot"]\n'
                    f'backends = ["sim"]\nsample = 2\nseed = 4\ntemperature = 0.2\n'
                    f'out = "runs/a"\n{text}')
    return path


def test_a_configuration_file_runs_and_its_relative_out_is_the_files(sample_data, tmp_path,
                                                                     run_main):
    path = write_config(tmp_path, sample_data)
    code, out, err = run_main(["run", str(path)])
    assert code == 0, err
    run_dir = tmp_path / "conf" / "runs" / "a"
    records = read_journal(run_dir)
    assert {r["strategy"] for r in records} == {"direct:temperature=0.2", "cot:temperature=0.2"}
    config = json.loads((run_dir / "run.json").read_text())
    assert config["subset"]["sample"] == 2 and config["subset"]["seed"] == 4
    assert len(records) == 4  # no rule rows: the file names its strategies


def test_flags_on_the_command_line_win_over_the_file(sample_data, tmp_path, run_main):
    path = write_config(tmp_path, sample_data)
    code, _, err = run_main(["run", str(path), "-s", "direct", "--temperature", "0.5",
                             "--out", str(tmp_path / "b")])
    assert code == 0, err
    assert {r["strategy"] for r in read_journal(tmp_path / "b")} == {"direct:temperature=0.5"}
    assert not (tmp_path / "conf" / "runs").exists()


@pytest.mark.parametrize("text, words", [
    ("bogus = 1\n", "unknown key 'bogus'"),
    ("samples = 0\n", "samples: Input should be greater than or equal to 1"),
    ("samples = \n", "not valid TOML"),
])
def test_a_bad_configuration_file_is_one_line_naming_the_key_and_file(
        sample_data, tmp_path, run_main, text, words):
    path = write_config(tmp_path, sample_data, text)
    code, _, err = run_main(["run", str(path)])
    assert code == 2 and err.count("\n") == 1 and words in err and str(path) in err
    assert not (tmp_path / "conf" / "runs").exists()
