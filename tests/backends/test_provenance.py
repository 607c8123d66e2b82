"""Every reply keeps what the provider says it served, and the reply cache never replays
another checkpoint's replies (issue 23, section 3).

- OpenAI's response ``model`` (a dated snapshot behind an alias) and ``system_fingerprint``;
  the Responses API's ``model``; Gemini's ``modelVersion``; a vLLM server's served ``root``
  and ``max_model_len`` (GET /v1/models: vLLM's ``ModelCard``, asked once per server).
- The cache key holds the serving identity: two servers serving other weights under one
  model name share no reply; ``--cache-tag`` covers what unseen cannot see.
"""

from __future__ import annotations

import json

import pytest
from fake_providers import FakeProvider, Reply
from helpers import read_journal

import unseen
from unseen.api import RunError
from unseen.engine.errors import UnseenError

MODEL = "Qwen/Qwen3-VL-8B"
BOX = '{"bbox_2d": [100, 200, 300, 400]}'


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")


def served(run_dir) -> list[dict]:
    return [s["reply"]["served"] for r in read_journal(run_dir) for s in r["steps"]]


@pytest.mark.parametrize("backend, base, reply, expected", [
    ("openai:gpt-5.5", "openai", Reply('{"box": [1, 2, 3, 4]}', served_model="gpt-5.5-2026-09-01",
                                       system_fingerprint="fp_5f1c"),
     {"model": "gpt-5.5-2026-09-01", "system_fingerprint": "fp_5f1c"}),
    ("openai-responses:gpt-5.5", "openai",
     Reply('{"box": [1, 2, 3, 4]}', served_model="gpt-5.5-2026-09-01"),
     {"model": "gpt-5.5-2026-09-01"}),
    ("gemini:gemini-3-flash", "gemini",
     Reply('{"box_2d": [1, 2, 3, 4]}', served_model="gemini-3-flash-preview-11-2026"),
     {"model_version": "gemini-3-flash-preview-11-2026"}),
])
def test_each_step_keeps_what_the_provider_says_it_served(fp, sample_data, tmp_path, backend,
                                                          base, reply, expected):
    fp.default = reply
    url = fp.openai_base_url if base == "openai" else fp.gemini_base_url
    unseen.run(sample_data, ["cot-sr"], [backend], base_url=url, out=tmp_path / "r", limit=1,
               cache=False, progress=False)
    assert served(tmp_path / "r") == [expected, expected]


def test_a_vllm_server_says_which_weights_it_serves_once(fp, sample_data, tmp_path, run_main):
    fp.serve(MODEL, root="/weights/qwen3-vl-8b-2026-10", max_model_len=8192)
    fp.default = Reply(BOX)
    fp.models_calls = 0
    unseen.run(sample_data, ["direct", "cot"], [f"vllm:{MODEL}@{fp.url}"], out=tmp_path / "r",
               limit=3, cache=False, progress=False, concurrency=4)
    assert fp.models_calls == 1  # once per server, not once per call
    expected = {"model": MODEL, "root": "/weights/qwen3-vl-8b-2026-10", "max_model_len": 8192}
    assert all(s == expected for s in served(tmp_path / "r"))
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert desc["served"] == {"root": "/weights/qwen3-vl-8b-2026-10", "max_model_len": 8192}


def test_a_server_that_does_not_serve_the_model_is_one_line(fp, sample_data, tmp_path,
                                                           run_main):
    code, out, err = run_main(["run", "--data", str(sample_data), "-b",
                               f"vllm:not-served@{fp.url}", "-s", "direct",
                               "--box-format", "qwen3", "--out", str(tmp_path / "r")])
    assert code == 2 and fp.requests == []
    (line,) = err.strip().splitlines()
    assert "does not serve 'not-served'" in line and "GET /v1/models lists" in line


def test_two_checkpoints_under_one_name_never_share_replies(sample_data, tmp_path):
    cache = tmp_path / "cache"
    with FakeProvider(Reply('{"bbox_2d": [100, 100, 200, 200]}')).serve(
            MODEL, root="/weights/v1") as old, \
            FakeProvider(Reply('{"bbox_2d": [500, 500, 900, 900]}')).serve(
                MODEL, root="/weights/v2") as new:
        first = unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{old.url}"],
                           out=tmp_path / "old", limit=3, cache_dir=cache, progress=False)
        again = unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{old.url}"],
                           out=tmp_path / "old-again", limit=3, cache_dir=cache, progress=False)
        other = unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{new.url}"],
                           out=tmp_path / "new", limit=3, cache_dir=cache, progress=False)
        assert first.cache_hits == 0 and again.cache_hits == 3  # the same weights: replayed
        assert other.cache_hits == 0 and len(new.requests) == 3  # others: asked
        preds = {tuple(r["prediction"]) for r in read_journal(tmp_path / "new")}
        assert all(p[0] > 300 for p in preds)  # the new weights' answers
        # spreading one backend over both is refused: its replies would mix two models
        with pytest.raises(UnseenError, match="serve different models under one name"):
            unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{old.url},{new.url}"],
                       out=tmp_path / "mixed", limit=1, cache=False, progress=False)


def test_a_cache_tag_separates_what_unseen_cannot_see(fp, sample_data, tmp_path):
    """An OpenAI alias may move to a new snapshot: --cache-tag keeps its replies apart."""
    cache = tmp_path / "cache"
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    kw = dict(base_url=fp.openai_base_url, limit=2, cache_dir=cache, progress=False)
    assert unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "a",
                      **kw).cache_hits == 0
    assert unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "b",
                      **kw).cache_hits == 2
    tagged = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "c",
                        cache_tag="snapshot 2026-11", **kw)
    assert tagged.cache_hits == 0
    assert unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "d",
                      cache_tag="snapshot 2026-11", **kw).cache_hits == 2
    desc = json.loads((tmp_path / "c" / "run.json").read_text())["backends"][0]
    assert desc["cache_tag"] == "snapshot 2026-11"
    # and so does another image setting: the request sent differs
    assert unseen.run(sample_data, ["direct"], ["openai:gpt-4o,detail=low"],
                      out=tmp_path / "e", **kw).cache_hits == 0


def test_run_json_keeps_the_projects_git_commit(sample_data, tmp_path):
    from unseen import settings

    unseen.run(sample_data, ["direct"], ["sim"], out=tmp_path / "r", limit=1, progress=False)
    config = json.loads((tmp_path / "r" / "run.json").read_text())
    commit = settings.git_commit()
    assert config["git_commits"] == ([commit] if commit else [])


def test_a_run_directory_does_not_resume_on_other_weights(sample_data, tmp_path):
    out = tmp_path / "r"
    with FakeProvider(Reply(BOX)).serve(MODEL, root="/weights/v1") as srv:
        unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{srv.url}"], out=out, limit=1,
                   cache=False, progress=False)
        srv.serve(MODEL, root="/weights/v2")  # the server restarted on new weights
        with pytest.raises(RunError, match="serves other weights.*--out NEW_DIR"):
            unseen.run(sample_data, ["direct"], [f"vllm:{MODEL}@{srv.url}"], out=out,
                       limit=2, cache=False, progress=False)


def test_show_names_what_was_served_and_why_a_reply_stopped(fp, sample_data, tmp_path,
                                                            run_main, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    fp.default = Reply('{"box": [1, 2, 3, 4]}', served_model="gpt-5.5-2026-09-01",
                       system_fingerprint="fp_5f1c", finish_reason="length")
    unseen.run(sample_data, ["direct"], ["openai:gpt-5.5"], base_url=fp.openai_base_url,
               out=tmp_path / "r", limit=1, cache=False, progress=False)
    (rec,) = read_journal(tmp_path / "r")
    code, out, err = run_main(["show", str(tmp_path / "r"), rec["instance_id"], "--no-images"])
    assert code == 0, err
    assert "served  model=gpt-5.5-2026-09-01, system_fingerprint=fp_5f1c" in out
    assert "stopped length" in out
