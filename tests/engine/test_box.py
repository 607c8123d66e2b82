"""Box geometry and conventions, on cases worked by hand and on arbitrary boxes."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unseen.engine.box import CONVENTIONS, Box, BoxError, smart_resize


def test_geometry_by_hand():
    a = Box.of([0, 0, 10, 10])
    b = Box.of([5, 5, 15, 20])
    assert a.area == 100 and b.area == 150
    assert a.intersection(b) == 25
    assert a.iou(b) == pytest.approx(25 / 225)
    assert Box.of([0, 0, 100, 100]).contains(Box.of([10, 10, 20, 20]))
    assert not Box.of([0, 0, 15, 100]).contains(Box.of([10, 10, 20, 20]))
    assert a.intersection(Box.of([20, 20, 30, 30])) == 0


def test_invalid_boxes_are_errors():
    with pytest.raises(BoxError, match="x1 < x2"):
        Box.of([10, 0, 5, 10])  # x inverted
    with pytest.raises(BoxError, match="x1 < x2"):
        Box.of([0, 10, 10, 10])  # empty
    with pytest.raises(BoxError, match="four numbers"):
        Box.of([1, 2, 3])
    with pytest.raises(BoxError, match="non-finite"):
        Box.of([0, 0, math.inf, 1])
    with pytest.raises(BoxError, match="four numbers"):
        Box.of([0, 0, "a", 1])


def test_clip():
    assert Box.of([-10, -5, 50, 60]).clip(40, 30).to_list() == [0, 0, 40, 30]
    with pytest.raises(BoxError, match="outside"):
        Box.of([50, 50, 60, 60]).clip(40, 30)


def test_split_halves_as_algorithm_1():
    full = Box.full(1000, 800)
    left, right = full.split("vertical")
    assert left.to_list() == [0, 0, 500, 800] and right.to_list() == [500, 0, 1000, 800]
    top, bottom = right.split("horizontal")
    assert top.to_list() == [500, 0, 1000, 400] and bottom.to_list() == [500, 400, 1000, 800]


def test_split_overlapping_share():
    a, b = Box.full(100, 10).split("vertical", share=0.6)
    assert a.to_list() == [0, 0, 60, 10] and b.to_list() == [40, 0, 100, 10]
    with pytest.raises(BoxError):
        Box.full(10, 10).split("diagonal")  # type: ignore[arg-type]


def test_smart_resize_matches_reference():
    assert smart_resize(1440, 1920) == (1428, 1932)
    h, w = smart_resize(10, 10)  # tiny images are scaled up to min_pixels
    assert h % 28 == 0 and w % 28 == 0 and h * w >= 4 * 28 * 28
    h, w = smart_resize(8000, 8000)  # huge ones scaled down
    assert h * w <= 16384 * 28 * 28


def test_conventions_by_hand():
    b = Box.of([100, 50, 300, 150])  # in a 400x200 image
    assert b.to_convention("norm1000", 400, 200) == [250, 250, 750, 750]
    assert b.to_convention("gemini", 400, 200) == [250, 250, 750, 750]
    b2 = Box.of([100, 20, 200, 40])
    assert b2.to_convention("gemini", 400, 200) == [100, 250, 200, 500]  # y first
    assert b2.to_convention("unit", 400, 200) == [0.25, 0.1, 0.5, 0.2]
    # Qwen2.5: pixels of the 1932x1428 input for a 1920x1440 image
    q = Box.of([0, 0, 1920, 1440]).to_convention("qwen2.5", 1920, 1440)
    assert q == pytest.approx([0, 0, 1932, 1428])
    assert Box.from_convention([0, 0, 1932, 1428], "qwen2.5", 1920, 1440).to_list() == pytest.approx(
        [0, 0, 1920, 1440])
    with pytest.raises(BoxError, match="unknown box convention"):
        b.to_convention("yolo", 400, 200)


def test_gemini_order_mistake_is_an_error_not_a_guess():
    # x-first numbers read as gemini give an inverted box when y1 > y2: an error, never a swap
    with pytest.raises(BoxError):
        Box.from_convention([100, 500, 900, 200], "gemini", 640, 480)


@given(
    x=st.floats(0, 1000), y=st.floats(0, 800), w=st.floats(1, 500), h=st.floats(1, 500),
    size=st.tuples(st.integers(16, 4000), st.integers(16, 4000)),
    conv=st.sampled_from(CONVENTIONS),
)
def test_conventions_round_trip(x, y, w, h, size, conv):
    W, H = size
    box = Box(x1=x, y1=y, x2=x + w, y2=y + h)
    back = Box.from_convention(box.to_convention(conv, W, H), conv, W, H)
    assert back.to_list() == pytest.approx(box.to_list(), rel=1e-9, abs=1e-6)


@given(st.lists(st.floats(-1e6, 1e6), min_size=4, max_size=4))
def test_iou_bounds(vals):
    try:
        a = Box.of(vals)
    except BoxError:
        return
    b = Box.of([0, 0, 10, 10])
    assert 0.0 <= a.iou(b) <= 1.0 + 1e-12
    assert a.iou(a) == pytest.approx(1.0)
