"""``unseen director run | analyze | power`` end to end, and their one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_tiny_study, tiny_design

TINY = tiny_design(
    samples=3, n=6, batches={"q": ["move", "move/novis", "mean", "move+combined"]},
    comparisons=[{"batch": "q", "base": "move/novis", "variant": "move", "family": "s4",
                  "label": "visibility question"},
                 {"batch": "q", "base": "move", "variant": "move+combined", "measure": "joint",
                  "family": "s6"},
                 {"batch": "q", "base": "move", "variant": "mean", "measure": "accuracy",
                  "margin": True}])


@pytest.fixture(scope="module")
def study(tmp_path_factory, director_scenes) -> tuple[Path, Path]:
    """A tiny design run once with the simulator: (design file, run directory)."""
    return run_tiny_study(tmp_path_factory.mktemp("study"), TINY, ["sim:director-strong"],
                          director_scenes)


def test_run_resumes_from_the_cli(run_main, study):
    design, run_dir = study
    code, out, err = run_main(["director", "run", str(design), "--backend", "sim:director-strong",
                               "--out", str(run_dir)])
    assert code == 0, err
    assert "resumed: 72 calls were already done" in out and "nothing new to run" in out
    # without --scenes, the resume reads the scenes the run used instead of rendering anew
    assert not (run_dir / "scenes").exists()


def test_samples_override_the_designs_and_a_rerun_must_keep_them(run_main, study, tmp_path,
                                                                 director_scenes):
    design, _ = study
    out = tmp_path / "one"
    argv = ["director", "run", str(design), "-b", "sim:director-strong", "--scenes",
            str(director_scenes), "--out", str(out), "-q"]
    code, _, err = run_main([*argv, "--samples", "1"])
    assert code == 0, err
    # 6 scenes x 4 conditions x 1 sample, not the design's 3 samples (72 calls)
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 24
    assert json.loads((out / "study.json").read_text())["design"]["samples"] == 1
    before = (out / "trajectories.jsonl").read_bytes()
    code, _, err = run_main(argv)  # the design's 3 samples into the same run: refused
    assert code == 2 and "another design" in err
    assert (out / "trajectories.jsonl").read_bytes() == before


def test_analyze_formats(run_main, study):
    _, run_dir = study
    code, out, err = run_main(["director", "analyze", str(run_dir), "--format", "json"])
    assert code == 0 and "warning" not in err, err  # all 72 replies: no word of a gap
    data = json.loads(out)
    changes = {c["title"]: c for c in data["changes"]}
    assert changes["visibility question"]["model"] == "sim-director-strong"
    assert changes["visibility question"]["status"] == "ok"
    code, md, _ = run_main(["director", "analyze", str(run_dir), "--format", "md"])
    assert code == 0 and "| visibility question" in md
    code, tex, _ = run_main(["director", "analyze", str(run_dir), "--format", "latex"])
    assert code == 0 and "\\toprule" in tex


def test_analyze_writes_plots(run_main, study, tmp_path):
    _, run_dir = study
    code, _, err = run_main(["director", "analyze", str(run_dir), "--plots", str(tmp_path)])
    assert code == 0, err
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_power_prints_json(run_main):
    code, out, err = run_main(["director", "power", "quick", "--reps", "20", "--json",
                               "--effect", "uplift=0.3"])
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 9 and all(0 <= r["power"] <= 1 for r in rows)
    first = next(r for r in rows if r["comparison"] == "visibility question, move")
    assert first["true_diff"] > 0.2


@pytest.mark.parametrize("argv, message", [
    (["director", "run", "nope.toml"], "no design file nope.toml"),
    (["director", "run", "quick", "--backend", "nosuch:x"], "unknown"),
    (["director", "analyze", "/nonexistent/run"], "/nonexistent/run"),
    (["director", "analyze", ".", "--format", "xml"], "--format"),
    (["director", "power", "quick", "--effect", "nosuch=1"], "unknown knob 'nosuch'"),
    (["director", "power", "quick", "--effect", "uplift"], "uplift"),
])
def test_user_errors_are_one_line(run_main, argv, message):
    code, out, err = run_main(argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2


def test_analyze_without_the_apparent_size_scenes(run_main, study):
    from unseen.evals.director.analysis.rows import rows

    _, run_dir = study
    flagged = {r["scene"] for r in rows(run_dir) if r["apparent_flag"]}
    kept = {r["scene"] for r in rows(run_dir)} - flagged
    assert flagged and kept  # the tiny set has both kinds of scenes
    code, out, err = run_main(["director", "analyze", str(run_dir), "--format", "json",
                               "--drop-apparent"])
    assert code == 0, err
    data = json.loads(out)
    first = next(c for c in data["changes"] if c["title"] == "visibility question")
    assert first["G"] == len(kept) and data["n_replies"] == len(kept) * 4 * 3
