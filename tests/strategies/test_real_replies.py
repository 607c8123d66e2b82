"""What a real model's reply does to a trajectory, through the real SDKs and a local server:
a revision that gives no box, a reply cut at a length limit, a box in another convention, a
confidence stop on a backend that returns no log-probabilities (issue 23, section 2)."""

from __future__ import annotations

import json

import pytest
from fake_providers import Reply
from helpers import read_journal, run_tiny_study, tiny_design

from unseen.evals.director.analysis.analyze import analyze_run

KEY = "sk-test-real-replies-0123456789"
BOX = '{"box": [100, 200, 300, 400]}'  # norm1000, as gpt-4o's profile asks


@pytest.fixture(autouse=True)
def keyed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("COLUMNS", "200")


def argv(fp, data, out, strategy="direct", backend="openai:gpt-4o", *extra):
    base = fp.gemini_base_url if backend.startswith("gemini") else fp.openai_base_url
    return ["run", "--data", str(data), "-s", strategy, "-b", backend, "--base-url", base,
            "--limit", "1", "--out", str(out), "--no-cache", "--concurrency", "1", *extra]


def test_an_unsure_revision_keeps_the_first_box_and_is_counted_apart(fp, sample_data,
                                                                      tmp_path, run_main):
    """3 of 4 unanswered cot-sr trajectories on one run were a valid first box and "Sorry,
    unsure." for the revision: the first box now stands."""
    fp.script(Reply(BOX), Reply("Sorry, unsure."))
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "r", "cot-sr"))
    assert code == 0, err
    (rec,) = read_journal(tmp_path / "r")
    assert rec["status"] == "answered" and rec["error"] is None
    assert rec["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0])
    assert rec["notes"] == {"fallback": "first box kept"}
    first, revision = rec["steps"]
    assert revision["parse_error"] and revision["info"]["unusable"] == "parse"
    assert revision["parsed"] == first["parsed"]
    assert "cot-sr:" in out and "1 trajectories answered with an earlier step's answer" in out
    code, out, _ = run_main(["show", str(tmp_path / "r")])
    assert code == 0 and "answered with an earlier step's answer" in out


@pytest.mark.parametrize("backend", ["openai:gpt-4o", "openai-responses:gpt-4o",
                                     "gemini:gemini-2.5-flash"])
def test_a_reply_cut_at_a_length_limit_is_its_own_reason(fp, sample_data, tmp_path, run_main,
                                                         backend):
    """finish_reason length (Chat Completions), incomplete max_output_tokens (Responses),
    MAX_TOKENS (Gemini): the reason is ``length``, never ``parse``, and the summary says how
    many replies stopped at the limit."""
    fp.default = Reply('I think the socket is at {"box_2d": [100, 2', finish_reason="length")
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "r", "direct", backend))
    assert code == 0, err  # a model's answer, not a failed call
    (rec,) = read_journal(tmp_path / "r")
    assert rec["status"] == "unanswered" and rec["error"]["kind"] == "length"
    assert "length limit" in rec["error"]["message"]
    assert rec["notes"] == {"length_stops": 1}
    assert "unanswered by reason: length 1" in out
    assert "stopped at a length limit: 1 replies" in out
    code, out, _ = run_main(["show", str(tmp_path / "r")])
    assert "1 replies stopped at a length limit" in out


def test_a_cut_reply_that_still_holds_its_answer_is_answered_and_counted(fp, sample_data,
                                                                          tmp_path, run_main):
    fp.default = Reply(BOX + "\nThe socket sits behind the bed, where", finish_reason="length")
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "r"))
    (rec,) = read_journal(tmp_path / "r")
    assert rec["status"] == "answered" and rec["notes"] == {"length_stops": 1}
    assert "stopped at a length limit: 1 replies" in out


def test_a_box_in_another_convention_is_a_format_mismatch_not_retried(fp, sample_data, tmp_path,
                                                                      run_main):
    """RoboBrain2.5 is asked for 0-1000 {"box"}; a Qwen-style pixel {"bbox_2d"} reply is
    unparsed with reason format_mismatch, not read as 0-1000 without a word."""
    fp.default = Reply('{"bbox_2d": [120, 300, 260, 410]}')
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "r", "direct",
                                   "openai:BAAI/RoboBrain2.5-8B-NV"))
    (rec,) = read_journal(tmp_path / "r")
    assert rec["error"]["kind"] == "format_mismatch" and rec["prediction"] is None
    assert "'bbox_2d'" in rec["error"]["message"] and "format_mismatch 1" in out
    # a model's answer: a rerun does not ask again
    run_main(argv(fp, sample_data, tmp_path / "r", "direct", "openai:BAAI/RoboBrain2.5-8B-NV"))
    assert len(fp.requests) == 1


@pytest.mark.parametrize("backend", ["openai-responses:gpt-4o", "openai:gpt-6-sol"])
def test_a_confidence_stop_without_log_probabilities_is_refused_before_any_call(
        fp, sample_data, tmp_path, run_main, backend):
    """spoe:tau reads log-probabilities; the Responses API returns none, nor do the GPT-5 and
    GPT-6 reasoning lines (their profiles): refused, one line, no call."""
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "r", "spoe:T=2,tau=0.8",
                                   backend))
    assert code == 2 and fp.requests == [] and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "needs logprobs" in err and "votes=N" in err
    # votes give the confidence: accepted
    fp.default = Reply('{"choice": "A"}')
    code, out, err = run_main(argv(fp, sample_data, tmp_path / "v",
                                   "spoe:T=1,tau=0.8,votes=3", backend))
    assert code == 0, err


def test_a_director_study_says_how_many_replies_stopped_at_a_length_limit(fp, tmp_path,
                                                                         director_scenes):
    """The Director paper checks that "no reply stopped at a length limit": the analysis
    states the count either way."""
    fp.default = Reply('{"visible": [1, 2], "block": 3}', finish_reason="length")
    _, run_dir = run_tiny_study(tmp_path, tiny_design("cut", seed=3),
                                [f"openai:gpt-4o@{fp.openai_base_url}"], director_scenes,
                                cache=False)
    analysis = analyze_run(run_dir)
    assert analysis.length_stops == analysis.n_replies == 2
    from unseen.evals.director.analysis.shown import heading
    from unseen.evals.director.analysis.tables import render

    assert "2 stopped at a length limit" in heading(analysis)[0]
    assert json.loads(render(analysis, "json"))["length_stops"] == 2
