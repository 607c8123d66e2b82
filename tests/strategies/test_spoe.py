"""SPoE exactly as Algorithm 1, its overlays, choices, confidence and stopping rules."""

import base64
import io
import json
import math

import numpy as np
import pytest
from fake_providers import Reply
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

import unseen
from unseen.strategies.choice import choice_confidence, read_choice
from unseen.strategies.spoe import candidates


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """One 1000x800 instance whose target sits low on the right."""
    d = tmp_path_factory.mktemp("wide")
    rng = np.random.default_rng(0)
    Image.fromarray((rng.random((800, 1000, 3)) * 60 + 100).astype("uint8")).save(d / "a.png")
    (d / "instances.jsonl").write_text(json.dumps(
        {"id": "w", "image": "a.png", "instruction": "Open the drawer", "box": [700, 650, 760, 700]}) + "\n")
    return d


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def run(tmp_path, data, fp, strategy, backend="openai:gpt-4o"):
    out = tmp_path / "run"
    unseen.run(data, [strategy], [backend], out=out, base_url=fp.openai_base_url, cache=False,
               progress=False, backoff_base_s=0.01)
    return [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]


def test_regions_exactly_as_algorithm_1(tmp_path, fp, wide):
    fp.reset(Reply("A"))  # always eliminate A
    (r,) = run(tmp_path, wide, fp, "spoe:T=4")
    assert [s["region"] for s in r["steps"]] == [
        [500, 0, 1000, 800], [500, 400, 1000, 800], [750, 400, 1000, 800], [750, 600, 1000, 800]]
    assert r["prediction"] == [750, 600, 1000, 800] and len(fp.requests) == 4
    assert [s["info"]["axis"] for s in r["steps"]] == ["vertical", "horizontal"] * 2


def test_keep_mode_and_overlapping_halves(tmp_path, fp, wide):
    fp.reset(Reply("A"))
    (r,) = run(tmp_path / "keep", wide, fp, "spoe:T=2,mode=keep")
    assert [s["region"] for s in r["steps"]] == [[0, 0, 500, 800], [0, 0, 500, 400]]
    assert "MORE likely" in fp.requests[0].body["messages"][0]["content"][-1]["text"]
    fp.reset(Reply("A"))
    (r,) = run(tmp_path / "share", wide, fp, "spoe:T=2,share=0.6")
    assert [s["region"] for s in r["steps"]] == [[400, 0, 1000, 800], [400, 320, 1000, 800]]


def _image(recorded) -> np.ndarray:
    url = next(p["image_url"]["url"] for p in recorded.body["messages"][0]["content"]
               if p["type"] == "image_url")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_each_step_sends_both_outlines_and_a_new_image(tmp_path, fp, wide):
    fp.reset(Reply("A"))
    run(tmp_path, wide, fp, "spoe:T=3")
    plain = np.asarray(Image.open(wide / "a.png").convert("RGB")).astype(int)
    images = [_image(r).astype(int) for r in fp.requests]
    for t, img in enumerate(images, start=1):
        region = [0, 0, 1000, 800] if t == 1 else None
        a, b = candidates(region or _after(t - 1), t, 0.5)
        line = 5  # max(2, round(800 / 160)); the second outline is inset by one line width
        for i, box in enumerate((a, b)):  # each candidate's outline changes its left edge
            x1, y1, x2, y2 = (int(v) for v in box)
            col = x1 + i * line + line // 2
            edge = np.abs(img[y1 + 12:y2 - 12, col] - plain[y1 + 12:y2 - 12, col]).sum(axis=1)
            assert (edge > 60).mean() > 0.8
    assert all(not np.array_equal(images[i], images[i + 1]) for i in range(len(images) - 1))


def _after(t):
    return [[500, 0, 1000, 800], [500, 400, 1000, 800], [750, 400, 1000, 800]][t - 1]


def test_structured_choice_requested(tmp_path, fp, wide):
    fp.reset(Reply('{"choice": "B"}'))
    (r,) = run(tmp_path / "o", wide, fp, "spoe:T=1")
    fmt = fp.requests[0].body["response_format"]
    assert fmt["json_schema"]["schema"]["properties"]["choice"]["enum"] == ["A", "B"]
    assert r["steps"][0]["parsed"]["choice"] == "B" and r["prediction"] == [0, 0, 500, 800]
    fp.reset(Reply("B"))
    run(tmp_path / "v", wide, fp, "spoe:T=1", backend=f"vllm:m@{fp.serve('m').url}")
    assert fp.requests[0].body["structured_outputs"] == {"choice": ["A", "B"]}


def test_confidence_from_logprobs_and_the_tau_stop(tmp_path, fp, wide):
    lp = [{"token": "A", "logprob": math.log(0.7), "bytes": None,
           "top_logprobs": [{"token": "A", "logprob": math.log(0.7), "bytes": None},
                            {"token": "B", "logprob": math.log(0.3), "bytes": None}]}]
    fp.reset(Reply("A", logprobs=lp))
    (r,) = run(tmp_path / "c", wide, fp, "spoe:T=2")
    assert r["steps"][0]["parsed"]["confidence"] == pytest.approx(0.7)
    fp.reset(Reply("A", logprobs=lp))
    (r,) = run(tmp_path / "t", wide, fp, "spoe:T=4,tau=0.8")
    # unsure at the first step: stop and return the region as it was (the full image)
    assert len(r["steps"]) == 1 and r["prediction"] == [0, 0, 1000, 800]


def test_unreadable_choice_ends_unanswered_with_the_regions_so_far(tmp_path, fp, wide):
    fp.reset()
    fp.script(Reply("A"), Reply("Both are plausible."))
    (r,) = run(tmp_path, wide, fp, "spoe:T=4")
    assert r["status"] == "unanswered" and r["error"]["kind"] == "parse"
    assert r["steps"][0]["region"] == [500, 0, 1000, 800] and len(r["steps"]) == 2


def test_min_area_stop(tmp_path, fp, wide):
    fp.reset(Reply("A"))
    (r,) = run(tmp_path, wide, fp, "spoe:T=8,min_area=0.2")
    assert len(r["steps"]) == 3  # areas 0.5, 0.25, 0.125 < 0.2: stop


@pytest.mark.parametrize("text, expected", [
    ("A", "A"), ("b", "B"), ("**B**", "B"), ("Region A", "A"), ('{"choice": "B"}', "B"),
    ("```json\n{\"choice\": \"A\"}\n```", "A"), ("The answer is B.", "B"),
    ("I would eliminate region A because the bed is in B.", "A"),
    ("A or B? Both.", None), ("", None), ("Neither.", None),
])
def test_read_choice(text, expected):
    assert read_choice(text, ["A", "B"]) == expected


@given(st.text(max_size=200))
def test_read_choice_never_raises(text):
    assert read_choice(text, ["A", "B"]) in (None, "A", "B")


def test_choice_confidence_without_logprobs():
    assert choice_confidence(None, ["A", "B"], "A") is None
    lp = [{"token": " ", "logprob": 0.0, "top": []},
          {"token": "B", "logprob": math.log(0.6), "top": [{"token": "A", "logprob": math.log(0.2)}]}]
    assert choice_confidence(lp, ["A", "B"], "B") == pytest.approx(0.75)


def test_oracle_keeps_the_target_until_a_cut(tmp_path, wide):
    out = tmp_path / "o"
    unseen.run(wide, ["spoe:T=8"], ["sim:oracle"], out=out, cache=False, progress=False)
    (r,) = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    from unseen.engine.box import Box

    gt = Box.of([700, 650, 760, 700])
    alive = [Box.of(s["region"]).contains(gt) for s in r["steps"]]
    # once cut, never whole again; before the cut the region always holds it
    assert alive == sorted(alive, reverse=True) and alive[0]


def test_unsure_answer_stops_with_the_region_so_far(tmp_path, fp, wide):
    fp.reset()
    fp.script(Reply("A"), Reply("C"))
    (r,) = run(tmp_path, wide, fp, "spoe:T=4,unsure=true")
    assert "Answer with one letter: A, B or C." in fp.requests[0].body["messages"][0]["content"][-1]["text"]
    assert fp.requests[0].body["response_format"]["json_schema"]["schema"]["properties"][
        "choice"]["enum"] == ["A", "B", "C"]
    assert len(r["steps"]) == 2 and r["prediction"] == [500, 0, 1000, 800]


def test_hybrid_finish_boxes_inside_the_zoomed_region(tmp_path, fp, wide):
    fp.reset()
    fp.script(Reply("A"), Reply("A"), Reply('{"box": [0, 0, 500, 500]}'))
    (r,) = run(tmp_path, wide, fp, "spoe:T=2,finish=direct")
    assert [s["name"] for s in r["steps"]] == ["ask", "ask", "finish"]
    # region [500, 400, 1000, 800] is 500x400; 0-1000 box [0, 0, 500, 500] → [0, 0, 250, 200]
    assert r["prediction"] == [500, 400, 750, 600]
    sent = _image(fp.requests[2])
    assert sent.shape[:2] == (400, 500)  # only the region is sent, zoomed in
    assert r["steps"][2]["info"]["crop"] == [500, 400, 1000, 800]


def test_oracle_with_the_unsure_option_never_loses_the_target(tmp_path, wide):
    out = tmp_path / "o"
    unseen.run(wide, ["spoe:T=8,unsure=true"], ["sim:oracle"], out=out, cache=False,
               progress=False)
    (r,) = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    from unseen.engine.box import Box

    assert Box.of(r["prediction"]).contains(Box.of([700, 650, 760, 700]))


def test_grid_rounds_pinned(tmp_path, fp, wide):
    fp.reset(Reply('{"eliminate": [1, 2]}'))
    (r,) = run(tmp_path / "g", wide, fp, "spoe-grid:T=2")
    assert [s["region"] for s in r["steps"]] == [[0, 400, 1000, 800], [0, 600, 1000, 800]]
    assert r["steps"][0]["info"]["cells"] == 4
    fp.reset(Reply('{"eliminate": [1, 2, 3, 4, 6, 7, 8, 9]}'))
    (r,) = run(tmp_path / "g3", wide, fp, "spoe-grid:rows=3,cols=3,T=1")
    assert r["prediction"] == pytest.approx([1000 / 3, 800 / 3, 2000 / 3, 1600 / 3])
    fp.reset(Reply('{"eliminate": [1, 2, 3, 4]}'))
    (r,) = run(tmp_path / "all", wide, fp, "spoe-grid:T=1")
    assert r["status"] == "unanswered" and "every cell" in r["error"]["message"]


@pytest.mark.parametrize("text, expected", [
    ('{"eliminate": [1, 4]}', [1, 4]), ("[3]", [3]), ("Eliminate cells 2 and 3.", [2, 3]),
    ('{"eliminate": []}', []), ("none of them", None), ('{"eliminate": [7]}', None),
])
def test_read_eliminated(text, expected):
    from unseen.strategies.spoe_grid import read_eliminated

    assert read_eliminated(text, 4) == expected


def test_self_consistency_votes(tmp_path, fp, wide):
    fp.reset()
    fp.script(Reply("B"), Reply("A"), Reply("A"))
    (r,) = run(tmp_path, wide, fp, "spoe:T=1,votes=3")
    assert len(fp.requests) == 3
    assert all(q.body["temperature"] == 0.7 for q in fp.requests)
    step = r["steps"][0]
    assert sorted(step["info"]["votes"]) == ["A", "A", "B"] and step["info"]["calls"] == 3
    assert step["parsed"] == {"choice": "A", "confidence": pytest.approx(2 / 3)}
    assert r["prediction"] == [500, 0, 1000, 800]
    from unseen.evals.scenefunri import summarize

    assert summarize([tmp_path / "run"])[0]["calls"] == 3
    # the vote share is the confidence that tau reads
    fp.reset()
    fp.script(Reply("B"), Reply("A"), Reply("A"))
    (r,) = run(tmp_path / "tau", wide, fp, "spoe:T=3,votes=3,tau=0.8")
    assert len(r["steps"]) == 1 and r["prediction"] == [0, 0, 1000, 800]


def _lp(label, p):
    other = "B" if label == "A" else "A"
    return [{"token": label, "logprob": math.log(p), "bytes": None,
             "top_logprobs": [{"token": label, "logprob": math.log(p), "bytes": None},
                              {"token": other, "logprob": math.log(1 - p), "bytes": None}]}]


def test_best_first_search_backtracks_to_the_better_alternative(tmp_path, fp, wide):
    fp.reset()
    # step 1: eliminate A, unsure (0.55): B scores 0.55, A 0.45
    # step 2 (expands B): eliminate its top at 0.6: bottom 0.33, top 0.22 → A (0.45) is best
    # step 3 must expand A: the search went back
    fp.script(Reply("A", logprobs=_lp("A", 0.55)), Reply("A", logprobs=_lp("A", 0.6)),
              Reply("B", logprobs=_lp("B", 0.9)))
    (r,) = run(tmp_path, wide, fp, "spoe-search:T=2,budget=3")
    expanded = [s["info"]["expand"] for s in r["steps"]]
    assert expanded == [[0, 0, 1000, 800], [500, 0, 1000, 800], [0, 0, 500, 800]]
    # A's children after eliminating its bottom at 0.9: top 0.405 beats B-bottom 0.33
    assert r["prediction"] == [0, 0, 500, 400]


def test_custom_state_keys_reach_the_next_step(tmp_path, fp, wide):
    """A strategy's own state keys survive between steps (a node's input is not cut down
    to the shared schema)."""
    fp.reset(Reply("A", logprobs=_lp("A", 0.9)))
    (r,) = run(tmp_path, wide, fp, "spoe-search:T=3")
    assert len(r["steps"]) == 3  # a confident chooser walks straight down: T calls


def test_grid_eliminating_diagonal_cells_stops_instead_of_repeating_itself(tmp_path, fp, wide,
                                                                         run_main):
    """Issue 28: {"eliminate": [2, 3]} on a 2x2 grid keeps cells 1 and 4, whose bounding box
    is the whole region: the next rounds sent the identical request. Now the search stops
    there, and the strip's caption names the cells."""
    fp.reset(Reply('{"eliminate": [2, 3]}'))
    (r,) = run(tmp_path / "d", wide, fp, "spoe-grid:T=3")
    assert len(fp.requests) == 1 and len(r["steps"]) == 1
    assert r["status"] == "answered" and r["prediction"] == [0, 0, 1000, 800]
    fp.reset(Reply('{"eliminate": []}'))  # keeping every cell narrows nothing either
    (r,) = run(tmp_path / "e", wide, fp, "spoe-grid:T=3")
    assert len(fp.requests) == 1
    from unseen.engine import types
    from unseen.views.steps import step_caption

    step = types.Step(name="ask", index=0, prompt="", reply=types.Reply(), info={"t": 1},
                      parsed={"eliminate": [2, 3]}, region=[0, 0, 1000, 800])
    assert step_caption(step.model_dump(), {}) == "t=1 eliminate cells 2, 3"
