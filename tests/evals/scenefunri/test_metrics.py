"""The paper's metrics (§4.2) on cases worked by hand."""

import math

import pytest

from unseen.evals.scenefunri.metrics import aggregate, cacc, dist, iou, score

GT = [10, 10, 20, 20]  # in a 100x100 image


def test_cacc_by_hand():
    # contains the truth, covers 16 % of the image: 1 - 0.16 = 0.84 > 0.75 and > 0.5
    assert cacc([0, 0, 40, 40], GT, 100, 100, 0.75)
    assert cacc([0, 0, 40, 40], GT, 100, 100, 0.50)
    # covers 36 %: 0.64 fails @75, passes @50
    assert not cacc([0, 0, 60, 60], GT, 100, 100, 0.75)
    assert cacc([0, 0, 60, 60], GT, 100, 100, 0.50)
    # compact but misses a corner of the truth
    assert not cacc([11, 10, 40, 40], GT, 100, 100, 0.50)
    # exactly 25 % of the image: 1 - 0.25 = 0.75 is not > 0.75 (strict)
    assert not cacc([0, 0, 50, 50], GT, 100, 100, 0.75)


def test_iou_by_hand():
    assert iou([10, 10, 20, 20], GT) == 1.0
    assert iou([15, 10, 25, 20], GT) == pytest.approx(50 / 150)
    assert iou([30, 30, 40, 40], GT) == 0.0


def test_dist_by_hand():
    # corners (x_i, y_j) of [0,0,40,40] vs [10,10,20,20] in a 100x100 image:
    # (-.1,-.1) -> .141421, (-.1,.2) -> .223607, (.2,-.1) -> .223607, (.2,.2) -> .282843
    expected = (math.sqrt(0.02) + 2 * math.sqrt(0.05) + math.sqrt(0.08)) / 4
    assert dist([0, 0, 40, 40], GT, 100, 100) == pytest.approx(expected)
    assert expected == pytest.approx(0.217869, abs=1e-6)
    assert dist(GT, GT, 100, 100) == 0.0
    # normalised per axis: a shift of 10 px in a 200-wide image is 0.05
    assert dist([20, 10, 30, 20], GT, 200, 100) == pytest.approx(0.05)


def test_unanswered_scoring():
    s = score(None, GT, 100, 100)
    assert s["cacc75"] == 0 and s["cacc50"] == 0 and s["iou"] == 0
    assert s["dist"] == pytest.approx(dist([0, 0, 100, 100], GT, 100, 100))
    assert "dist" not in score(None, GT, 100, 100, unanswered="skip")


def test_aggregate_scales_by_100():
    rows = [score([0, 0, 40, 40], GT, 100, 100), score(GT, GT, 100, 100)]
    agg = aggregate(rows)
    assert agg["cacc75"] == 100.0 and agg["cacc50"] == 100.0
    assert agg["miou"] == pytest.approx(100 * (100 / 1600 + 1) / 2)
    assert agg["dist"] == pytest.approx(100 * 0.217869 / 2, abs=1e-4)
    rows.append(score(None, GT, 100, 100, unanswered="skip"))
    agg = aggregate(rows)
    assert agg["cacc75"] == pytest.approx(200 / 3)  # the unanswered one counts as a miss
    assert agg["dist"] == pytest.approx(100 * 0.217869 / 2, abs=1e-4)  # but not in Dist
