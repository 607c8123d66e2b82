"""Several providers in one run (issue 23, section 4): each backend spec carries its own
endpoint and key variable, so GPT and grok in one Director study send each call to its own
server; a parameter a provider rejects is dropped for that model, the call sent again once,
and the drop recorded, in OpenAI's, xAI's and vLLM's error shapes."""

from __future__ import annotations

import json

import pytest
from fake_providers import Error, FakeProvider, Reply
from helpers import read_journal, run_tiny_study, tiny_design

import unseen
from unseen.api import RunError

GPT_KEY, XAI_KEY = "sk-test-gpt-0123456789", "xai-test-0123456789"
ANSWER = '{"visible": [1, 2], "block": 3}'
# xAI's shape (what grok-4.6 answered for presencePenalty, and grok-4 for reasoningEffort)
XAI_NO_EFFORT = Error(400, body={"code": "Client specified an invalid argument",
                                 "error": "Model grok-4.6 does not support parameter "
                                          "reasoningEffort."})


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GPT_KEY)
    monkeypatch.setenv("XAI_API_KEY", XAI_KEY)


def rejects(status_error: Error, param_key: str):
    """A behaviour: the error while the request carries ``param_key``, else the answer."""
    def behave(rec):
        return status_error if param_key in rec.body else Reply(ANSWER)
    return behave


def test_gpt_and_grok_in_one_study_each_call_to_its_own_server(tmp_path, director_scenes,
                                                               capsys, run_main, monkeypatch):
    with FakeProvider(Reply(ANSWER)) as openai_srv, \
            FakeProvider(rejects(XAI_NO_EFFORT, "reasoning_effort")) as xai_srv:
        backends = [f"openai:gpt-5.6-luna@{openai_srv.openai_base_url}",
                    f"openai:grok-4.6@{xai_srv.openai_base_url},key_env=XAI_API_KEY"]
        _, run_dir = run_tiny_study(tmp_path, tiny_design("two", seed=4), backends,
                                    director_scenes, cache=False, concurrency=1)
        gpt, grok = list(openai_srv.requests), list(xai_srv.requests)
    assert {r.body["model"] for r in gpt} == {"gpt-5.6-luna"}
    assert {r.body["model"] for r in grok} == {"grok-4.6"}
    assert {r.headers["authorization"] for r in gpt} == {f"Bearer {GPT_KEY}"}
    assert {r.headers["authorization"] for r in grok} == {f"Bearer {XAI_KEY}"}
    # grok rejected reasoning_effort once: dropped, that call sent again, the rest without
    assert ["reasoning_effort" in r.body for r in grok] == [True, False, False]
    assert all(r.body["reasoning_effort"] == "medium" for r in gpt)
    rows = read_journal(run_dir)
    assert len(rows) == 4 and all(r["status"] == "answered" for r in rows)
    descs = {d["model"]: d for d in json.loads((run_dir / "run.json").read_text())["backends"]}
    assert descs["grok-4.6"]["dropped_params"] == ["reasoning_effort"]
    assert "dropped_params" not in descs["gpt-5.6-luna"]
    err = capsys.readouterr().err
    assert err.count("rejects reasoning_effort for grok-4.6") == 1
    assert XAI_KEY not in err and XAI_KEY not in (run_dir / "run.json").read_text()
    # the analysis and its HTML export say how each model was asked and what was dropped
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = run_main(["director", "analyze", str(run_dir)])
    assert code == 0, err
    dropped = "rejected by the provider and dropped: grok-4.6 reasoning_effort"
    assert dropped in out and "images: gpt-5.6-luna detail=high" in out
    code, _, err = run_main(["export", str(run_dir), "--html", str(tmp_path / "report")])
    assert code == 0, err
    page = (tmp_path / "report" / "index.html").read_text()
    assert dropped in page and "images: gpt-5.6-luna detail=high" in page


def test_one_base_url_list_for_several_models_is_refused(tmp_path, sample_data):
    with pytest.raises(RunError, match="give each backend its own endpoint"):
        unseen.run(sample_data, ["direct"], ["openai:gpt-4o", "openai:grok-4.6"],
                   base_url=["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"],
                   out=tmp_path / "r", progress=False)


OPENAI_UNSUPPORTED = Error(400, body={"error": {
    "message": "Unsupported parameter: 'temperature' is not supported with this model.",
    "type": "invalid_request_error", "param": "temperature", "code": None}})
OPENAI_VALUE = Error(400, body={"error": {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the "
               "default (1) value is supported.", "type": "invalid_request_error",
    "param": "temperature", "code": "unsupported_value"}})
VLLM_SEED = Error(400, body={"error": {"message": "seed is not supported by this server's "
                                                  "sampler", "type": "BadRequestError",
                                       "param": None, "code": 400}})
VLLM_OLD = Error(400, body={"object": "error", "message": "logprobs is not supported with "
                            "this model", "type": "BadRequestError", "param": None,
                            "code": 400})


@pytest.mark.parametrize("error, key, backend", [
    (OPENAI_UNSUPPORTED, "temperature", "openai:acme-7b,box_format=norm1000"),
    (OPENAI_VALUE, "temperature", "openai:acme-7b,box_format=norm1000"),
    (VLLM_SEED, "seed", "vllm:acme-7b@{url},box_format=norm1000"),
    (VLLM_OLD, "logprobs", "vllm:acme-7b@{url},box_format=norm1000"),
])
def test_a_rejected_parameter_is_dropped_once_and_recorded(fp, sample_data, tmp_path, run_main,
                                                           monkeypatch, error, key, backend):
    monkeypatch.setenv("COLUMNS", "200")
    fp.serve("acme-7b")
    strategy = "spoe:T=1" if key == "logprobs" else "direct"

    def behave(rec):
        if key in rec.body:
            return error
        return Reply("A" if strategy != "direct" else '{"box": [100, 200, 300, 400]}')

    fp.default = behave
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", strategy, "-b",
                               backend.format(url=fp.url), "--base-url", fp.openai_base_url,
                               "--limit", "3", "--concurrency", "1", "--no-cache",
                               "--out", str(tmp_path / "r")])
    assert code == 0, err
    sent = [key in r.body for r in fp.requests]
    assert sent == [True, False, False, False]  # dropped after the first rejection, once
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    name = "logprobs" if key == "logprobs" else key
    assert desc["dropped_params"] == [name]
    assert err.count(f"rejects {name} for acme-7b") == 1
    line = f"rejected by the provider and dropped: acme-7b {name}"
    assert line in out
    # every other reading of the run says so too: the HTML export's table notes, the
    # curve's notes (an iterating strategy) and the viewer's run page
    code, _, err = run_main(["export", str(tmp_path / "r"), "--html", str(tmp_path / "h")])
    assert code == 0, err
    assert line in (tmp_path / "h" / "index.html").read_text()
    if strategy.startswith("spoe"):
        code, out, err = run_main(["curve", str(tmp_path / "r")])
        assert code == 0 and f"note: {line}" in err, err
    from unseen.viewer.index import Catalog

    (summary,) = Catalog([tmp_path / "r"]).listing()
    assert line in summary["serving"]


def test_a_400_for_anything_else_is_no_drop(fp, sample_data, tmp_path):
    fp.default = Error(400, body={"error": {"message": "Invalid image: the file is corrupt",
                                            "type": "invalid_request_error", "param": None,
                                            "code": None}})
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=1, cache=False, progress=False)
    assert res.by_error == {"client": 1} and len(fp.requests) == 1


def test_calls_in_flight_when_a_parameter_is_dropped_are_sent_again_too(fp, sample_data,
                                                                         tmp_path, capsys):
    """Four calls at once all carry temperature; each rejection is sent again without it,
    the drop said once."""
    fp.default = (lambda rec: OPENAI_VALUE if "temperature" in rec.body
                  else Reply('{"box": [100, 200, 300, 400]}', delay=0.05))
    res = unseen.run(sample_data, ["direct"], ["openai:acme-7b,box_format=norm1000"],
                     base_url=fp.openai_base_url, out=tmp_path / "r", limit=4, cache=False,
                     progress=False, concurrency=4)
    assert res.answered == 4
    assert sum("temperature" not in r.body for r in fp.requests) == 4
    assert capsys.readouterr().err.count("rejects temperature for acme-7b") == 1
