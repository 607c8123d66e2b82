"""compare's statistics and formats: the bootstrap over instances, paired differences against a
baseline strategy, the paper's quoted numbers, and every output format."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import unseen
from unseen.engine.rundir import RunDirError
from unseen.evals.scenefunri import render, summarize
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.evals.scenefunri.report.bootstrap import (
    bootstrap_ci,
    excludes_zero,
    instance_means,
    paired,
    resample_counts,
)
from unseen.evals.scenefunri.report.paper import NOTE, paper_rows

METRICS = ("cacc75", "cacc50", "miou", "dist")

# --- the bootstrap ----------------------------------------------------------------------------


def test_same_seed_same_interval_other_seed_other_interval():
    values = np.random.default_rng(7).random(50)
    a = bootstrap_ci(values, seed=3)
    assert np.array_equal(a, bootstrap_ci(values, seed=3))
    assert not np.array_equal(a, bootstrap_ci(values, seed=4))
    assert np.array_equal(resample_counts(50, seed=3), resample_counts(50, seed=3))


def test_resample_counts_are_resamples_of_n():
    counts = resample_counts(17, resamples=2000, seed=0)
    assert counts.shape == (2000, 17)
    assert (counts.sum(axis=1) == 17).all() and (counts >= 0).all()
    # each instance is drawn n·B/n = B times on average
    assert counts.mean() == pytest.approx(1.0)
    assert counts.sum(axis=0).min() > 1700


def test_all_equal_values_give_a_zero_width_interval():
    low, high = bootstrap_ci([0.3] * 40)
    assert low == high == 0.3
    bounds = bootstrap_ci(np.array([[0.1, 7.0]] * 25))
    assert bounds[0].tolist() == bounds[1].tolist() == [0.1, 7.0]


def test_two_point_dataset_worked_by_hand():
    # resample means of {0, 1}: 0 w.p. 1/4, 1/2 w.p. 1/2, 1 w.p. 1/4; the 2.5 % and 97.5 %
    # quantiles of 2,000 such means are 0 and 1: the whole data range, and no further
    low, high = bootstrap_ci([0.0, 1.0])
    assert (low, high) == (0.0, 1.0)
    low, high = bootstrap_ci([2.0, 2.0, 5.0])
    assert 2.0 <= low < 3.0 < high <= 5.0


def test_coverage_of_bernoulli_mean():
    """300 datasets of n=100 Bernoulli(0.3), bootstrapped in one call (a column each)."""
    data = (np.random.default_rng(2024).random((100, 300)) < 0.3).astype(float)
    low, high = bootstrap_ci(data, seed=1)
    covered = ((low <= 0.3) & (high >= 0.3)).mean()
    assert 0.90 <= covered <= 0.98, covered
    assert (low <= data.mean(axis=0)).all() and (data.mean(axis=0) <= high).all()


def test_nan_values_are_left_out():
    low, high = bootstrap_ci([1.0, math.nan, 3.0, math.nan])
    assert 1.0 <= low <= high <= 3.0
    assert np.isnan(bootstrap_ci([math.nan, math.nan])).all()


def test_instance_means_and_pairing():
    ids, mat = instance_means({"b": [{"x": 1.0}, {"x": 3.0}], "a": [{"x": 5.0}, {}]}, ["x", "y"])
    assert ids == ["a", "b"]
    assert mat[:, 0].tolist() == [5.0, 2.0] and np.isnan(mat[:, 1]).all()
    shared, diff = paired(["a", "b", "c"], np.array([[1.0], [2.0], [3.0]]),
                          ["b", "c", "d"], np.array([[10.0], [20.0], [30.0]]))
    assert shared == ["b", "c"] and diff[:, 0].tolist() == [-8.0, -17.0]
    assert excludes_zero(0.1, 2) and excludes_zero(-2, -0.1)
    assert not excludes_zero(-0.1, 0.1) and not excludes_zero(0.0, 0.0)


# --- summarize on journals written by hand ----------------------------------------------------


def write_run(path: Path, records: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text("{}")
    with open(path / "trajectories.jsonl", "w") as fh:
        for i, rec in enumerate(records):
            full = {"key": f"k{i}", "backend": "openai", "simulated": False, "sample": 0,
                    "status": "answered", "error": None, "seconds": 1.0,
                    "steps": [{"reply": {"usage": {"input_tokens": 100, "output_tokens": 10},
                                         "cached": False}}], **rec}
            fh.write(json.dumps(full) + "\n")
    return path


def metrics(c: float, iou: float, dist: float) -> dict[str, float]:
    return {"cacc75": c, "cacc50": c, "iou": iou, "dist": dist}


@pytest.fixture
def handmade(tmp_path) -> Path:
    """Model m: direct (10 instances, 2 samples each) and hidden (Dist 0.05 lower on every
    instance, same CAcc; only instances 0-7). Model solo: hidden only. A rule: direct."""
    rng = np.random.default_rng(0)
    recs = []
    base_dist = {}
    for i in range(10):
        iid = f"i{i}"
        d = [float(rng.uniform(0.2, 0.6)) for _ in range(2)]
        base_dist[iid] = sum(d) / 2
        for s in range(2):
            recs.append({"instance_id": iid, "model": "m", "strategy": "direct", "sample": s,
                         "metrics": metrics(float(i % 3 == 0), 0.1 * s, d[s])})
    for i in range(8):
        iid = f"i{i}"
        recs.append({"instance_id": iid, "model": "m", "strategy": "hidden",
                     "metrics": metrics(float(i % 3 == 0), 0.05, base_dist[iid] - 0.05)})
        recs.append({"instance_id": iid, "model": "solo", "strategy": "hidden",
                     "metrics": metrics(1.0, 0.5, 0.1)})
        recs.append({"instance_id": iid, "model": "baseline-center", "strategy": "direct",
                     "backend": "baseline:center", "simulated": True,
                     "metrics": metrics(0.0, 0.0, 0.4)})
    return write_run(tmp_path / "run", recs)


def test_point_estimates_average_samples_per_instance(handmade):
    rows = {(r["model"], r["strategy"]): r for r in summarize([handmade])}
    direct = rows[("m", "direct")]
    assert direct["n"] == 20 and direct["instances"] == 10
    assert direct["miou"] == pytest.approx(5.0)  # every instance: mean of 0 and 0.1
    assert direct["cacc75"] == pytest.approx(40.0)  # instances 0, 3, 6, 9
    for m in METRICS:
        assert direct[f"{m}_low"] <= direct[m] <= direct[f"{m}_high"]
    assert direct["miou_low"] == direct["miou_high"] == pytest.approx(5.0)
    assert direct["calls"] == 1 and direct["input_tokens"] == 100 and direct["seconds"] == 1
    assert rows[("baseline-center", "direct")]["kind"] == "rule"
    assert rows[("m", "direct")]["kind"] == "model" and direct["source"] == "run"


def test_paired_differences_against_the_same_models_baseline(handmade):
    rows = summarize([handmade], baseline="direct")
    by = {(r["model"], r["strategy"]): r for r in rows}
    hidden = by[("m", "hidden")]
    assert hidden["delta_n"] == 8  # the instances both rows share
    # Dist is 5 lower on every shared instance: a zero-width interval that excludes 0
    assert hidden["delta_dist"] == pytest.approx(-5.0)
    assert hidden["delta_dist_low"] == pytest.approx(-5.0)
    assert hidden["delta_dist_high"] == pytest.approx(-5.0)
    assert hidden["delta_dist_sig"] is True
    # the same CAcc on every shared instance: zero, not significant
    assert hidden["delta_cacc75"] == 0 and hidden["delta_cacc75_sig"] is False
    assert hidden["delta_cacc75_low"] == hidden["delta_cacc75_high"] == 0
    # mIoU: 5 against a mean of 0 and 10 on every instance: zero again
    assert hidden["delta_miou"] == pytest.approx(0.0)
    # the baseline row itself, a model without a baseline row: None throughout
    for key in (("m", "direct"), ("solo", "hidden")):
        for m in METRICS:
            for suffix in ("", "_low", "_high", "_sig"):
                assert by[key][f"delta_{m}{suffix}"] is None, (key, m, suffix)
    # order: real models (baseline first), then rules
    assert [(r["model"], r["strategy"]) for r in rows] == [
        ("m", "direct"), ("m", "hidden"), ("solo", "hidden"), ("baseline-center", "direct")]


def test_summarize_is_seeded(handmade):
    a = summarize([handmade], baseline="direct", seed=0)
    assert a == summarize([handmade], baseline="direct", seed=0)
    b = summarize([handmade], baseline="direct", seed=5)
    assert a[0]["dist_low"] != b[0]["dist_low"]
    assert a[0]["dist"] == b[0]["dist"] and a[0]["ci_seed"] == 0 and b[0]["ci_seed"] == 5


def test_unknown_baseline_is_an_error(handmade):
    with pytest.raises(RunDirError, match="nope"):
        summarize([handmade], baseline="nope")


# --- the paper's numbers ----------------------------------------------------------------------


def test_paper_rows_are_consistent_and_labelled():
    rows = paper_rows()
    t2 = {r["model"]: r for r in rows if r["table"] == "2"}
    t3 = [r for r in rows if r["table"] == "3"]
    assert len(t2) == 17 and len(t3) == 25
    assert t2["Gemini 3 Flash"]["cacc75"] == 15.20 and t2["Human baseline"]["dist"] == 13.39
    assert all(r["source"] == "paper" and r["note"] == NOTE for r in rows)
    # Table 3's printed changes are against Table 2's rows (InternVL3_5-38B: InternVL3-38B)
    for r in t3:
        base = t2[r["model"].replace("InternVL3_5", "InternVL3")]
        for m in METRICS:
            assert r[m] - r[f"delta_{m}"] == pytest.approx(base[m], abs=0.015), (r["model"], m)
    assert {r["strategy"] for r in t3} == {"direct:prompt=hidden", "direct:prompt=common",
                                           "direct:prompt=both", "cot", "cot-sr"}


# --- formats ----------------------------------------------------------------------------------


@pytest.fixture
def rows(handmade) -> list[dict]:
    return summarize([handmade], baseline="direct")


def test_json_rows(rows):
    out = json.loads(render(rows + paper_rows(), "json"))
    run = [r for r in out if r["source"] == "run"]
    for r in run:
        for m in METRICS:
            for key in (m, f"{m}_low", f"{m}_high", f"delta_{m}", f"delta_{m}_low",
                        f"delta_{m}_high", f"delta_{m}_sig"):
                assert key in r
    quoted = [r for r in out if r["source"] == "paper"]
    assert len(quoted) == 42 and all(r["note"] == "quoted from the paper, not measured"
                                     for r in quoted)


def test_csv_has_every_field_and_the_source(rows):
    table = list(csv.DictReader(io.StringIO(render(rows + paper_rows(), "csv"))))
    assert len(table) == len(rows) + 42
    assert {"source", "cacc75_low", "delta_dist_sig", "note"} <= set(table[0])
    assert {r["source"] for r in table} == {"run", "paper"}
    assert all(r["note"] == NOTE for r in table if r["source"] == "paper")


def test_markdown_intervals_deltas_and_paper_block(rows):
    md = render(rows, "md").splitlines()
    assert len(md) == 2 + len(rows)
    assert "Δ Dist" in md[0] and "CAcc@75" in md[0]
    hidden = next(line for line in md if "| m | hidden |" in line)
    assert "-5.00* [-5.00, -5.00]" in hidden
    assert "center (rule)" in "\n".join(md)
    with_paper = render(rows + paper_rows(), "md")
    assert "Quoted from the paper, not measured" in with_paper
    assert "| Hidden | paper | 25.03 (+9.83) | 31.23 (+14.04) |" in with_paper


def test_latex_is_booktabs_and_escaped(rows):
    tex = render(rows, "latex")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert tex.count(r"\\") == 1 + len(rows)
    assert r"{\scriptsize$-5.00^{*}$}" in tex and r"{\scriptsize$[" in tex
    assert r"20$\times$2" not in tex and r"10$\times$2" in tex
    with_paper = render(rows + paper_rows(), "latex")
    assert r"\emph{Quoted from the paper, not measured}" in with_paper
    assert r"InternVL3\_5-38B" in with_paper and "InternVL3_5" not in with_paper


def rich_text(rows: list[dict], width: int, color: bool = False) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=color,
                      color_system="standard" if color else None)
    console.print(render(rows, "table", width=width))
    return console.file.getvalue()


def test_rich_table_colours_and_labels(rows):
    plain = rich_text(rows, 120)
    assert "center (rule)" in plain and "reference rule" in plain
    assert "[" in plain and "95 %" in plain
    assert "tok i/o" in plain  # all cost columns fit at 120
    colored = rich_text(rows, 120, color=True)
    assert "\x1b[1;32m-5.00*" in colored  # Dist lower: better, significant: bold green


def test_rich_table_narrow_keeps_labels_whole(rows, tmp_path):
    data = write_test_set(tmp_path / "data")
    run = unseen.run(data, ["direct", "direct:prompt=common", "cot-sr"], ["sim"],
                     out=tmp_path / "sim", cache=False, progress=False).run_dir
    for width in (80, 100, 120):
        text = rich_text(summarize([run], baseline="direct"), width)
        assert max(len(line.rstrip()) for line in text.splitlines()) <= width
        # whole, or folded at its parameter: "direct:" / "prompt=common", never mid-word
        assert "direct:" in text and "prompt=common" in text and "cot-sr" in text
    assert "left out at this width" in rich_text(summarize([run], baseline="direct"), 80)


def test_rich_table_with_the_paper(rows):
    text = rich_text(rows + paper_rows(), 120)
    assert "Quoted from the paper, not measured" in text and "Gemini 3 Flash" in text


# --- the command ------------------------------------------------------------------------------


def test_compare_command_seed_and_paper(handmade, run_main):
    def compare(*args: str) -> list[dict]:
        code, out, err = run_main(["compare", str(handmade), "--baseline", "direct",
                                   "--format", "json", *args])
        assert code == 0, err
        return json.loads(out)

    a = compare("--seed", "3")
    assert a == compare("--seed", "3")
    assert [r["dist_low"] for r in a] != [r["dist_low"] for r in compare("--seed", "4")]
    assert a == compare("--seed", "3", "--paper")[: len(a)]
    quoted = compare("--paper")[len(a):]
    assert quoted and all(r["source"] == "paper" for r in quoted)
    code, out, err = run_main(["compare", str(handmade), "--paper", "--format", "md"])
    assert code == 0 and "Quoted from the paper, not measured" in out
