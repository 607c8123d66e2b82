"""Box conventions with a backend's image settings, and replies that contradict them.

Worked by hand (Qwen2.5-VL's ``smart_resize``, qwen-vl-utils vision_process.py: sides
rounded to 28, then scaled by beta = sqrt(H*W / max_pixels) and floored to 28 when the area
is over max_pixels): a 1920x1440 image at max_pixels = 1280*28*28 = 1,003,520 has
1428*1932 = 2,758,896 pixels after rounding, over the limit; beta = sqrt(2,764,800 /
1,003,520) = 1.6599; H' = floor(1440 / 1.6599 / 28) * 28 = 30 * 28 = 840; W' = floor(1920 /
1.6599 / 28) * 28 = 41 * 28 = 1148. A box at [574, 420, 1148, 840] in that frame is the
bottom-right quarter of the original: [960, 720, 1920, 1440].
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unseen.engine.box import CONVENTIONS, Box, BoxError, Convention, fit_within, smart_resize
from unseen.engine.boxtext import answer_text, find_box
from unseen.strategies.kit import read_box
from unseen.strategies.prompts import box_format_text

QWEN_1280 = 1280 * 28 * 28


def test_qwen25_at_a_smaller_max_pixels_comes_back_in_the_original_pixels():
    assert smart_resize(1440, 1920, max_pixels=QWEN_1280) == (840, 1148)
    conv = Convention("qwen2.5", max_pixels=QWEN_1280)
    assert conv.frame(1920, 1440) == (1148.0, 840.0)
    box = Box.from_convention([574, 420, 1148, 840], conv, 1920, 1440)
    assert box.to_list() == pytest.approx([960, 720, 1920, 1440])
    # the default resize would have read the same numbers as a box up and to the left
    default = Box.from_convention([574, 420, 1148, 840], "qwen2.5", 1920, 1440)
    assert default.to_list() != pytest.approx(box.to_list())
    # through the reader a strategy uses, with the convention the backend carries
    parsed = read_box('{"bbox_2d": [574, 420, 1148, 840]}', conv, 1920, 1440)
    assert parsed.value == pytest.approx([960, 720, 1920, 1440])


def test_an_image_sent_smaller_is_read_back_in_its_own_pixels():
    """--max-image-side 960 sends a 1920x1440 image as 960x720: the pixel prompt states
    960x720 and a pixel box is doubled back."""
    conv = Convention("pixel", max_side=960)
    assert fit_within(1920, 1440, 960) == (960, 720)
    assert "960 pixels wide and 720 pixels high" in box_format_text(conv, 1920, 1440)
    assert read_box('{"box": [480, 360, 960, 720]}', conv, 1920, 1440).value == \
        pytest.approx([960, 720, 1920, 1440])
    # Qwen2.5-VL resizes what it is sent: 1000x750 → 1008x756 (27 and 36 patches of 28)
    qwen = Convention("qwen2.5", max_side=1000)
    assert qwen.frame(1920, 1440) == (1008.0, 756.0)
    assert Box.from_convention([504, 378, 1008, 756], qwen, 1920, 1440).to_list() == \
        pytest.approx([960, 720, 1920, 1440])
    # normalized conventions do not care
    assert Box.from_convention([500, 500, 1000, 1000], Convention("norm1000", max_side=10),
                               1920, 1440).to_list() == pytest.approx([960, 720, 1920, 1440])


def test_the_convention_is_its_name_everywhere_a_string_goes():
    conv = Convention("qwen2.5", max_pixels=QWEN_1280, max_side=1000)
    assert conv == "qwen2.5" and f"{conv}" == "qwen2.5" and conv.name == "qwen2.5"
    assert conv.settings() == {"max_side": 1000, "factor": 28, "min_pixels": 3136,
                               "max_pixels": QWEN_1280}
    assert Convention("norm1000").settings() == {}
    with pytest.raises(BoxError, match="unknown box convention"):
        Convention("yolo")
    with pytest.raises(BoxError, match="max_side"):
        Convention("pixel", max_side=0)


@pytest.mark.parametrize("text, convention, why", [
    ('{"bbox_2d": [100, 200, 300, 400]}', "norm1000", "'bbox_2d'"),  # the case
    ('{"box": [100, 200, 300, 400]}', "gemini", "'box'"),
    ('{"box_2d": [100, 200, 300, 400]}', "qwen3", "'box_2d'"),
    ('{"box": [100, 200, 1200, 400]}', "norm1000", "1200 is outside"),  # past 1000
    ('{"box_2d": [100, 200, 300, 1001]}', "gemini", "1001 is outside"),
    ('{"box": [0.1, 0.2, 30, 0.4]}', "unit", "30 is outside"),
    ('{"box": [10, 20, 642, 40]}', "pixel", "642 is outside"),  # a 640-wide image, 2 px out
    ('<box>[[100, 200, 300, 400]]</box>', "pixel", "InternVL"),
    ('(100,200),(300,400)', "gemini", "Qwen2-VL"),
])
def test_a_reply_in_another_convention_is_a_format_mismatch_never_rescaled(text, convention,
                                                                           why):
    parsed = read_box(text, convention, 640, 480)
    assert parsed.value is None and parsed.reason == "format_mismatch"
    assert why in parsed.error


@pytest.mark.parametrize("text, convention, expected", [
    ('{"box": [100, 200, 300, 400]}', "norm1000", [64, 96, 192, 192]),
    ('{"bbox": [100, 200, 300, 400]}', "norm1000", [64, 96, 192, 192]),  # generic key
    ('[100, 200, 300, 400]', "qwen3", [64, 96, 192, 192]),  # a bare list
    ('<ref>socket</ref><box>[[100, 200, 300, 400]]</box>', "norm1000", [64, 96, 192, 192]),
    ('{"box_2d": [200, 100, 400, 300]}', "gemini", [64, 96, 192, 192]),  # y first
    ('{"box": [10, 20, 641, 40]}', "pixel", [10, 20, 640, 40]),  # a pixel over: clipped
])
def test_replies_in_the_asked_convention_are_read(text, convention, expected):
    assert read_box(text, convention, 640, 480).value == pytest.approx(expected)


def test_a_box_in_the_thinking_never_counts():
    text = ('<think>Maybe {"box": [0, 0, 1000, 1000]}? No, lower.</think>\n'
            '{"box": [100, 200, 300, 400]}')
    assert read_box(text, "norm1000", 640, 480).value == pytest.approx([64, 96, 192, 192])
    only_thinking = '<think>{"box": [100, 200, 300, 400]} is my guess'
    parsed = read_box(only_thinking, "norm1000", 640, 480)
    assert parsed.value is None and parsed.reason is None  # "parse": no answer given
    # a template that opened the thinking in the prompt leaves only the closing tag
    assert answer_text('a {"box": [1, 2, 3, 4]}</think>B') == "B"


def test_the_last_box_counts_wherever_it_is_written():
    text = '```json\n{"box": [1, 2, 3, 4]}\n```\nCorrection: {"box": [100, 200, 300, 400]}'
    assert find_box(text).values == [100, 200, 300, 400]
    text = '{"box": [100, 200, 300, 400]} or rather <box>[[10, 20, 30, 40]]</box>'
    assert find_box(text) == ([10, 20, 30, 40], "internvl")


@given(conv=st.sampled_from(CONVENTIONS), w=st.integers(16, 4000), h=st.integers(16, 4000),
       side=st.one_of(st.none(), st.integers(16, 3000)),
       max_pixels=st.sampled_from([256 * 28 * 28, QWEN_1280, 16384 * 28 * 28]))
def test_every_convention_round_trips_with_its_settings(conv, w, h, side, max_pixels):
    c = Convention(conv, max_side=side, max_pixels=max_pixels)
    box = Box.of([w * 0.1, h * 0.2, w * 0.6, h * 0.9])
    back = Box.from_convention(box.to_convention(c, w, h), c, w, h)
    assert back.to_list() == pytest.approx(box.to_list(), rel=1e-9, abs=1e-6)
    # and what a model writes in its frame is in range
    assert c.out_of_range(box.to_convention(c, w, h), w, h) is None
