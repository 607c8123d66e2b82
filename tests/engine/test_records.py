"""The read side's typed record (engine/records.py) has the models' shape, field for field,
and the run directory hands it out whole: every top-level field of a record from any
journal (an old one that lacks the newer fields included), the steps' fields too where a
view reads the steps; and the journal is read once per RunDir until it changes (issue 27)."""

from __future__ import annotations

import json
import typing

import pytest

from unseen.engine import records as R
from unseen.engine import types as T
from unseen.engine.rundir import RunDir

PAIRS = [(R.ErrorRecord, T.ErrorInfo), (R.UsageRecord, T.Usage), (R.ImageRecord, T.ImagePart),
         (R.ReplyRecord, T.Reply), (R.StepRecord, T.Step), (R.TrajectoryRecord, T.Trajectory)]


@pytest.mark.parametrize(("record", "model"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_each_record_names_its_models_fields(record, model):
    assert list(typing.get_type_hints(record)) == list(model.model_fields)


def test_the_top_level_defaults_are_the_models():
    minimal = T.Trajectory(key="k", run="r", instance_id="i", strategy="s", backend="b",
                           model="m", status="answered")
    filled = R.fill_top({k: minimal.model_dump()[k] for k in
                         ("key", "run", "instance_id", "strategy", "backend", "model",
                          "status")})
    assert filled == minimal.model_dump()


OLD = {"key": "k1", "run": "old", "instance_id": "i1", "strategy": "direct", "backend": "sim",
       "model": "sim-default", "status": "answered",
       "steps": [{"index": 0, "name": "answer", "prompt": "p", "reply": {"text": "t"}}]}


def _journal(tmp_path, *recs) -> RunDir:
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return RunDir(tmp_path)


def test_an_old_record_is_handed_out_whole(tmp_path):
    run = _journal(tmp_path, OLD)
    (rec,) = run.records()
    assert set(rec) == set(T.Trajectory.model_fields)  # no field missing, none guessed
    assert rec["simulated"] is False and rec["error"] is None and rec["metrics"] == {}
    (head,) = run.heads()
    whole = run.record(head)
    step = whole["steps"][0]
    assert set(step) == set(T.Step.model_fields) and step["region"] is None
    assert step["reply"]["error"] is None and step["reply"]["usage"]["cached_input_tokens"] == 0


def test_the_journal_is_read_once_until_it_changes(tmp_path, monkeypatch):
    from unseen.engine import rundir

    run = _journal(tmp_path, OLD)
    reads = []
    real = rundir.iter_placed
    monkeypatch.setattr(rundir, "iter_placed", lambda path: reads.append(path) or real(path))
    assert [r["key"] for r in run.records()] == ["k1"]
    assert [r["key"] for r in run.records()] == ["k1"]
    assert len(reads) == 1
    with open(run.journal, "a") as fh:  # a resumed run appends
        fh.write(json.dumps({**OLD, "key": "k2"}) + "\n")
    assert [r["key"] for r in run.records()] == ["k1", "k2"] and len(reads) == 2


def test_the_heads_of_the_records_read_whole_are_those_of_the_heads_pass(tmp_path,
                                                                          monkeypatch):
    """A view that needs both (show's summary) reads the journal once."""
    from unseen.engine import rundir

    bad = {**OLD, "key": "k2", "status": "unanswered",
           "error": {"kind": "client", "message": "denied"}}
    run = _journal(tmp_path, OLD, bad, {**OLD, "instance_id": "again"})
    reads = []
    real = rundir.iter_placed
    monkeypatch.setattr(rundir, "iter_placed", lambda path: reads.append(path) or real(path))
    assert run.heads(from_records=True) == run.heads()
    list(run.records())
    assert len(reads) == 1


def test_records_with_few_steps_are_those_read_whole_when_they_were(tmp_path, monkeypatch):
    """A view that asks for heads after the records were read whole (the Director's export,
    a picture per example scene) reads the journal no more."""
    from unseen.engine import rundir

    run = _journal(tmp_path, OLD, {**OLD, "key": "k2"})
    heads = run.records_with_steps(lambda h: h["key"] == "k2")
    assert [("steps" in r) for r in heads] == [False, True]
    assert list(run.records())
    reads = []
    monkeypatch.setattr(rundir, "iter_heads", lambda *a: reads.append(a) or iter(()))
    assert [r["key"] for r in run.records_with_steps(lambda h: False)] == ["k1", "k2"]
    assert reads == []

