"""``backends.tokens``: each provider's published token rule, checked against the examples its
source gives, and the stated assumptions for text and output."""

from __future__ import annotations

import math

import pytest
from PIL import Image

from unseen.backends import make_backend
from unseen.backends.tokens import (
    OUTPUT_ASSUMPTIONS,
    REASONING_ASSUMPTIONS,
    TokenRules,
    count_request,
    gemini_image_tokens,
    openai_family,
    openai_image_tokens,
    patches,
    qwen_image_tokens,
    request_kind,
    rules_for,
    sent_size,
    text_tokens,
    tiles_tokens,
)
from unseen.engine.oracle import BoxTruth, Cue
from unseen.engine.types import AnswerSpec, Decoding, ImagePart, Message, Request, TextPart


def test_openai_tiles_as_the_vision_guide_works_them_out():
    # "Calculating costs": a 1024x1024 image at high detail is 765 tokens, 2048x4096 is 1105,
    # any image at low detail 85
    assert tiles_tokens(1024, 1024, 85, 170, "high") == 765
    assert tiles_tokens(2048, 4096, 85, 170, "high") == 1105
    assert tiles_tokens(4096, 8192, 85, 170, "low") == 85
    # a small image is not scaled up: one tile
    assert tiles_tokens(300, 200, 85, 170, "high") == 255
    # auto: low up to 512x512 (our stated reading), high above
    assert tiles_tokens(512, 512, 85, 170, "auto") == 85
    assert tiles_tokens(1024, 1024, 85, 170, "auto") == 765


def test_openai_patches_as_the_vision_guide_works_them_out():
    # 1024x1024: 32 x 32 = 1024 patches, under the 1536 cap; 1800x2400: 57 x 75 = 4275, so
    # shrunk by sqrt(1536 * 32^2 / (1800 * 2400)) and to whole patches: 33 x 44 = 1452
    assert patches(1024, 1024) == 1024
    assert patches(1800, 2400) == 1452
    mini = openai_family("gpt-4.1-mini")
    assert mini.multiplier == 1.62
    assert openai_image_tokens(mini, 1800, 2400, "high") == 2353  # ceil(1452 * 1.62)
    assert openai_image_tokens(mini, 1800, 2400, "low") == 2353  # detail changes nothing
    # original: a 10,000-patch budget
    assert patches(4000, 4000, 10_000) <= 10_000 < patches(4000, 4000, 20_000)
    assert openai_image_tokens(openai_family("gpt-6-sol"), 4000, 4000, "original") == \
        math.ceil(patches(4000, 4000, 10_000) * 1.2)


@pytest.mark.parametrize(("model", "rule"), [
    ("gpt-4o", (85, 170, None)), ("gpt-4o-2024-08-06", (85, 170, None)),
    ("gpt-4o-mini", (2833, 5667, None)), ("gpt-4.1", (85, 170, None)),
    ("gpt-4.1-mini", (0, 0, 1.62)), ("gpt-4.1-nano", (0, 0, 2.46)),
    ("o4-mini", (0, 0, 1.72)), ("o3", (75, 150, None)), ("gpt-5", (70, 140, None)),
    ("gpt-5-mini", (0, 0, 1.62)), ("gpt-5-nano", (0, 0, 2.46)),
    ("gpt-5.6-luna", (0, 0, 1.2)), ("gpt-6-astra", (0, 0, 1.2)),
    ("grok-4.6", None),
])
def test_openai_families(model, rule):
    family = openai_family(model)
    assert (None if family is None else (family.base, family.tile, family.multiplier)) == rule


def test_gemini_by_media_resolution():
    assert [gemini_image_tokens("gemini-3-flash", 640, 480, r)
            for r in ("low", "medium", "high", "ultra_high", None)] == [280, 560, 1120, 2240, 1120]
    # Gemini 2.x: 258 up to 384x384, else 258 per 768x768 tile
    assert gemini_image_tokens("gemini-2.5-flash", 384, 384, "high") == 258
    assert gemini_image_tokens("gemini-2.0-flash", 1600, 800, "high") == 258 * 3 * 2


def test_qwen_by_smart_resize():
    # qwen-vl-utils: 1440x1920 (h x w) resizes to 1428x1932 → 51 x 69 tokens, plus 2 markers
    assert qwen_image_tokens(1920, 1440, 28, 3136, 16384 * 28 * 28) == 51 * 69 + 2
    # capped by max_pixels: at most max_pixels / 28² tokens
    assert qwen_image_tokens(1920, 1440, 28, 3136, 256 * 28 * 28) <= 256 + 2
    # Qwen3-VL: factor 32
    assert qwen_image_tokens(640, 480, 32, 4 * 32 * 32, 16384 * 32 * 32) == 20 * 15 + 2


def _rules(spec: str, monkeypatch) -> TokenRules:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    return rules_for(make_backend(spec))


def test_each_backend_gets_its_providers_rule(monkeypatch):
    r = _rules("openai:gpt-4o,detail=low", monkeypatch)
    assert (r.detail, r.fallback, r.image(4000, 3000)) == ("low", False, 85)
    assert _rules("openai-responses:gpt-4o", monkeypatch).image(1024, 1024) == 765
    r = _rules("gemini:gemini-3-flash,media_resolution=medium", monkeypatch)
    assert r.image(640, 480) == 560 and r.thinking  # the Gemini profile thinks
    r = _rules("vllm:Qwen/Qwen2.5-VL-7B-Instruct@http://x,max_pixels=200704", monkeypatch)
    assert r.qwen == (28, 3136, 200704)
    r = _rules("vllm:Qwen/Qwen3-VL-8B-Instruct@http://x", monkeypatch)
    assert r.qwen == (32, 4 * 32 * 32, 16384 * 32 * 32)
    # a model no rule is known for: the stated fallback, flagged
    r = _rules("vllm:OpenGVLab/InternVL3_5-38B@http://x", monkeypatch)
    assert r.fallback and r.name.startswith("fallback") and r.image(1024, 1024) == 765
    assert _rules("openai:grok-4.6@https://api.x.ai/v1", monkeypatch).fallback


def test_the_image_is_counted_at_its_size_as_sent(tmp_path):
    path = tmp_path / "a.png"
    Image.new("RGB", (1600, 1200)).save(path)
    assert sent_size(ImagePart(path=str(path)), None) == (1600, 1200)
    assert sent_size(ImagePart(path=str(path)), 800) == (800, 600)  # --max-image-side
    boxes = {"boxes": [[0, 0, 800, 1200], [800, 0, 1600, 1200]], "labels": ["A", "B"]}
    assert sent_size(ImagePart(path=str(path), overlay=boxes), None) == (1600, 1200)
    crop = {"crop": [100.4, 50, 500, 250]}  # spoe:finish=direct sends the zoomed region
    assert sent_size(ImagePart(path=str(path), overlay=crop), None) == (400, 200)


def _request(text: str, *, cues=(), answer="box", effort=None, max_tokens=None,
             turns=()) -> Request:
    truth = BoxTruth(instance="i", box=[1, 1, 2, 2], width=10, height=10, cues=frozenset(cues))
    return Request(messages=[*turns, Message(role="user", parts=[TextPart(text=text)])],
                   decoding=Decoding(reasoning_effort=effort, max_tokens=max_tokens),
                   oracle=truth, answer=AnswerSpec(kind=answer))


def test_text_and_output_assumptions():
    assert text_tokens("") == 0 and text_tokens("abcd") == 1 and text_tokens("abcde") == 2
    plain = TokenRules(provider="openai", model="gpt-4o", name="t")
    n = count_request(_request("x" * 40), plain)
    assert (n.text, n.image, n.kind) == (3 + 3 + 10, 0, "box")
    assert n.output == OUTPUT_ASSUMPTIONS["box"][0] and n.reasoning == 0
    assert request_kind(_request("x", cues=[Cue.REASONING])) == "cot"
    assert request_kind(_request("x", cues=[Cue.REASONING, Cue.REFLECTION])) == "reflect"
    assert request_kind(_request("x", answer="choice")) == "choice"
    assert request_kind(_request("x", answer="fields")) == "fields"
    thinking = TokenRules(provider="openai", model="gpt-6-sol", name="t", thinking=True)
    assert count_request(_request("x"), thinking).reasoning == REASONING_ASSUMPTIONS["medium"]
    assert count_request(_request("x", effort="high"), thinking).reasoning == 4000
    assert count_request(_request("x", effort="none"), thinking).reasoning == 0
    capped = count_request(_request("x", effort="high", max_tokens=100), thinking)
    assert capped.output + capped.reasoning == 100


def test_a_carried_reply_counts_as_the_output_assumed_for_it():
    rules = TokenRules(provider="openai", model="gpt-4o", name="t")
    first = Message(role="user", parts=[TextPart(text="y" * 8)])
    reply = Message(role="assistant", parts=[TextPart(text="short")])
    n = count_request(_request("x" * 4, turns=[first, reply]), rules, {"short": 300})
    assert n.text == 3 + (3 + 2) + (3 + 300) + (3 + 1)
    unknown = count_request(_request("x" * 4, turns=[first, reply]), rules)
    assert unknown.text == 3 + (3 + 2) + (3 + 2) + (3 + 1)  # a reply of its own length
