"""Reading boxes out of reply text."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unseen.engine.boxtext import BoxParseError, parse_box


@pytest.mark.parametrize("text, expected", [
    ('{"box": [1, 2, 3, 4]}', [1, 2, 3, 4]),
    ('```json\n{"box_2d": [10, 20, 30, 40], "label": "socket"}\n```', [10, 20, 30, 40]),
    ('Sure! The socket is behind the bed.\n{"bbox_2d": [5.5, 6, 7, 8]}\nHope this helps.', [5.5, 6, 7, 8]),
    ("[100, 200, 300, 400]", [100, 200, 300, 400]),
    ('[{"box_2d": [1, 2, 3, 4], "label": "a"}]', [1, 2, 3, 4]),
    ('{"box": ["1", "2", "3", "4"]}', [1, 2, 3, 4]),  # numbers in quotes
    ('{"box": [[1, 2, 3, 4]]}', [1, 2, 3, 4]),
    ('{"answer": {"box": [9, 8, 7, 6]}}', [9, 8, 7, 6]),  # numbers kept as written
    ("<ref>knob</ref><box>[[12, 34, 56, 78]]</box>", [12, 34, 56, 78]),
    ("<|box_start|>(10,20),(30,40)<|box_end|>", [10, 20, 30, 40]),
])
def test_accepted_forms(text, expected):
    assert parse_box(text) == expected


def test_last_box_counts():
    text = 'First guess {"box": [1, 1, 2, 2]}. On reflection: {"box": [5, 5, 9, 9]}'
    assert parse_box(text) == [5, 5, 9, 9]


def test_fenced_block_preferred_over_prose_numbers():
    text = 'Coordinates like [0, 0, 1, 1] are examples.\n```json\n{"box": [3, 3, 4, 4]}\n```'
    assert parse_box(text) == [3, 3, 4, 4]


@pytest.mark.parametrize("text", [
    "", "   ", "I cannot see the object.", '{"box": [1, 2, 3]}', '{"box": [1, 2, "x", 4]}',
    '{"label": "socket"}', "[1, 2, 3, 4, 5]", '{"box": [NaN, 1, 2, 3]}', '{"box": [true, 1, 2, 3]}',
])
def test_rejected(text):
    with pytest.raises(BoxParseError):
        parse_box(text)


@given(st.text(max_size=400))
def test_never_raises_anything_else(text):
    try:
        out = parse_box(text)
    except BoxParseError:
        return
    assert len(out) == 4 and all(isinstance(v, float | int) for v in out)


@given(st.lists(st.integers(-5000, 5000), min_size=4, max_size=4), st.text(max_size=50))
def test_box_found_inside_arbitrary_prose(nums, prose):
    text = prose.replace("{", "").replace("[", "") + f' {{"box": {nums}}}'
    assert parse_box(text) == nums
