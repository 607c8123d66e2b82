"""Image resolution and resize are chosen, sent and recorded settings (issue 23, section 1):
Qwen2.5-VL's ``min_pixels``/``max_pixels`` go to a vLLM server as ``mm_processor_kwargs``
and read its pixel boxes back; OpenAI's ``detail`` and Gemini's ``media_resolution`` are
sent, with stated defaults; ``--max-image-side`` resizes before sending; run.json and the
table's legend say what was used.

Worked by hand (test_conventions.py): a 1920x1440 image at max_pixels = 1280*28*28 is
1148x840 to Qwen2.5-VL, so its box [574, 420, 1148, 840] is [960, 720, 1920, 1440].
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from fake_providers import Reply
from helpers import read_journal
from PIL import Image

import unseen

QWEN25 = "Qwen/Qwen2.5-VL-7B-Instruct"
MAX_PIXELS = 1280 * 28 * 28


@pytest.fixture(scope="module")
def big_data(tmp_path_factory) -> Path:
    """One SceneFun3D-sized frame (1920x1440, the hires_wide size)."""
    folder = tmp_path_factory.mktemp("big") / "data"
    (folder / "images").mkdir(parents=True)
    Image.new("RGB", (1920, 1440), (120, 110, 100)).save(folder / "images" / "a.jpg")
    (folder / "instances.jsonl").write_text(json.dumps({
        "id": "a", "image": "images/a.jpg", "instruction": "Open the valve",
        "box": [1500, 1100, 1700, 1300]}) + "\n", encoding="utf-8")
    return folder


def sent_sizes(body: dict) -> list[tuple[int, int]]:
    """The sizes of the images a Chat Completions body carries."""
    out = []
    for m in body["messages"]:
        for part in m["content"] if isinstance(m["content"], list) else []:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                out.append(Image.open(io.BytesIO(base64.b64decode(data))).size)
    return out


def test_qwen25_at_a_non_default_resize_comes_back_in_the_original_pixels(fp, big_data,
                                                                          tmp_path):
    fp.serve(QWEN25)
    fp.default = Reply('{"bbox_2d": [574, 420, 1148, 840]}')
    res = unseen.run(big_data, ["direct"], [f"vllm:{QWEN25}@{fp.url},max_pixels={MAX_PIXELS}"],
                     out=tmp_path / "r", cache=False, progress=False)
    assert res.answered == 1
    (rec,) = read_journal(tmp_path / "r")
    assert rec["prediction"] == pytest.approx([960, 720, 1920, 1440])
    # the server is told the resize the conversion assumes, with every request
    body = fp.requests[0].body
    assert body["mm_processor_kwargs"] == {"min_pixels": 3136, "max_pixels": MAX_PIXELS}
    assert sent_sizes(body) == [(1920, 1440)]  # the server resizes, not unseen
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert desc["box_format"] == "qwen2.5"
    assert desc["box_settings"] == {"factor": 28, "min_pixels": 3136, "max_pixels": MAX_PIXELS}
    assert desc["image"] == {"max_pixels": MAX_PIXELS}
    # the default resize is sent too: the server's own default cannot be seen from here
    fp.reset(Reply('{"bbox_2d": [966, 714, 1932, 1428]}'))
    unseen.run(big_data, ["direct"], [f"vllm:{QWEN25}@{fp.url}"], out=tmp_path / "d",
               cache=False, progress=False)
    assert fp.requests[0].body["mm_processor_kwargs"] == {"min_pixels": 3136,
                                                          "max_pixels": 16384 * 28 * 28}
    (rec,) = read_journal(tmp_path / "d")
    assert rec["prediction"] == pytest.approx([960, 720, 1920, 1440])


def test_max_image_side_resizes_before_sending_and_pixel_boxes_come_back(fp, big_data,
                                                                         tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply('{"box": [480, 360, 960, 720]}')
    res = unseen.run(big_data, ["direct"], ["openai:gpt-4o,box_format=pixel"],
                     base_url=fp.openai_base_url, out=tmp_path / "r", cache=False,
                     progress=False, max_image_side=960)
    assert res.answered == 1
    body = fp.requests[0].body
    assert sent_sizes(body) == [(960, 720)]
    assert "960 pixels wide and 720 pixels high" in body["messages"][0]["content"][-1]["text"]
    (rec,) = read_journal(tmp_path / "r")
    assert rec["prediction"] == pytest.approx([960, 720, 1920, 1440])
    desc = json.loads((tmp_path / "r" / "run.json").read_text())["backends"][0]
    assert desc["image"] == {"max_side": 960, "detail": "high"}
    # SPoE's overlays are drawn on the full image, then sent at the same size
    fp.reset(Reply("A"))
    unseen.run(big_data, ["spoe:T=1"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
               out=tmp_path / "s", cache=False, progress=False, max_image_side=960)
    assert sent_sizes(fp.requests[0].body) == [(960, 720)]


def test_openai_detail_and_gemini_media_resolution_are_sent_with_stated_defaults(
        fp, sample_data, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    unseen.run(sample_data, ["direct"], ["openai:gpt-4o", "openai:gpt-4.1,detail=low"],
               base_url=fp.openai_base_url, out=tmp_path / "o", cache=False, progress=False,
               limit=1)
    details = {r.body["model"]: r.body["messages"][0]["content"][0]["image_url"]["detail"]
               for r in fp.requests}
    assert details == {"gpt-4o": "high", "gpt-4.1": "low"}
    fp.reset(Reply('{"box_2d": [100, 200, 300, 400]}'))
    unseen.run(sample_data, ["direct"], ["gemini:gemini-2.5-flash",
                                         "gemini:gemini-3-flash,media_resolution=ultra_high"],
               base_url=fp.gemini_base_url, out=tmp_path / "g", cache=False, progress=False,
               limit=1)
    by_model = {r.model: r.body for r in fp.requests}
    assert by_model["gemini-2.5-flash"]["generationConfig"]["mediaResolution"] == \
        "MEDIA_RESOLUTION_HIGH"
    ultra = by_model["gemini-3-flash"]
    assert "mediaResolution" not in ultra["generationConfig"]  # per part only
    image = next(p for p in ultra["contents"][0]["parts"] if "inlineData" in p or
                 "inline_data" in p)
    assert image["mediaResolution"]["level"] == "MEDIA_RESOLUTION_ULTRA_HIGH"
    descs = json.loads((tmp_path / "g" / "run.json").read_text())["backends"]
    assert [d["image"] for d in descs] == [{"media_resolution": "high"},
                                           {"media_resolution": "ultra_high"}]


def test_the_table_legend_says_how_images_were_sent(fp, sample_data, tmp_path, monkeypatch,
                                                    run_main):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COLUMNS", "120")
    fp.default = Reply('{"box": [100, 200, 300, 400]}')
    code, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                               "openai:gpt-4o,detail=low", "--base-url", fp.openai_base_url,
                               "--limit", "1", "--out", str(tmp_path / "r"), "--no-cache",
                               "--max-image-side", "512"])
    assert code == 0, err
    assert "images: gpt-4o max_side=512, detail=low" in out
    code, out, err = run_main(["compare", str(tmp_path / "r"), "--format", "md"])
    assert "images: gpt-4o max_side=512, detail=low" in out


def test_draw_fitted_draws_spoe_overlays_at_the_sent_size_recorded_and_opt_in(
        fp, big_data, tmp_path, monkeypatch):
    """``draw_fitted=true`` (with max_image_side): the overlay is drawn on the image fitted
    to 960x720, its boxes scaled by 960/1920 = 0.5, and encoded once; the setting is in
    run.json and the legend's serving text. Without it the bytes are those of the full-size
    drawing fitted afterwards, as before."""
    from unseen.engine import images
    from unseen.engine.rundir import serving_text
    from unseen.engine.types import ImagePart
    from unseen.renderers.overlay import render_overlay

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fp.default = Reply("A")
    unseen.run(big_data, ["spoe:T=1"], ["openai:gpt-4o,max_image_side=960,draw_fitted=true"],
               base_url=fp.openai_base_url, out=tmp_path / "f", cache=False, progress=False)
    fitted_body = fp.requests[0].body
    assert sent_sizes(fitted_body) == [(960, 720)]
    desc = json.loads((tmp_path / "f" / "run.json").read_text())["backends"][0]
    assert desc["image"] == {"max_side": 960, "detail": "high", "draw_fitted": True}
    assert "draw_fitted=True" in serving_text(desc)
    (rec,) = read_journal(tmp_path / "f")
    spec = rec["steps"][0]["images"][0]["overlay"]
    assert "fit" not in spec  # the journal keeps the spec as drawn at full size
    url = fitted_body["messages"][0]["content"][0]["image_url"]["url"]
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
    x1, y1, x2, y2 = (round(v * 0.5) for v in spec["boxes"][0])  # box A (not inset)
    # its bottom edge, in red (230, 40, 40): a line of max(2, round(720 / 160)) = 4 px
    # ending at row y2 - 1 of the sent image
    r, g, b = sent.getpixel(((x1 + x2) // 2, y2 - 3))
    assert r > 150 and b < 110, (r, g, b)
    # the default: unchanged bytes, the full-size drawing fitted afterwards
    fp.reset(Reply("A"))
    unseen.run(big_data, ["spoe:T=1"], ["openai:gpt-4o,max_image_side=960"],
               base_url=fp.openai_base_url, out=tmp_path / "d", cache=False, progress=False)
    url = fp.requests[0].body["messages"][0]["content"][0]["image_url"]["url"]
    part = ImagePart(path=str(big_data / "images" / "a.jpg"), overlay=spec)
    full = render_overlay(part.path, spec)
    assert base64.b64decode(url.split(",", 1)[1]) == images._fitted(960, "image/jpeg", full)[0]
    desc = json.loads((tmp_path / "d" / "run.json").read_text())["backends"][0]
    assert "draw_fitted" not in desc["image"]


@pytest.mark.parametrize("spec, why", [
    ("openai:gpt-4o,draw_fitted=true", "needs max_image_side"),
    ("openai:gpt-4o,max_image_side=960,draw_fitted=maybe", "is true or false"),
])
def test_draw_fitted_refuses_what_it_cannot_do_in_one_line(spec, why, big_data, tmp_path,
                                                           monkeypatch, run_main):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, out, err = run_main(["run", "--data", str(big_data), "-s", "spoe", "-b", spec,
                               "--out", str(tmp_path / "r")])
    assert code == 2 and why in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
