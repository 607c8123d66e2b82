"""``--max-cost``: the runner adds up what each finished trajectory spent (its steps' token
usage at its model's price, a user's price file here); once that reaches the cap no new
trajectory starts, those in flight finish and are journaled, the last line says so with the
amount, exit status 3; a rerun with the same --out resumes. A model without a price is
refused before any call; the simulator and the rules cost nothing."""

from __future__ import annotations

import json

import pytest
from fake_providers import Reply
from helpers import read_journal, run_tiny_study, tiny_design
from typer.testing import CliRunner

import unseen
from unseen import cli
from unseen.backends.prices import parse_prices, usage_of

# acme-vision: $100 / $10 / $1000 per million tokens in / cached in / out
PRICES = ('[[price]]\npattern = "acme-vision"\ninput = 100.0\ncached_input = 10.0\n'
          'output = 1000.0\nbatch_discount = 0.5\ndate = 2026-12-01\nsource = "a test"\n')
# one call: 500 uncached + 500 cached input tokens, 100 output tokens (60 of them reasoning)
CALL = dict(prompt_tokens=1000, cached_tokens=500, completion_tokens=100, reasoning_tokens=60)
CALL_COST = (500 * 100 + 500 * 10 + 100 * 1000) / 1e6  # $0.155


@pytest.fixture
def prices_file(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(PRICES, encoding="utf-8")
    return path


def _argv(sample_data, fp, out, *more):
    return ["run", "--data", str(sample_data), "-s", "direct", "-b", "openai:acme-vision-7b",
            "--base-url", fp.openai_base_url, "--box-format", "norm1000", "--limit", "10",
            "--no-cache", "--concurrency", "1", "--out", str(out), *more]


def _spent(run_dir) -> float:
    price = parse_prices(PRICES, "t")[0]
    return sum(price.cost(usage_of(s["reply"]["usage"])) for r in read_journal(run_dir)
               for s in r["steps"])


def test_the_run_stops_at_the_cost_cap_and_resumes(fp, sample_data, tmp_path, run_main,
                                                  monkeypatch, prices_file):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply('{"box": [100, 200, 300, 400]}', **CALL)
    out = tmp_path / "r"
    code, stdout, err = run_main(_argv(sample_data, fp, out, "--max-cost", "0.5",
                                       "--prices", str(prices_file)))
    assert code == 3, err
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("stopped at the cost cap: spent $") and "--max-cost $0.5" in last
    recs = read_journal(out)
    # the cap was reached: nothing new was handed out, those in flight were journaled
    assert 4 <= len(recs) < 10
    assert len(fp.requests) == len(recs)  # every call made is in the journal: nothing lost
    spent = _spent(out)
    assert spent >= 0.5 and spent == pytest.approx(len(recs) * CALL_COST)
    assert f"${spent:.4f}" in last
    # the journal keeps the cached tokens each reply reported
    usage = recs[0]["steps"][0]["reply"]["usage"]
    assert usage["cached_input_tokens"] == 500 and usage["output_tokens"] == 100
    # the same --out resumes: only what was not started is asked
    fp.requests.clear()
    code, stdout, err = run_main(_argv(sample_data, fp, out, "--prices", str(prices_file)))
    assert code == 0, err
    assert len(fp.requests) == 10 - len(recs)
    again = read_journal(out)
    assert len(again) == 10 and len({r["key"] for r in again}) == 10


def test_a_cap_not_reached_says_what_was_spent(fp, sample_data, tmp_path, run_main,
                                               monkeypatch, prices_file):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("UNSEEN_PRICES", str(prices_file))  # the environment's price file
    fp.default = Reply('{"box": [100, 200, 300, 400]}', **CALL)
    code, stdout, err = run_main(_argv(sample_data, fp, tmp_path / "r", "--max-cost", "100"))
    assert code == 0, err
    assert stdout.strip().splitlines()[-1] == f"spent ${10 * CALL_COST:.4f} of --max-cost $100"


def test_replies_the_cache_served_cost_nothing(fp, sample_data, tmp_path, monkeypatch,
                                               prices_file):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply('{"box": [100, 200, 300, 400]}', **CALL)
    kw = dict(base_url=fp.openai_base_url, limit=3, progress=False, box_format="norm1000",
              cache_dir=tmp_path / "cache", prices=prices_file, max_cost=50.0)
    first = unseen.run(sample_data, ["direct"], ["openai:acme-vision-7b"], out=tmp_path / "a",
                       **kw)
    assert first.spent == pytest.approx(3 * CALL_COST) and not first.cost_capped
    second = unseen.run(sample_data, ["direct"], ["openai:acme-vision-7b"],
                        out=tmp_path / "b", **kw)
    assert second.cache_hits == 3 and second.spent == 0.0


def test_a_model_without_a_price_is_refused_before_any_call(fp, sample_data, tmp_path,
                                                            run_main, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("UNSEEN_PRICES", raising=False)
    code, stdout, err = run_main(_argv(sample_data, fp, tmp_path / "r", "--max-cost", "1"))
    assert code == 2 and fp.requests == [] and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "no price for acme-vision-7b" in line and "--prices" in line
    assert not (tmp_path / "r" / "trajectories.jsonl").exists()


@pytest.mark.parametrize("more, why", [
    (["--max-cost", "0"], "positive"), (["--max-cost", "-2"], "positive"),
    (["--max-cost", "nan"], "positive"), (["--max-cost", "1", "--processes", "2"], "--processes"),
])
def test_a_bad_cap_is_one_line(fp, sample_data, tmp_path, run_main, monkeypatch, prices_file,
                               more, why):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, stdout, err = run_main(_argv(sample_data, fp, tmp_path / "r", "--prices",
                                       str(prices_file), *more))
    assert code == 2 and fp.requests == [] and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert why in line


def test_a_bad_price_file_is_refused_before_a_run(fp, sample_data, tmp_path, run_main,
                                                  monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[price]]\npattern = "x"\n', encoding="utf-8")
    code, stdout, err = run_main(_argv(sample_data, fp, tmp_path / "r", "--max-cost", "1",
                                       "--prices", str(bad)))
    assert code == 2 and fp.requests == [] and str(bad) in err
    assert len(err.strip().splitlines()) == 1


def test_the_simulator_and_the_rules_cost_nothing(sample_data, tmp_path, run_main):
    code, stdout, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b", "sim",
                                  "-b", "baseline:center", "--limit", "3", "--no-cache",
                                  "--max-cost", "0.01", "--out", str(tmp_path / "r")])
    assert code == 0, err
    assert stdout.strip().splitlines()[-1] == "spent $0.0000 of --max-cost $0.01"
    assert len(read_journal(tmp_path / "r")) == 6


def test_a_director_study_stops_at_its_cost_cap(fp, tmp_path, director_scenes, monkeypatch,
                                                prices_file):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply(json.dumps({"visible": [1, 2], "choice": 1}), **CALL)
    design = tiny_design(samples=2, n=4, batches={"b": ["move", "move/novis"]})
    _, run_dir = run_tiny_study(tmp_path, design, ["acme-vision-7b=openai:acme-vision-7b"],
                                director_scenes, cache=False, base_url=fp.openai_base_url,
                                concurrency=1, max_cost=0.4, prices=prices_file)
    recs = read_journal(run_dir)
    assert 3 <= len(recs) < 16 and len(fp.requests) == len(recs)
    # the command says it in its last line, exit status 3; what the run directory spent
    # counts: the same cap again starts nothing, a higher one goes on
    argv = ["director", "run", str(tmp_path / "tiny.toml"), "-b",
            "acme-vision-7b=openai:acme-vision-7b", "--out", str(run_dir), "--scenes",
            str(director_scenes), "--base-url", fp.openai_base_url, "--no-cache",
            "--concurrency", "1", "--prices", str(prices_file), "--max-cost"]
    fp.requests.clear()
    res = CliRunner().invoke(cli.app, [*argv, "0.4"])
    assert res.exit_code == 3, res.output
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("stopped at the cost cap: spent $") and "before this invocation" in last
    assert fp.requests == [] and len(read_journal(run_dir)) == len(recs)
    higher = round(_spent(run_dir) + 0.3, 4)
    res = CliRunner().invoke(cli.app, [*argv, str(higher)])
    assert res.exit_code == 3, res.output
    assert res.output.strip().splitlines()[-1].startswith("stopped at the cost cap: spent $")
    assert len(recs) < len(read_journal(run_dir)) <= 16


# --batch: gpt-4o through OpenAI's batch API, at acme-vision's prices and its batch discount
# (0.5); the fake counts each request's prompt tokens by the rules the estimate uses
# (fake_tokens), and replies with the 25 output tokens the estimate assumes for a box
BATCH = ["--batch", "--batch-window", "0.2", "--batch-poll", "0.1"]
GPT = PRICES.replace('"acme-vision"', '"gpt-4o"')


def _batch_argv(sample_data, fp, out, prices, *more):
    argv = _argv(sample_data, fp, out, *BATCH, "--prices", str(prices), *more)
    return [a.replace("acme-vision-7b", "gpt-4o") for a in argv]


def _batch_spent(run_dir) -> float:
    price = parse_prices(GPT, "t")[0]
    return sum(price.cost(usage_of(s["reply"]["usage"]), batch=True)
               for r in read_journal(run_dir) for s in r["steps"])


@pytest.fixture
def batch_fp(fp, tmp_path, monkeypatch):
    from fake_tokens import prompt_tokens

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "gpt.toml").write_text(GPT, encoding="utf-8")
    fp.default = Reply('{"box": [100, 200, 300, 400]}', completion_tokens=25)
    fp.count_prompt = prompt_tokens
    fp.batch_polls = 0
    return fp


def test_a_batch_run_stops_at_the_cost_cap(batch_fp, sample_data, tmp_path, run_main):
    """Each line's estimated cost is committed before its batch is sent, and a trajectory's
    first call is sent only while spent + committed is under the cap: the run stops as a run
    without --batch does (exit 3, the same last line), near the cap, not a batch past it."""
    fp, out = batch_fp, tmp_path / "r"
    code, stdout, err = run_main(_batch_argv(sample_data, fp, out, tmp_path / "gpt.toml",
                                             "--max-cost", "0.2"))
    assert code == 3, err
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("stopped at the cost cap: spent $") and "--max-cost $0.2" in last
    recs = read_journal(out)
    assert 1 <= len(recs) < 10 and len(fp.requests) == len(recs)  # all paid is journaled
    spent = _batch_spent(out)
    assert f"${spent:.4f}" in last
    one = spent / len(recs)  # the lines cost alike (the sample's images are one size)
    assert 0.2 <= spent < 0.2 + one  # past the cap by less than a line
    # what the run directory spent counts: the same cap sends nothing, a higher one goes on
    fp.requests.clear()
    code, stdout, err = run_main(_batch_argv(sample_data, fp, out, tmp_path / "gpt.toml",
                                             "--max-cost", "0.2"))
    assert code == 3 and fp.requests == [] and len(fp._batches) == 1, err
    last = stdout.strip().splitlines()[-1]
    assert f"spent ${spent:.4f} of --max-cost $0.2 (${spent:.4f} of it before" in last
    code, stdout, err = run_main(_batch_argv(sample_data, fp, out, tmp_path / "gpt.toml",
                                             "--max-cost", "0.3"))
    assert code == 3 and len(fp._batches) == 2, err
    assert len(recs) < len(read_journal(out)) < 10
    assert 0.3 <= _batch_spent(out) < 0.3 + one


def test_a_capped_batch_run_finishes_the_trajectories_it_started(batch_fp, sample_data,
                                                                 tmp_path):
    """SPoE's later steps of a trajectory whose first step went are sent past the cap (it
    finishes, as a trajectory in flight does without --batch); no trajectory starts after."""
    fp = batch_fp
    fp.default = lambda rec: Reply("A" if "LESS" in json.dumps(rec.body) else
                                   '{"box": [100, 200, 300, 400]}', completion_tokens=5)
    res = unseen.run(sample_data, ["spoe:T=2"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=10, batch=True, batch_window_s=0.2,
                     batch_poll_s=0.02, cache=False, progress=False, max_cost=0.1,
                     prices=tmp_path / "gpt.toml")
    assert res.cost_capped and 1 <= res.done < 10
    recs = read_journal(tmp_path / "r")
    assert all(r["status"] == "answered" and len(r["steps"]) == 2 for r in recs)
    assert len(fp.requests) == 2 * len(recs)  # every call paid for is journaled
    assert res.spent == pytest.approx(_batch_spent(tmp_path / "r"))
