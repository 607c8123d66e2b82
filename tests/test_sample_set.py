"""The bundled sample set: what it holds, and that the shipped files are what the generator
and the build pipeline make."""

import json

import pytest

from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.build import build
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
