"""The analysis of a study read in one pass (issue 30) says what it said before, to the bit.

``study()`` writes a small study's run directory, records made here in the journal's format:
two models (one real, priced, whose steps carry token counts; one simulated), three
conditions, scene strata, unanswered replies, a key retried (its last record counts), a
record that is no study reply and a reply that stopped at a length limit. ``GOLDEN`` holds
what ``director analyze`` printed for it (json, md, latex) before the journal was read once
(commit 37183c8), produced by ``python tests/evals/director/test_director_read_once.py
OUT.json`` run with that commit's code; edit ``study()`` and the file is stale.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).with_name("director_read_once_golden.json")
CONDITIONS = ("move/novis", "move", "mean")
MODELS = {"openai:gpt-5.5": ("real", "gpt-5.5", False), "sim,seed=1": ("simmo", "sim-a", True)}


def design() -> dict:
    return {"name": "golden", "samples": 3, "sets": {"main": {"n": 8}},
            "batch": [{"name": "b", "conditions": list(CONDITIONS), "models": ["*"]}],
            "comparison": [
                {"batch": "b", "base": "move/novis", "variant": "move", "family": "f",
                 "label": "question"},
                {"batch": "b", "base": "move/novis", "variant": "mean", "measure": "dv",
                 "where": "hidden-top-digit", "family": "f"},
                {"batch": "b", "base": "move", "variant": "mean", "measure": "accuracy",
                 "margin": True},
                {"batch": "b", "base": "move", "variant": "mean", "measure": "ldv",
                 "where": "report-excludes-hidden"},
            ]}


def _record(rng: random.Random, spec: str, cond: str, scene: int, sample: int,
            retry: int = 0) -> dict:
    name, served, simulated = MODELS[spec]
    answered = rng.random() > 0.1
    hidden = float(rng.random() < (0.2 if cond == "move/novis" else 0.5))
    metrics = {"hidden_top_digit": float(scene % 2), "apparent_flag": float(scene == 3)}
    if answered:
        metrics |= {"hidden": hidden, "dv": 1.0 - hidden,
                    "accuracy": float(rng.random() < 0.8),
                    "report_excludes_hidden": float(rng.random() < 0.5)}
        if hidden == 0.0:
            metrics |= {"ldv": float(rng.random() < 0.3)}
    key = hashlib.sha256(f"{spec}/{cond}/{scene}/{sample}".encode()).hexdigest()[:20]
    usage = {"input_tokens": rng.randrange(100, 200), "output_tokens": rng.randrange(5, 50),
             "reasoning_tokens": 0, "cached_input_tokens": rng.randrange(0, 50)}
    return {
        "key": key, "run": "golden", "instance_id": f"main-{scene:03d}",
        "strategy": f"director:batch=b,condition={cond}",
        "params": {"condition": cond, "batch": "b", "temperature": None},
        "backend": spec, "model": served, "simulated": simulated, "sample": sample,
        "status": "answered" if answered else "unanswered",
        "error": None if answered else {"kind": "parse", "message": "no block=?", "status": None,
                                        "attempts": 1},
        "prediction": {"block": rng.randrange(1, 9)} if answered else None,
        "metrics": metrics, "notes": {"length_stops": 1} if rng.random() < 0.05 else {},
        "steps": [{"index": 0, "name": "turn1", "prompt": "Which block? Reply block=N",
                   "images": [], "messages": 1,
                   "reply": {"text": '{"block": 3}', "usage": usage, "latency_s": 0.1,
                             "cached": False, "error": None},
                   "parsed": None, "parse_error": None, "region": None,
                   "info": {"condition": cond, "batch": "b", "turn": 1}, "seconds": 0.1}],
        "seconds": 0.2, "finished_at": "2026-12-05T00:00:00+00:00"}


def lines() -> list[bytes]:
    """The journal's lines, in a fixed order."""
    rng = random.Random(30)
    out = []
    for spec in MODELS:
        for cond in CONDITIONS:
            for scene in range(8):
                for sample in range(3):
                    out.append(_record(rng, spec, cond, scene, sample))
    out.append({**_record(rng, "sim,seed=1", "move", 0, 0), "key": "not-a-reply",
                "params": {"note": "no condition"}})
    rng.shuffle(out)
    out.append(_record(rng, "openai:gpt-5.5", "move", 2, 1))  # the key retried: this counts
    return [json.dumps(r, separators=(",", ":")).encode() for r in out]


def study(root: Path) -> Path:
    """The run directory: study.json, run.json and the journal, as an old writer wrote it."""
    root.mkdir(parents=True, exist_ok=True)
    backends = [{"spec": spec, "model": name, **({"simulated": True} if sim else {})}
                for spec, (name, _, sim) in MODELS.items()]
    (root / "study.json").write_text(json.dumps({"design": design(), "backends": backends,
                                                 "scenes": {}}), encoding="utf-8")
    (root / "run.json").write_text(json.dumps({
        "run": "golden", "benchmark": "director", "data": "", "dataset_fingerprint": "x",
        "instances": 8, "strategies": [], "samples": 3, "package_version": "0",
        "created_at": "2026-12-05T00:00:00+00:00",
        "backends": [{"spec": spec, "model": served, "simulated": sim,
                      **({"image": {"detail": "low"}} if not sim else {})}
                     for spec, (_, served, sim) in MODELS.items()]}), encoding="utf-8")
    (root / "trajectories.jsonl").write_bytes(b"".join(line + b"\n" for line in lines()))
    return root


def outputs(run_dir: Path) -> dict[str, str]:
    """What ``director analyze`` prints, in the formats that are text, with and without the
    apparent-size scenes."""
    from unseen.backends.prices import price_for
    from unseen.evals.director.analysis.analyze import analyze_run
    from unseen.evals.director.analysis.tables import render

    out = {}
    for drop in (False, True):
        a = analyze_run(run_dir, n_boot=200, seed=1, drop_apparent=drop, prices=price_for)
        for fmt in ("json", "md", "latex"):
            out[f"{fmt}{'-drop' if drop else ''}"] = render(a, fmt, width=120)
    return out


@pytest.fixture
def golden() -> dict[str, str]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_the_analysis_says_what_it_said_before(tmp_path, golden):
    got = outputs(study(tmp_path / "run"))
    assert json.loads(got["json"])["costs"]  # the real model's replies were priced
    assert json.loads(got["json"])["n_replies"] == 2 * 3 * 8 * 3
    for fmt, text in golden.items():
        assert got[fmt] == text, fmt


def test_a_journal_the_writer_wrote_gives_the_same_analysis(tmp_path, golden):
    """Written through JournalWriter (each line scrubbed and recorded so): read without
    scrubbing again, the same tables."""
    from unseen.engine.journal import JournalWriter
    from unseen.engine.scrubbed import written_scrubbed

    run_dir = study(tmp_path / "run")
    journal = run_dir / "trajectories.jsonl"
    journal.unlink()
    writer = JournalWriter(journal)
    for line in lines():
        writer.append_line(line)
    writer.close()
    assert written_scrubbed(journal) == [(0, journal.stat().st_size)]
    assert outputs(run_dir) == golden


def test_the_rows_are_those_of_the_last_record_of_each_study_key(tmp_path):
    from unseen.evals.director.analysis.rows import read_rows, rows

    run_dir = study(tmp_path / "run")
    got = list(rows(run_dir))
    assert len(got) == len(read_rows(run_dir)) == 2 * 3 * 8 * 3
    last = json.loads(lines()[-1])
    row = next(r for r in got if r["scene"] == "main-002" and r["sample"] == 1
               and r["model"] == "real" and r["condition"] == "move")
    assert row["usage"] == {k: last["steps"][0]["reply"]["usage"][k]
                            for k in ("input_tokens", "cached_input_tokens", "output_tokens")}
    assert row["answered"] == (last["status"] == "answered")
    assert {r["model"] for r in got} == {"real", "simmo"}


if __name__ == "__main__":  # the golden file, from whichever code imports as unseen
    with __import__("tempfile").TemporaryDirectory() as tmp:
        Path(sys.argv[1]).write_text(json.dumps(outputs(study(Path(tmp) / "run")), indent=1),
                                     encoding="utf-8")
