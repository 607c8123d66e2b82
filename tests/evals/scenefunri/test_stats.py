"""The dataset card (`unseen data stats`): every figure on a folder worked by hand, the
fixed-rule scores against the baseline backends themselves, the funnel, the heat map, and
bad input as one line naming the file and line."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import unseen
from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.data.sample import bundled_sample
from unseen.evals.scenefunri.metrics import aggregate
from unseen.evals.scenefunri.report.dataset_card import (
    StatsError,
    describe,
    quantile,
    read_funnel,
    render_stats,
    rule_scores,
)

# 100x100 images; boxes chosen so each figure can be worked by hand
ROWS = [
    ("a", [10, 10, 20, 20], "Open the door", {"visit": "1", "video": "10", "affordance": "rotate"}),
    ("b", [45, 45, 55, 55], "Turn on the light by the door",
     {"visit": "1", "video": "11", "affordance": "tip_push"}),
    ("c", [70, 80, 90, 90], "Unplug the lamp on the bedside table",
     {"visit": "2", "video": "20", "affordance": "unplug"}),
    ("d", [0, 60, 40, 100], "Unplug the TV", {"visit": "2", "video": "20",
                                              "affordance": "unplug"}),
]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "images").mkdir()
    lines = []
    for iid, box, text, meta in ROWS:
        Image.new("RGB", (100, 100), (90, 90, 90)).save(tmp_path / "images" / f"{iid}.png")
        lines.append(json.dumps({"id": iid, "image": f"images/{iid}.png", "instruction": text,
                                 "box": box, "meta": meta}))
    # two instances may share an image: "images" counts files
    lines.append(json.dumps({"id": "e", "image": "images/d.png", "instruction": "Unplug it",
                             "box": [0, 60, 40, 100], "meta": {}}))
    (tmp_path / "instances.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_card_of_a_folder_worked_by_hand(folder):
    card = describe(folder)
    assert (card["instances"], card["images"], card["scenes"], card["videos"]) == (5, 4, 2, 3)
    assert card["affordances"] == {"unplug": 2, "rotate": 1, "tip_push": 1}
    # words: 3, 7, 7, 3, 2
    assert card["instruction_words"] == {"min": 2, "median": 3, "mean": 4.4, "max": 7}
    # areas (share): 0.01, 0.01, 0.02, 0.16, 0.16 → median 0.02, p25 0.01, p90 0.16
    assert card["box_area"]["min"] == pytest.approx(0.01)
    assert card["box_area"]["median"] == pytest.approx(0.02)
    assert card["box_area"]["p75"] == pytest.approx(0.16)
    assert card["box_area"]["max"] == pytest.approx(0.16)
    # centres (x, y): (.15,.15) top-left; (.5,.5) middle; (.8,.85) bottom-right;
    # (.2,.8) twice bottom-left
    assert card["centre_grid"] == [[1, 0, 0], [0, 1, 0], [2, 0, 1]]
    assert card["centre_cells_used"] == 4
    assert card["funnel"] is None


def test_rule_scores_worked_by_hand(folder):
    """center: the box [25, 25, 75, 75] (a quarter of the image) holds only b's box, so
    CAcc@50 = 1/5 and CAcc@75 = 0 (1 − 0.25 is not > 0.75)."""
    rules = rule_scores(load_dataset(folder))
    assert rules["center"]["cacc50"] == pytest.approx(20.0)
    assert rules["center"]["cacc75"] == 0.0
    # Dist of b: every corner 20 px off in x and y → sqrt(0.2² + 0.2²)
    ds = load_dataset(folder)
    one = rule_scores(type(ds)(ds.root, ds.instances[1:2], "x"))
    assert one["center"]["dist"] == pytest.approx(100 * np.hypot(0.2, 0.2))
    assert "prior" not in one  # leave-one-out needs another instance


def test_rule_scores_agree_with_the_baseline_backends(tmp_path):
    """The card recomputes backends/baseline.py's rules; a run of the backends themselves on
    the bundled set gives the same means."""
    data = bundled_sample()
    res = unseen.run(data, ["direct"], ["baseline:center", "baseline:prior", "baseline:fixed"],
                     out=tmp_path / "run", progress=False, cache=False)
    recs = [json.loads(x) for x in (res.run_dir / "trajectories.jsonl").read_text().splitlines()]
    card = rule_scores(load_dataset(data))
    for rule in ("center", "prior", "fixed"):
        got = aggregate([r["metrics"] for r in recs if r["backend"] == f"baseline:{rule}"])
        for m in ("cacc75", "cacc50", "miou", "dist"):
            # the backend answers in text, its box rounded; ×100 means agree to 0.01
            assert card[rule][m] == pytest.approx(got[m], abs=0.01), (rule, m)


def test_quantile_is_numpys_linear():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 40):
        xs = list(rng.random(n))
        for q in (0, 0.1, 0.25, 0.5, 0.9, 1):
            assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))


def test_funnel_and_formats(folder):
    (folder / "build.json").write_text(json.dumps({
        "visits": 2, "frames": 30, "descriptions": 4, "pairs": 120, "candidates": 9, "kept": 5,
        "dropped": {"not inside the view (V)": 100, "target behind the camera": 11,
                    "another frame chosen for the description": 4}, "frame_rule": "R"}))
    card = describe(folder)
    assert card["funnel"]["pairs"] == 120 and card["funnel"]["kept"] == 5
    assert list(card["funnel"]["dropped"]) == ["not inside the view (V)",
                                               "target behind the camera",
                                               "another frame chosen for the description"]
    md = render_stats(card, "md")
    assert "| (frame, description) pairs | 120 |" in md and "| kept | 5 |" in md
    # each drop sits under the stage it leaves
    assert md.index("not inside the view") < md.index("| candidates |") < \
        md.index("another frame chosen") < md.index("| kept |")
    assert "| bottom | 2 | 0 | 1 |" in md and "| center (rule) |" in md
    assert json.loads(render_stats(card, "json"))["centre_grid"] == card["centre_grid"]
    with pytest.raises(ValueError, match="unknown format"):
        render_stats(card, "xml")


def test_cli_on_the_bundled_set_and_the_png(tmp_path, run_main):
    png = tmp_path / "card.png"
    code, out, err = run_main(["data", "stats", str(bundled_sample()), "--png", str(png)])
    assert code == 0, err
    assert "center (rule)" in out and "build funnel" in out and "kept" in out
    assert "fixed (rule)" in out and "boxes baseline:fixed learned" in out
    code, out, _ = run_main(["data", "stats", str(bundled_sample()), "--format", "json"])
    card = json.loads(out)
    assert card["instances"] == 65 and sum(map(sum, card["centre_grid"])) == 65
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width > im.height > 300
        # the heat maps' colour scale (yellow to red) appears: bins were filled
        px = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(int)
        assert ((px[:, 0] > 180) & (px[:, 2] < 90)).sum() > 500


BAD = {
    "a bad line": ("instances.jsonl", lambda f: (f / "instances.jsonl").write_text(
        (f / "instances.jsonl").read_text().replace('"id": "c"', '"id": c', 1)), ":3:"),
    "build.json not JSON": ("build.json", lambda f: (f / "build.json").write_text(
        '{\n "visits": 1,\n "frames": [\n'), ":4:"),
    "a negative count": ("build.json", lambda f: (f / "build.json").write_text(
        '{\n "visits": 1,\n "kept": -2\n}'), ":3:"),
    "drops not counts": ("build.json", lambda f: (f / "build.json").write_text(
        '{\n "dropped": {"x": "many"}\n}'), ":2:"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_with_file_and_line(folder, run_main, case):
    name, breaker, where = BAD[case]
    breaker(folder)
    code, _, err = run_main(["data", "stats", str(folder)])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1, err
    assert f"{name}{where}" in lines[0], lines[0]


def test_missing_folder_and_bad_format(tmp_path, run_main):
    code, _, err = run_main(["data", "stats", str(tmp_path / "nowhere")])
    assert code == 2 and "nowhere" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_main(["data", "stats", str(bundled_sample()), "--format", "xml"])
    assert code == 2 and "--format" in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=80), st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["visits", "frames", "pairs", "kept", "dropped", "x"]), kids,
        max_size=4), max_leaves=8).map(json.dumps)))
def test_build_json_reader_fuzz(tmp_path, text):
    """Whatever build.json holds: a funnel, or one line that names the file and a line."""
    (tmp_path / "build.json").write_text(text, encoding="utf-8")
    try:
        funnel = read_funnel(tmp_path)
    except StatsError as e:
        msg = str(e)
        assert "\n" not in msg and msg.startswith(f"{tmp_path / 'build.json'}:")
        assert msg.split(":")[1].isdigit()
    else:
        assert funnel is not None and all(isinstance(funnel[k], int) for k in ("kept", "pairs"))
