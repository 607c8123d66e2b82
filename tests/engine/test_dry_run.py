"""``--dry-run``: the plan without a call. The issue's check: a dry run's estimate of a
fake-server run is within 10 % of the prompt tokens the fake server counted itself from the
bodies it received (``fake_tokens``: the same published rules, implemented apart), for
direct, spoe:T=3 and cot-sr against gpt-4o (detail high and low), Gemini 3 Flash
(media_resolution high) and Qwen2.5-VL on vLLM (max_pixels set), and beyond it for a
zoomed-in crop (spoe:finish=direct) and a resized image (max_image_side); and the calls it
counts are the real run's. A dry run writes nothing and sends nothing."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
from fake_providers import Reply
from fake_tokens import prompt_tokens
from helpers import read_journal

import unseen
from unseen.backends.tokens import OUTPUT_ASSUMPTIONS

STRATEGIES = ["direct", "spoe:T=3", "cot-sr", "spoe:T=2,finish=direct"]
QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"
LIMIT = 6


def _last_user_text(rec) -> str:
    if rec.protocol == "gemini":
        return " ".join(p.get("text", "") for p in rec.body["contents"][-1]["parts"])
    content = rec.body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(
        p.get("text", "") for p in content if p["type"] == "text")


def answer(rec) -> Reply:
    """A model's reply to what the prompt asks: a region's letter, or a box in the key the
    prompt names; the cot turn reasons first, at the length the dry run assumes for it
    (so the reply the second turn carries is as long as the estimate takes it to be)."""
    prompt = _last_user_text(rec)
    if "Answer with one letter" in prompt:
        return Reply("A")
    key = "box_2d" if '"box_2d"' in prompt else "bbox_2d" if '"bbox_2d"' in prompt else "box"
    box = json.dumps({key: [10, 10, 60, 60]})  # inside every frame, a crop's included
    if "Think step by step" not in prompt:
        return Reply(box)
    tail = "\nFinal answer: " + box
    chars = 4 * OUTPUT_ASSUMPTIONS["cot"][0]
    body = ("Step 1. The task needs the valve of the radiator. " * 40)[:chars - len(tail)]
    return Reply(body + tail)


def _backends(fp) -> list[str]:
    return [f"openai:gpt-4o@{fp.openai_base_url},detail=high",
            f"openai:gpt-4o@{fp.openai_base_url},detail=low",
            f"gemini:gemini-3-flash@{fp.gemini_base_url},media_resolution=high",
            f"vllm:{QWEN}@{fp.url},max_pixels=200704",
            f"openai:gpt-4o@{fp.openai_base_url},detail=high,max_image_side=320"]


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")


@pytest.mark.slow
def test_the_estimate_is_within_10_percent_of_what_the_fake_server_counted(
        fp, keys, sample_data, tmp_path):
    fp.serve(QWEN)
    backends = _backends(fp)
    kwargs = dict(limit=LIMIT, progress=False, cache=False)
    asked = fp.models_calls  # GET /v1/models, counted over the module's tests
    plan = unseen.run(sample_data, STRATEGIES, backends, out=tmp_path / "run", dry_run=True,
                      **kwargs)
    assert not fp.requests and fp.models_calls == asked  # nothing reached the server
    fp.default = answer
    fp.count_prompt = prompt_tokens
    unseen.run(sample_data, STRATEGIES, backends, out=tmp_path / "run", **kwargs)
    counted: dict[str, int] = defaultdict(int)
    calls: Counter = Counter()
    for rec in read_journal(tmp_path / "run"):
        assert rec["status"] == "answered", rec["error"]
        for step in rec["steps"]:
            counted[rec["backend"]] += step["reply"]["usage"]["input_tokens"]
            calls[rec["backend"]] += 1
    assert sum(calls.values()) == len(fp.requests)  # every request is a step of the journal
    figures = {}
    for row in plan.backends:
        assert row.calls == calls[row.spec]  # deterministic strategies: the same calls
        assert row.trajectories == LIMIT * len(STRATEGIES)
        figures[row.spec] = (row.input_tokens, counted[row.spec])
        assert row.input_tokens == pytest.approx(counted[row.spec], rel=0.10), figures
    print("estimate vs fake-server count:", figures)  # shown with -s, for the record


def test_a_dry_run_writes_nothing_and_sends_nothing(fp, keys, sample_data, tmp_path, run_main):
    fp.serve(QWEN)
    out = tmp_path / "earlier"
    unseen.run(sample_data, ["direct"], ["sim"], out=out, limit=2, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    argv = ["run", "--data", str(sample_data), "-s", "direct", "-s", "spoe:T=2", "--limit", "3",
            "--out", str(out), "--dry-run", "--format", "json"]
    for spec in [*_backends(fp), "sim"]:
        argv += ["-b", spec]
    asked = fp.models_calls
    code, stdout, err = run_main(argv)
    assert code == 0, err
    assert not fp.requests and fp.models_calls == asked  # no call, not even GET /v1/models
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no lock left either
    plan = json.loads(stdout)
    assert plan["dry_run"] is True and plan["run_dir"] == str(out)
    # the earlier run's two sim trajectories are done: a resume, and so the plan, skips them
    assert plan["skipped"] == 2
    rows = {r["spec"]: r for r in plan["backends"]}
    assert rows["sim"]["trajectories"] == 4 and rows["sim"]["cost_usd"] == 0.0
    fresh = tmp_path / "fresh"
    code, stdout, err = run_main([a if a != str(out) else str(fresh) for a in argv])
    assert code == 0, err
    assert not fresh.exists()


def test_a_model_without_a_price_says_so(sample_data, keys, run_main, fp):
    code, stdout, err = run_main(["run", "--data", str(sample_data), "-s", "direct",
                                  "--limit", "2", "--dry-run", "-b",
                                  f"openai:acme-vision@{fp.openai_base_url},box_format=pixel"])
    assert code == 0, err
    assert "no price" in stdout and "acme-vision" in stdout
    assert "counted by running the strategies against the simulator" in stdout
    assert "a fallback" in stdout  # no image rule is known for acme-vision: flagged
    assert not fp.requests


@pytest.mark.parametrize(("argv", "says"), [
    (["-s", "spoe:tau=0.8", "-b", "openai-responses:gpt-5"], "log-probabilities"),
    (["-s", "spoe", "-b", "baseline:center"], "cannot answer"),
    (["-s", "director:condition=move", "-b", "sim"], "reads director instances"),
    (["-s", "direct", "-b", "openai:acme-vision"], "box"),
    (["-s", "direct", "-b", "sim", "--format", "csv"], "table or json"),
])
def test_bad_combinations_are_refused_before_anything(argv, says, sample_data, keys, run_main,
                                                      tmp_path):
    out = tmp_path / "r"
    code, stdout, err = run_main(["run", "--data", str(sample_data), "--dry-run",
                                  "--out", str(out), *argv])
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_format_json_needs_a_dry_run(sample_data, run_main):
    code, _, err = run_main(["run", "--data", str(sample_data), "--format", "json"])
    assert code == 2 and "--dry-run" in err


DIRECTOR_JSON = '{"visible": [1, 2], "known": [1, 2], "block": 1, "count": 3}'


def director_answer(rec) -> Reply:
    """Every field a Director turn may ask, after prose, at the length the dry run assumes
    for a Director reply (the first turn's reply is carried into the second)."""
    chars = 4 * OUTPUT_ASSUMPTIONS["fields"][0]
    return Reply(("The director sees the blocks in front. " * 8)[:chars - len(DIRECTOR_JSON)]
                 + DIRECTOR_JSON)


@pytest.mark.slow
def test_a_director_study_is_planned_turn_by_turn(fp, keys, tmp_path, director_scenes,
                                                 run_main, capsys):
    from helpers import tiny_design

    design = tmp_path / "tiny.toml"
    design.write_text(tiny_design(n=3, samples=2, batches={"b1": ["move", "move/twoturn"]}),
                      encoding="utf-8")
    out = tmp_path / "run"
    argv = ["director", "run", str(design), "--scenes", str(director_scenes), "--no-cache",
            "-q", "--out", str(out), "-b", f"openai:gpt-4o@{fp.openai_base_url}",
            "-b", f"gemini:gemini-3-flash@{fp.gemini_base_url}"]
    code, stdout, err = run_main([*argv, "--dry-run", "--format", "json"])
    assert code == 0, err
    assert not fp.requests and not out.exists()
    plan = json.loads(stdout)
    assert plan["respondent"] == "sim:director-oracle"
    fp.default = director_answer
    fp.count_prompt = prompt_tokens
    code, _, err = run_main(argv)
    assert code == 0, err
    counted: dict[str, int] = defaultdict(int)
    calls: Counter = Counter()
    for rec in read_journal(out):
        assert rec["status"] == "answered", rec["error"]
        for step in rec["steps"]:
            counted[rec["backend"]] += step["reply"]["usage"]["input_tokens"]
            calls[rec["backend"]] += 1
    figures = {r["spec"]: (r["input_tokens"], counted[r["spec"]]) for r in plan["backends"]}
    with capsys.disabled():  # shown with -s
        print("Director estimate vs fake-server count:", figures)
    for row in plan["backends"]:
        # 3 scenes x 2 samples: move asks once, move/twoturn twice
        assert row["trajectories"] == 12 and row["calls"] == calls[row["spec"]] == 18
        assert row["input_tokens"] == row["input_text_tokens"] + row["input_image_tokens"]
        assert row["input_tokens"] == pytest.approx(counted[row["spec"]], rel=0.10), figures
        assert row["calls_by_kind"] == {"fields": 18}
    # scene sets missing from --scenes are rendered where the dry run may write, not there
    empty = tmp_path / "no-scenes"
    empty.mkdir()
    code, _, err = run_main([*[a if a != str(director_scenes) else str(empty) for a in argv],
                             "--dry-run", "--format", "json"])
    assert code == 0, err
    assert not any(empty.iterdir())


def test_trajectories_the_simulator_left_unanswered_are_said(sample_data, run_main):
    plan = unseen.run(sample_data, ["spoe:T=4"], ["sim:default,unparseable=1.0"], limit=3,
                      progress=False, dry_run=True)
    row = plan.backends[0]
    assert (row.trajectories, row.unanswered, row.calls) == (3, 3, 3)  # each stops at once
    code, stdout, _ = run_main(["run", "--data", str(sample_data), "-s", "spoe:T=4", "--limit",
                                "3", "-b", "sim:default,unparseable=1.0", "--dry-run"])
    assert code == 0 and "left 3 trajectories unanswered" in " ".join(stdout.split())
