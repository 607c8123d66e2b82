"""The bundled sample set: what it holds, and that the shipped files are what the generator
and the build pipeline make."""

import json

import pytest

from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.build import FRAME_RULE, build
from unseen.evals.scenefunri.metrics import cacc
from unseen.evals.scenefunri.rooms import write_rooms
from unseen.evals.scenefunri.sample import SAMPLE_ROOMS, bundled_sample


def test_bundled_sample_holds_hidden_targets_from_eight_rooms():
    ds = load_dataset(bundled_sample())
    assert len(ds) >= 60
    visits = {i.meta["visit"] for i in ds.instances}
    assert len(visits) >= 8
    for inst in ds.instances:
        assert inst.meta["V"] == 1.0 and inst.meta["V_o"] == 0.0
        x1, y1, x2, y2 = inst.truth["box"]
        assert 0 <= x1 < x2 <= inst.width and 0 <= y1 < y2 <= inst.height
        assert inst.meta["affordance"] != "exclude"
    # no instruction repeats within a visit
    pairs = [(i.meta["visit"], i.text["instruction"].lower()) for i in ds.instances]
    assert len(pairs) == len(set(pairs))


def test_bundled_sample_does_not_reward_a_fixed_guess():
    """The centred quarter-area box of baseline:center wins CAcc@50 on at most half of the
    instances, and the targets' centres spread over at least 5 of the 9 cells of a 3x3 grid
    (rows and columns of a third of the image)."""
    ds = load_dataset(bundled_sample())
    hits, cells = 0, set()
    for inst in ds.instances:
        w, h = inst.width, inst.height
        x1, y1, x2, y2 = inst.truth["box"]
        hits += cacc([w / 4, h / 4, 3 * w / 4, 3 * h / 4], [x1, y1, x2, y2], w, h, 0.5)
        cells.add((min(2, int(3 * (y1 + y2) / 2 / h)), min(2, int(3 * (x1 + x2) / 2 / w))))
    assert 100 * hits / len(ds) <= 50
    assert len(cells) >= 5


def test_bundled_sample_says_how_each_frame_was_chosen():
    root = bundled_sample()
    ids = [json.loads(x)["id"] for x in (root / "instances.jsonl").read_text().splitlines()]
    review = [json.loads(x) for x in (root / "review.jsonl").read_text().splitlines()]
    assert [r["id"] for r in review] == ids
    assert all(r["frame"]["rule"] == FRAME_RULE and 0 <= r["frame"]["index"] < r["frame"]["n"]
               for r in review)
    funnel = json.loads((root / "build.json").read_text())
    assert funnel["kept"] == len(ids) and funnel["frame_rule"] == FRAME_RULE


@pytest.mark.slow
def test_first_room_rebuilds_to_the_shipped_instances(tmp_path):
    write_rooms(tmp_path / "scans", n_rooms=1, seed=SAMPLE_ROOMS["seed"],
                size=SAMPLE_ROOMS["size"], workers=1)
    build(tmp_path / "scans", tmp_path / "out", progress=False)
    rebuilt = [json.loads(x) for x in (tmp_path / "out" / "instances.jsonl").read_text().splitlines()]
    shipped = [json.loads(x) for x in (bundled_sample() / "instances.jsonl").read_text().splitlines()
               if json.loads(x)["meta"]["visit"] == "100000"]
    assert rebuilt and [(r["id"], r["instruction"], r["box"]) for r in rebuilt] == \
        [(r["id"], r["instruction"], r["box"]) for r in shipped]
