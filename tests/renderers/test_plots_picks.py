"""Curve plots tell every series apart and keep the legend off the lines; ``figure`` picks its
instances by Dist (``--worst``, ``--best``) or at random (``--random``, seeded)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from matplotlib.colors import to_rgba

import unseen
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.evals.scenefunri.report.picks import instance_dist, pick
from unseen.renderers.plots import curve_figure, curve_png, style_of


def curve_rows(n_series: int) -> list[dict]:
    return [{"model": f"model-{i // 7}", "strategy": f"spoe:T={i % 7 + 2}", "t": t,
             "dist": 70 - 5 * t - i, "simulated": True}
            for i in range(n_series) for t in range(5)]


def test_fourteen_series_have_fourteen_colour_and_marker_pairs(tmp_path):
    baselines = {"model-0": {"dist": 30.0}, "model-1": {"dist": 20.0}}
    fig = curve_figure(curve_rows(14), "dist", baselines)
    ax = fig.axes[0]
    series = [line for line in ax.get_lines() if line.get_linestyle() == "-"]
    assert len(series) == 14
    pairs = {(to_rgba(line.get_color()), line.get_marker()) for line in series}
    assert len(pairs) == 14
    # the direct lines: dashed, in the colour of their model's first series
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 2 and to_rgba(dashed[0].get_color()) == to_rgba(series[0].get_color())
    # the legend lies outside the axes, to their right, and names every line
    fig.canvas.draw()
    legend = ax.get_legend()
    box, axes = legend.get_window_extent(), ax.get_window_extent()
    assert box.x0 >= axes.x1 and len(legend.get_texts()) == 16
    # and the PNG holds both side by side (saved with a tight box: nothing cut off)
    out = curve_png(curve_rows(14), "dist", tmp_path / "c.png", baselines)
    from PIL import Image

    assert Image.open(out).width >= (axes.x1 - axes.x0) + (box.x1 - box.x0)


def test_iterations_are_ticked_whole_and_direct_lines_say_simulated():
    fig = curve_figure(curve_rows(2), "dist", {"model-0": {"dist": 30.0}})
    ax = fig.axes[0]
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "model-0 (sim) · direct" in labels, labels


def test_style_pairs_are_distinct_for_seventy_series_and_neighbours_differ_in_both():
    pairs = [style_of(i) for i in range(70)]
    assert len(set(pairs)) == 70
    assert all(a[0] != b[0] and a[1] != b[1] for a, b in zip(pairs, pairs[1:], strict=False))


def test_pick_worked_by_hand():
    scores = {"a": 10.0, "b": 30.0, "c": 30.0, "d": 5.0}
    assert pick(scores, "worst", 2) == ["b", "c"]  # ties by id
    assert pick(scores, "best", 3) == ["d", "a", "b"]
    assert pick(scores, "worst", 9) == ["b", "c", "a", "d"]
    assert pick(scores, "random", 2, seed=3) == pick(scores, "random", 2, seed=3)
    assert {tuple(pick(scores, "random", 2, seed=s)) for s in range(20)} != {("a", "b")}
    assert sorted(pick(scores, "random", 9, seed=1)) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError):
        pick(scores, "middle", 1)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("picks")
    data = write_test_set(root / "data")
    return unseen.run(data, ["direct", "cot"], ["sim", "baseline:center"], out=root / "run",
                      cache=False, progress=False, limit=8).run_dir


def journal_means(run_dir, strategy=None) -> dict[str, float]:
    """Mean Dist ×100 per instance straight from the journal (the last record of each key)."""
    last = {}
    for line in (run_dir / "trajectories.jsonl").read_text().splitlines():
        rec = json.loads(line)
        last[rec["key"]] = rec
    by = defaultdict(list)
    for rec in last.values():
        if strategy in (None, rec["strategy"]):
            by[rec["instance_id"]].append(100 * rec["metrics"]["dist"])
    return {k: sum(v) / len(v) for k, v in by.items()}


def test_instance_dist_is_the_mean_over_the_rows_drawn(small_run):
    assert instance_dist([small_run]) == pytest.approx(journal_means(small_run))
    only = instance_dist([small_run], strategies=["cot"])
    assert only == pytest.approx(journal_means(small_run, "cot"))


def test_figure_worst_best_random(small_run, run_main, tmp_path):
    means = journal_means(small_run)
    ranked = sorted(means, key=lambda i: (-means[i], i))
    code, out, err = run_main(["figure", str(small_run), "--worst", "2", "--out",
                               str(tmp_path / "w.png")])
    assert code == 0, err
    assert out.startswith(f"worst 2: {ranked[0]} (Dist {means[ranked[0]]:.1f}), {ranked[1]}")
    assert "2 columns" in out and (tmp_path / "w.png").stat().st_size > 0
    code, out, _ = run_main(["figure", str(small_run), "--best", "1", "--out",
                             str(tmp_path / "b.png")])
    assert out.startswith(f"best 1: {ranked[-1]} ")
    r1 = run_main(["figure", str(small_run), "--random", "3", "--seed", "4", "--out",
                   str(tmp_path / "r.png")])[1]
    assert r1 == run_main(["figure", str(small_run), "--random", "3", "--seed", "4", "--out",
                           str(tmp_path / "r.png")])[1]
    assert "3 columns" in r1


@pytest.mark.parametrize("args", [[], ["--worst", "2", "--instances", "x"],
                                  ["--best", "1", "--random", "1"]])
def test_figure_needs_exactly_one_way_to_name_instances(small_run, run_main, tmp_path, args):
    code, out, err = run_main(["figure", str(small_run), *args, "--out", str(tmp_path / "f.png")])
    assert code == 2 and err.count("\n") == 1 and "--instances, --worst N" in err
