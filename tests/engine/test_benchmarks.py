"""Benchmarks as plug-ins (issue 17): the registry, one run pipeline for every benchmark,
typed run directories, and one base for every error a user can cause."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import pytest
from third_benchmark import Pointing

import unseen
from unseen.engine import benchmark as benchmarks
from unseen.engine.benchmark import BenchmarkError, RunRequest
from unseen.engine.errors import UnseenError
from unseen.engine.rundir import RunDir, RunDirError


def test_the_built_ins_register_by_entry_point():
    names = {b.name for b in benchmarks.available()}
    assert {"scenefunri", "director", "director-coding"} <= names
    for b in benchmarks.available():
        assert isinstance(b, benchmarks.Benchmark)  # the protocol, checked at run time


def test_unseen_benchmarks_lists_them(run_main):
    code, out, _ = run_main(["benchmarks"])
    assert code == 0
    for name in ("scenefunri", "director", "director-coding"):
        assert name in out
    assert "spoe" in out  # the strategies made for SceneFunRI's instances


def test_the_data_names_the_benchmark(sample_data, tmp_path):
    assert benchmarks.detect(sample_data).name == "scenefunri"
    assert benchmarks.detect(None).name == "scenefunri"
    design = tmp_path / "d.toml"
    design.write_text("name = 'x'\n", encoding="utf-8")
    assert benchmarks.detect(design).name == "director"
    with pytest.raises(BenchmarkError, match="no benchmark reads"):
        benchmarks.detect(tmp_path)
    with pytest.raises(BenchmarkError, match="unknown benchmark 'nope'"):
        benchmarks.get("nope")


def test_a_third_benchmark_runs_through_the_same_pipeline(sample_data, tmp_path):
    benchmarks.register(Pointing(sample_data))
    res = unseen.run(None, ["spoe:T=3", "direct"], ["sim:oracle"], benchmark="pointing-test",
                     out=tmp_path / "r", limit=4, cache=False, progress=False)
    assert res.done == 8 and res.answered == 8
    run = RunDir.open(tmp_path / "r", benchmark="pointing-test")
    assert run.config.benchmark == "pointing-test"
    assert json.loads(run.file("pointing.json").read_text())["note"]
    heads = run.heads()
    assert {h.strategy for h in heads} == {"spoe:T=3", "direct"}
    assert all(set(h.metrics) == {"hit"} for h in heads)  # scored by the benchmark's scorer
    # the oracle's direct box is centred on the target
    assert all(h.metrics["hit"] == 1.0 for h in heads if h.strategy == "direct")
    # a strategy its instances do not serve is refused before anything is written
    from unseen.engine.pairing import PairingError

    with pytest.raises(PairingError, match="director"):
        unseen.run(None, ["director:condition=move"], ["sim"], benchmark="pointing-test",
                   out=tmp_path / "no", cache=False, progress=False)
    assert not (tmp_path / "no").exists()


def test_rundir_heads_match_the_records(sample_data, tmp_path):
    unseen.run(sample_data, ["spoe:T=2", "direct"], ["sim"], out=tmp_path / "r", limit=3,
               cache=False, progress=False)
    unseen.run(sample_data, ["direct"], ["sim"], out=tmp_path / "r", limit=3, cache=False,
               progress=False)  # a resume writes nothing new: every key once
    run = RunDir.open(tmp_path / "r")
    records = {r["key"]: r for r in run.records()}
    heads = run.heads()
    assert len(heads) == len(records) == 6
    for h in heads:
        rec = records[h.key]
        assert (h.instance_id, h.model, h.strategy, h.status, h.metrics) == (
            rec["instance_id"], rec["model"], rec["strategy"], rec["status"], rec["metrics"])
        assert run.read(h) == rec  # the head's place in the journal holds the whole record
    assert run.config.instances == 3 and run.benchmark == "scenefunri"
    with pytest.raises(RunDirError, match="not a run directory"):
        RunDir.open(tmp_path)
    with pytest.raises(RunDirError, match="not a director run"):
        RunDir.open(tmp_path / "r", benchmark="director")


def _project_exceptions() -> list[type]:
    found = []
    for mod in pkgutil.walk_packages(unseen.__path__, "unseen."):
        if mod.name.endswith(("vllm_standin", "gpu_check")):
            continue
        try:
            module = importlib.import_module(mod.name)
        except ImportError:  # an optional extra (vllm)
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Exception) and obj.__module__ == module.__name__:
                found.append(obj)
    return found


# errors that never reach a user as such, each with why
INTERNAL = {
    "ProviderError": "a failed call, typed into the journal (ErrorInfo), never raised to a user",
    "BoxParseError": "a model's unreadable box: a parse error of the step",
    "CodesError": "a coder's unreadable reply: a parse error of the step",
    "LayoutError": "a scene layout that failed its checks: the generator draws another",
    "SceneError": "the same, for a rendered scene",
    "PageError": "the human page's answer to a bad request: an HTTP status",
    "AnswerError": "a person's answer the strategy cannot read: an HTTP status",
}


def test_every_error_a_user_can_cause_derives_from_unseen_error():
    for cls in _project_exceptions():
        if cls.__name__ in INTERNAL:
            continue
        assert issubclass(cls, UnseenError), f"{cls.__module__}.{cls.__name__}"


def test_anything_else_is_a_bug_and_says_so(run_main, monkeypatch):
    from unseen import cli

    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli.settings, "new_run_dir", lambda *a: broken())
    code, _, err = run_main(["run", "-s", "direct", "--limit", "1"])
    assert code == 70
    assert "internal error" in err and "bug" in err and "RuntimeError: boom" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_request_defaults():
    r = RunRequest()
    assert r.strategies == [] and r.options == {} and r.progress
