"""``baseline:fixed``: the best constant box learned leave-one-scene-out, on folders worked by
hand, through the backend and a run, and the array forms of the metrics it searches with."""

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import unseen
from unseen.backends.baseline import Baseline
from unseen.engine.backend import ProviderError
from unseen.engine.oracle import BoxTruth
from unseen.engine.rules import LEARNERS, LearnerError
from unseen.engine.types import Request
from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.fixed import FRACS, folds, grid_box, learn, pixel_box
from unseen.evals.scenefunri.metrics import aggregate, cacc, cacc_many, dist, dist_many
from unseen.evals.scenefunri.report.dataset_card import describe, render_stats


def write_folder(root, rows, size=(100, 100)):
    """A SceneFunRI folder: ``rows`` of (id, box, meta), one grey image each."""
    (root / "images").mkdir(parents=True)
    lines = []
    for iid, box, meta in rows:
        Image.new("RGB", size, (90, 90, 90)).save(root / "images" / f"{iid}.png")
        lines.append(json.dumps({"id": iid, "image": f"images/{iid}.png",
                                 "instruction": "Unplug the lamp", "box": box, "meta": meta}))
    (root / "instances.jsonl").write_text("\n".join(lines) + "\n")
    return root


# 100x100 images. Held out scene 1, the others (c, d) fit in the grid box [.1, .1, .7, .7]
# (36 % of the image), which holds a and b; held out 2, a, b and d fit in the same box, which
# holds c; held out 3, a, b and c fit in [.1, .1, .4, .4], which misses d.
ROWS = [("a", [10, 10, 20, 20], {"visit": "1"}), ("b", [30, 30, 40, 40], {"visit": "1"}),
        ("c", [12, 14, 18, 19], {"visit": "2"}), ("d", [60, 60, 70, 70], {"visit": "3"})]


# the same in 640x480 images
WIDE = [(i, [b[0] * 6.4, b[1] * 4.8, b[2] * 6.4, b[3] * 4.8], m) for i, b, m in ROWS]


def test_folds_worked_by_hand(tmp_path):
    ds = load_dataset(write_folder(tmp_path / "d", ROWS))
    got = {f.scene: (f.box, f.instances, f.train_hits, f.train_n) for f in folds(ds.instances)}
    assert got == {"visit 1": ((0.1, 0.1, 0.7, 0.7), ("a", "b"), 2, 2),
                   "visit 2": ((0.1, 0.1, 0.7, 0.7), ("c",), 3, 3),
                   "visit 3": ((0.1, 0.1, 0.4, 0.4), ("d",), 3, 3)}
    card = describe(tmp_path / "d", ds)
    # a, b, c held (CAcc@50), d missed; a box of 36 % is no CAcc@75 hit
    assert card["rules"]["fixed"]["cacc50"] == pytest.approx(75.0)
    assert card["rules"]["fixed"]["cacc75"] == 0.0
    assert card["fixed_boxes"] == [{"box": [0.1, 0.1, 0.7, 0.7], "folds": 2, "instances": 3},
                                   {"box": [0.1, 0.1, 0.4, 0.4], "folds": 1, "instances": 1}]
    md = render_stats(card, "md")
    assert "| fixed (rule) | 0.0 | 75.0 |" in md and "| [0.10, 0.10, 0.70, 0.70] | 2 | 3 |" in md
    assert "leave-one-scene-out" in md


def test_without_two_scenes_each_instance_is_left_out(tmp_path):
    """No scenes, or a single one: one instance at a time. Held out a, the others fit in
    [.1, .1, .7, .7]; held out d, [.1, .1, .4, .4]."""
    for name, meta in (("none", {}), ("one", {"scene": "kitchen"})):
        rows = [(i, b, meta) for i, b, _ in ROWS]
        fs = folds(load_dataset(write_folder(tmp_path / name, rows)).instances)
        assert [(f.scene, f.instances) for f in fs] == [(f"instance {i}", (i,)) for i in "abcd"]
        assert [f.box for f in fs] == [(0.1, 0.1, 0.7, 0.7)] * 3 + [(0.1, 0.1, 0.4, 0.4)]


def test_ties_go_to_the_lower_mean_dist(tmp_path):
    """Held out c, a and b cannot share a box of under half the image: each alone is one hit.
    The winner is the box of the lower mean Dist over a and b, checked against every box that
    holds one of them."""
    rows = [("a", [5, 5, 15, 15], {"visit": "1"}), ("b", [85, 85, 95, 95], {"visit": "2"}),
            ("c", [50, 50, 52, 52], {"visit": "3"})]
    ds = load_dataset(write_folder(tmp_path / "d", rows))
    fold = next(f for f in folds(ds.instances) if f.scene == "visit 3")
    assert fold.train_hits == 1
    train = ds.instances[:2]

    def mean_dist(box):
        return np.mean([dist(pixel_box(box, 100, 100), i.truth["box"], 100, 100) for i in train])

    best = mean_dist(fold.box)
    for k in range(0, 44100, 7):  # a seventh of the grid, every box that is one hit
        box = grid_box(k)
        if sum(cacc(pixel_box(box, 100, 100), i.truth["box"], 100, 100, 0.5) for i in train) == 1:
            assert mean_dist(box) >= best


def test_a_single_instance_teaches_nothing(tmp_path, run_main):
    ds = load_dataset(write_folder(tmp_path / "d", ROWS[:1]))
    with pytest.raises(LearnerError, match="at least two instances"):
        folds(ds.instances)
    card = describe(tmp_path / "d", ds)
    assert "fixed" not in card["rules"] and card["fixed_boxes"] == []
    assert "no fixed row: baseline:fixed learns" in render_stats(card, "md")
    code, out, _ = run_main(["data", "stats", str(tmp_path / "d")])
    assert code == 0 and "no fixed row" in out


def test_the_benchmark_teaches_the_rule_through_the_registry():
    assert LEARNERS["fixed"] is learn
    assert FRACS[1] == 0.05 and len(FRACS) == 21


def ask(backend, inst):
    truth = BoxTruth(instance=inst.id, box=inst.truth["box"], width=inst.width,
                     height=inst.height)
    reply = asyncio.run(backend.complete(Request(messages=[], oracle=truth)))
    return json.loads(reply.text)["box"]


def test_the_backend_answers_the_learned_box(tmp_path):
    ds = load_dataset(write_folder(tmp_path / "d", WIDE, size=(640, 480)))
    b = Baseline("fixed", spec="baseline:fixed")
    with pytest.raises(ProviderError, match="prepare"):
        ask(b, ds.instances[0])
    b.prepare(ds.instances)
    assert ask(b, ds.instances[0]) == [64.0, 48.0, 448.0, 336.0]  # [.1, .1, .7, .7] of 640x480
    assert ask(b, ds.instances[3]) == [64.0, 48.0, 256.0, 192.0]
    stranger = ds.instances[0].model_copy(update={"id": "zz"})
    with pytest.raises(ProviderError, match="'zz'"):
        ask(b, stranger)
    one = Baseline("fixed", spec="baseline:fixed")
    one.prepare(ds.instances[:1])
    with pytest.raises(ProviderError, match="at least two instances"):
        ask(one, ds.instances[0])


def test_a_run_scores_what_the_card_says(tmp_path, run_main):
    data = write_folder(tmp_path / "d", WIDE, size=(640, 480))
    res = unseen.run(data, ["direct"], ["baseline:fixed"], out=tmp_path / "run", progress=False,
                     cache=False)
    recs = [json.loads(x) for x in (res.run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert [r["prediction"] for r in recs if r["instance_id"] == "d"] == [[64, 48, 256, 192]]
    got = aggregate([r["metrics"] for r in recs])
    assert got == pytest.approx(describe(data)["rules"]["fixed"])
    code, out, _ = run_main(["data", "stats", str(data), "--format", "json"])
    assert code == 0 and json.loads(out)["rules"]["fixed"]["cacc50"] == pytest.approx(75.0)


coord = st.floats(0, 200, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(gt=st.tuples(coord, coord, coord, coord), preds=st.lists(
    st.tuples(coord, coord, coord, coord), min_size=1, max_size=6),
    theta=st.sampled_from([0.5, 0.75]))
def test_the_array_forms_are_the_metrics(gt, preds, theta):
    gx1, gx2 = sorted(gt[::2])
    gy1, gy2 = sorted(gt[1::2])
    g = [gx1, gy1, gx2 + 1, gy2 + 1]
    p = [[min(a, c), min(b, d), max(a, c) + 1, max(b, d) + 1] for a, b, c, d in preds]
    arr = np.array(p)
    assert list(cacc_many(arr, g, 200, 150, theta)) == [cacc(x, g, 200, 150, theta) for x in p]
    assert dist_many(arr, g, 200, 150) == pytest.approx([dist(x, g, 200, 150) for x in p],
                                                        rel=1e-12, abs=1e-15)
