"""Model profiles: every model of both papers has one with its source; a model no profile
knows is refused for box strategies before any call; a user's profile file adds a model.

The conventions are the families' own (``backends/profiles.toml`` cites each): Qwen3-VL and
Qwen3.5 write ``bbox_2d`` relative 0-1000 (QwenLM/Qwen3-VL evaluation/ODinW-13/run_odinw.py
divides by 1000); Qwen2.5-VL pixels of its resized input; InternVL ``<box>`` 0-1000; Gemini
``box_2d`` y first; RoboBrain2.5 plain 0-1000 lists (its inference.py); the OpenAI reasoning
lines take no temperature ("Only the default (1) value is supported").
"""

from __future__ import annotations

import json

import pytest
from fake_providers import Reply
from helpers import read_journal
from hypothesis import given, settings
from hypothesis import strategies as st

from unseen.backends import BackendConfigError, make_backend
from unseen.backends.profiles import built_in, parse_profiles, profile_for
from unseen.engine.errors import UserFileError

# model name (as a user would give it) → the convention its profile asks for
PAPER_MODELS = {
    # SceneFunRI, §4.1: Gemini 3 Flash, Qwen3.5 0.8B-122B, InternVL3.5 1B-38B, Gemma 3 4B-27B,
    # RoboBrain2.5 8B, MultiHopSpatial 4B, SenseNova-SI 8B
    "gemini-3-flash-preview": "gemini",
    **{f"Qwen/Qwen3.5-{s}": "qwen3" for s in ("0.8B", "4B", "9B", "27B", "122B-A10B")},
    **{f"OpenGVLab/InternVL3_5-{s}": "norm1000" for s in ("1B", "4B", "8B", "38B")},
    **{f"google/gemma-3-{s}-it": "gemini" for s in ("4b", "12b", "27b")},
    "BAAI/RoboBrain2.5-8B-NV": "norm1000",
    "etri-vilab/MultiHopSpatial-Qwen3-VL-4B-Instruct": "qwen3",
    "sensenova/SenseNova-SI-1.1-InternVL3-8B": "norm1000",
    "sensenova/SenseNova-SI-1.1-Qwen3-VL-8B": "qwen3",
    # the Director Task: GPT-5.5, 5.6 and 6, grok-4.6, Qwen3.8-27B, Muse Glimmer-30B
    "gpt-5.5": "norm1000", "gpt-5.6-sol": "norm1000", "gpt-5.6-terra": "norm1000",
    "gpt-5.6-luna": "norm1000", "gpt-6-astra": "norm1000", "gpt-6-sol": "norm1000",
    "gpt-6-luna": "norm1000", "grok-4.6": "norm1000", "Qwen/Qwen3.8-27B": "qwen3",
    "meta/Muse-Glimmer-30B": None,  # no public convention: a box strategy needs one given
}


@pytest.mark.parametrize("model, convention", PAPER_MODELS.items())
def test_every_model_of_both_papers_has_a_profile_with_its_source(model, convention):
    profile = profile_for(model)
    assert profile is not None, model
    assert profile.box_format == convention
    assert profile.source.strip(), model


def test_the_reasoning_lines_take_no_temperature_and_return_no_logprobs():
    for model in ("gpt-5.5", "gpt-5.6-luna", "gpt-6-astra", "gpt-6-sol", "o3"):
        p = profile_for(model)
        assert not p.sampling and not p.logprobs, model
    assert profile_for("gpt-4o").sampling and profile_for("Qwen/Qwen3.5-27B").thinking


def test_a_gpt_6_model_gets_no_temperature_from_any_scenefunri_strategy(fp, sample_data,
                                                                       tmp_path, monkeypatch):
    """gpt-6-* fell through the gpt-5 pattern and got temperature 0 from every strategy."""
    import unseen

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    strategies = ["direct", "direct:prompt=hidden", "direct:prompt=common",
                  "direct:prompt=both", "cot", "cot-sr"]
    unseen.run(sample_data, strategies, ["openai:gpt-6-sol"], out=tmp_path / "r",
               base_url=fp.openai_base_url, limit=1, cache=False, progress=False)
    fp.default = Reply('{"choice": "A"}')  # the region family asks for choices
    unseen.run(sample_data, ["spoe:T=2", "spoe:T=1,votes=3", "spoe-grid:T=1"],
               ["openai:gpt-6-sol"], out=tmp_path / "s", base_url=fp.openai_base_url, limit=1,
               cache=False, progress=False)
    done = read_journal(tmp_path / "r") + read_journal(tmp_path / "s")
    assert {r["strategy"] for r in done if r["status"] == "answered"} >= {
        *strategies, "spoe:T=2", "spoe:T=1,votes=3"}
    assert len(fp.requests) >= 7 + 3  # cot-sr asks twice; spoe's step of one region
    for rec in fp.requests:
        assert "temperature" not in rec.body and "seed" not in rec.body


def test_a_model_no_profile_knows_is_refused_before_any_call(fp, sample_data, tmp_path,
                                                            run_main, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = ["run", "--data", str(sample_data), "-s", "direct", "-b", "openai:acme-vision-7b",
            "--base-url", fp.openai_base_url, "--limit", "1", "--no-cache",
            "--out", str(tmp_path / "r")]
    code, out, err = run_main(argv)
    assert code == 2 and fp.requests == [] and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "acme-vision-7b" in line and "--box-format" in line and "--profiles" in line
    assert not (tmp_path / "r" / "trajectories.jsonl").exists()
    # a strategy that asks no box needs no convention
    fp.default = Reply("A")
    code, out, err = run_main([*argv[:4], "spoe:T=1", *argv[5:-1], str(tmp_path / "s")])
    assert code == 0, err
    # --box-format, or box_format= in the spec, gives it
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    code, out, err = run_main([*argv, "--box-format", "norm1000"])
    assert code == 0, err
    (rec,) = read_journal(tmp_path / "r")
    assert rec["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0])
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert desc["box_format"] == "norm1000" and desc["profile"] is None


@pytest.mark.parametrize("model, says", [
    ("muse-glimmer-30b", "model profile 'muse-glimmer' knows 'muse-glimmer-30b' but gives no "
                         "box convention (no box convention known"),
    ("SenseNova-SI-8B", "gives no box convention (its box convention is its base's, and this "
                        "name names none: give the checkpoint's full name"),
])
def test_a_profile_without_a_box_convention_is_named_in_the_refusal(fp, sample_data, tmp_path,
                                                                    run_main, monkeypatch,
                                                                    model, says):
    """A profile that knows the model but gives no convention (Muse Glimmer: no public
    grounding format; a SenseNova-SI name without its base) says so, not 'no profile'."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                             f"openai:{model}", "--base-url", fp.openai_base_url, "--limit", "1",
                             "--no-cache", "--out", str(tmp_path / "r")])
    assert code == 2 and fp.requests == []
    (line,) = err.strip().splitlines()
    assert says in line and "--box-format" in line and "no model profile knows" not in line
    # the checkpoint's full name finds its base's convention
    from unseen.backends.profiles import profile_for

    assert profile_for("sensenova/SenseNova-SI-1.1-InternVL3-8B").box_format == "norm1000"


def test_a_user_profile_file_adds_a_model(fp, sample_data, tmp_path, run_main, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    profiles = tmp_path / "mine.toml"
    profiles.write_text('[[profile]]\nfamily = "acme"\npattern = "acme-vision"\n'
                        'box_format = "pixel"\nsampling = false\n'
                        'source = "our lab\'s model card"\n', encoding="utf-8")
    fp.default = Reply('{"box": [64, 96, 192, 192]}')
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                               "openai:acme-vision-7b", "--base-url", fp.openai_base_url,
                               "--limit", "1", "--out", str(tmp_path / "r"), "--profiles",
                               str(profiles), "--no-cache"])
    assert code == 0, err
    (rec,) = read_journal(tmp_path / "r")
    assert rec["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0])
    assert "temperature" not in fp.requests[0].body  # sampling = false
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert desc["profile"] == "acme" and desc["profile_file"] == str(profiles)
    # the user's file comes first: it can override a built-in family
    profiles.write_text('[[profile]]\npattern = "gpt-4o"\nbox_format = "unit"\n',
                        encoding="utf-8")
    assert profile_for("gpt-4o", profiles).box_format == "unit"
    code, out, err = run_main(["profiles", "acme-vision-7b", "--profiles", str(profiles)])
    assert code == 2  # not in the new file
    code, out, err = run_main(["profiles", "gpt-4o", "--profiles", str(profiles)])
    assert code == 0 and "unit" in out


@pytest.mark.parametrize("text, why", [
    ("[[profile]]\nbox_format = 'pixel'\n", "pattern"),
    ("[[profile]]\npattern = 'x'\nbox_format = 'yolo'\n", "unknown box convention"),
    ("[[profile]]\npattern = '(x'\nbox_format = 'pixel'\n", "regular expression"),
    ("[[profile]]\npattern = 'x'\nsampling = 'maybe'\n", "sampling"),
    ("[[profile]]\npattern = 'x'\ncolour = 'red'\n", "colour"),
    ("[model]\npattern = 'x'\n", "unknown table"),
    ("pattern = ", "not valid TOML"),
    ("", "no [[profile]]"),
])
def test_a_bad_profile_file_is_one_line_naming_it(tmp_path, run_main, text, why):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(["profiles", "--profiles", str(path)])
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert str(path) in line and why in line


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_the_profile_reader_never_fails_otherwise(text):
    try:
        parse_profiles(text, "f.toml")
    except UserFileError as exc:
        assert str(exc).startswith("f.toml")


def test_the_built_in_table_is_valid_and_every_entry_cites_a_source():
    table = built_in()
    assert len(table) >= 19 and all(p.source for p in table)


def test_a_spec_option_the_provider_does_not_take_is_one_line(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(BackendConfigError, match="unknown option 'colour'.*takes"):
        make_backend("openai:gpt-4o,colour=red")
    with pytest.raises(BackendConfigError, match="max_image_side.*positive whole number"):
        make_backend("openai:gpt-4o,max_image_side=-3")
    with pytest.raises(BackendConfigError, match="detail.*low, high, auto, original"):
        make_backend("openai:gpt-4o,detail=ultra")
