"""Director layouts: the analytic checker on hand-built cases, the sets' rules, the keys."""

import math

import numpy as np
import pytest

from unseen.evals.director.scenes.geometry import OBox, segments_hit, verdict, visual_angle
from unseen.evals.director.scenes.layout import (
    MARGIN,
    RATIO_MIN,
    Block,
    Layout,
    analytic_visibility,
    make_set,
    rearrangements,
)

EYE = np.array([0.0, 1.0, 0.5])
CUBE = OBox((0, 0, 0.05), (0.05, 0.05, 0.05))


def test_segment_hits_by_hand():
    wall = OBox((0, 0.5, 0.5), (1, 0.01, 1))
    pts = np.array([[0, 0, 0.5], [0, 0.9, 0.5], [3, 0, 0.5]])
    # through the wall; stops before it; passes beside it (x = 1.5 at y = 0.5 > 1)
    assert segments_hit(EYE, pts, wall).tolist() == [True, False, False]
    # a segment that ends on the box's face does not count as blocked by it
    assert not segments_hit(EYE, np.array([[0, 0.51, 0.5]]), wall)[0]
    # rotation: a thin wall along x, turned 90°, lies along y and no longer blocks
    assert not segments_hit(EYE, pts[:1], OBox((0.2, 0.5, 0.5), (0.1, 0.01, 1), yaw_deg=90))[0]


def test_verdicts():
    assert verdict(EYE, CUBE, []) == "full"
    assert verdict(EYE, CUBE, [OBox((0, 0.3, 0.25), (0.3, 0.01, 0.25))]) == "hidden"
    # a low wall hides only the lower corners
    low = OBox((0, 0.3, 0.05), (0.3, 0.01, 0.1))
    assert verdict(EYE, CUBE, [low]) == "partial"
    # two walls, each hiding one side of the cube: every corner blocked, by different ones
    left = OBox((-0.15, 0.3, 0.25), (0.15, 0.01, 0.25))
    right = OBox((0.15, 0.3, 0.25), (0.15, 0.01, 0.25))
    assert verdict(EYE, CUBE, [left, right]) == "ambiguous"


def test_visual_angle_by_hand():
    # 2·atan(0.1 / (2·1)) = 5.7248°
    assert visual_angle(0.1, np.zeros(3), np.array([0, 0, 1])) == pytest.approx(5.724810452)


@pytest.fixture(scope="module")
def main_set():
    return make_set("main", 40, seed=0)


def test_main_set_rules(main_set):
    for lay in main_set:
        edges = sorted(b.edge for b in lay.blocks)
        assert all(b / a >= RATIO_MIN for a, b in zip(edges, edges[1:], strict=False))
        assert lay.hidden.edge == edges[-1]  # the hidden cube is the largest
        digits = [b.digit for b in lay.blocks]
        assert len(set(digits)) == len(digits) and len(digits) in (3, 4)
        assert sum(not b.visible_to_director for b in lay.blocks) == 1
        # the margin rule holds: hidden when dilated, wholly in sight when dilated
        dilated = analytic_visibility(lay, MARGIN)
        for b in lay.blocks:
            assert dilated[b.digit] == ("full" if b.visible_to_director else "hidden")
        assert lay.director_view.edge == max(b.edge for b in lay.visible)
    assert {len(lay.blocks) for lay in main_set} == {3, 4}


def test_deterministic_and_seeded(main_set):
    again = make_set("main", 5, seed=0)
    assert [a.record() for a in again] == [m.record() for m in main_set[:5]]
    other = make_set("main", 5, seed=1)
    assert [a.record() for a in other] != [m.record() for m in main_set[:5]]


def test_rotated_roles_in_thirds():
    rot = make_set("rotated", 12, seed=0)
    roles = []
    for lay in rot:
        order = sorted(lay.blocks, key=lambda b: b.edge)
        roles.append(order.index(lay.hidden))
    assert len(rot[0].blocks) == 3
    assert roles == [2, 1, 0] * 4


def test_rearranged_changes_both_features_and_nothing_else(main_set):
    rearr = make_set("rearranged", 40, seed=0)
    for base, new in zip(main_set, rearr, strict=True):
        assert [(b.edge, b.center, b.yaw_deg, b.color, b.visible_to_director) for b in base.blocks] \
            == [(b.edge, b.center, b.yaw_deg, b.color, b.visible_to_director) for b in new.blocks]
        assert sorted(b.digit for b in base.blocks) == sorted(b.digit for b in new.blocks)

        def features(lay: Layout):
            dv = lay.director_view
            smaller_larger = any(b.digit > dv.digit for b in lay.visible if b.edge < dv.edge)
            return smaller_larger, lay.hidden.digit == max(b.digit for b in lay.blocks)

        f0, f1 = features(base), features(new)
        assert f0[0] != f1[0] and f0[1] != f1[1]


def test_rearrangements_on_a_hand_built_scene():
    # hidden H (largest, digit 9), director-view V1 (digit 1), smaller V2 (digit 5):
    # originally a smaller visible cube carries a larger digit (5 > 1), and H carries the top
    z = 0.8
    lay = Layout("t", "main", [Block(5, 0.06, (0, 0, z), 0, "red"),
                               Block(1, 0.08, (0.2, 0, z), 0, "blue"),
                               Block(9, 0.1, (-0.2, 0, z), 0, "green", False)],
                 (0, 0.2, 0.9), (0.3, 0.02, 0.3), (0, 0.7, 1.23), 0.0, "k")
    options = rearrangements(lay)
    # both features flip: V2's digit < V1's, and H does not get 9
    assert options and all(o[1] > o[5] and o[9] != 9 for o in options)
    assert len(options) == 2  # (H, V1, V2) = (1, 9, 5) or (5, 9, 1)


def test_keys_and_apparent_size_flag():
    lay = Layout("t", "main", [Block(3, 0.06, (0, 0.3, 0.78), 0, "red"),
                               Block(7, 0.08, (0.3, -0.3, 0.79), 0, "blue"),
                               Block(9, 0.1, (-0.2, 0, 0.8), 0, "green", False)],
                 (0, 0.2, 0.9), (0.3, 0.02, 0.3), (0, 0.7, 1.23), 0.0, "k")
    eye = np.array(lay.eye)
    lay.apparent_deg = {b.digit: visual_angle(b.edge, eye, np.array(b.center)) for b in lay.blocks}
    key = lay.key()
    assert key["hidden_digit"] == 9 and key["director_view_digit"] == 7
    assert key["largest_digit_visible"] is None and key["visible_digits"] == [3, 7]
    # the small cube 3 is much nearer the director's eye than cube 7
    d3 = math.dist(lay.eye, (0, 0.3, 0.78))
    d7 = math.dist(lay.eye, (0.3, -0.3, 0.79))
    assert 0.06 / d3 > 0.08 / d7 and key["apparent_size_flag"] is True
