"""Loading SceneFunRI folders: every bad line reported with its number and why."""

import json

import pytest
from PIL import Image

from unseen.evals.scenefunri import DatasetError, load_dataset


@pytest.fixture
def folder(tmp_path):
    Image.new("RGB", (64, 48), (200, 200, 200)).save(tmp_path / "a.png")
    Image.new("RGB", (64, 48), (10, 20, 30)).save(tmp_path / "b.png")
    return tmp_path


def write(folder, *lines):
    (folder / "instances.jsonl").write_text("\n".join(lines) + "\n")


def line(**kw):
    base = {"id": "x", "image": "a.png", "instruction": "Open it", "box": [1, 2, 10, 20]}
    base.update(kw)
    return json.dumps(base)


def test_loads_with_size_from_image(folder):
    write(folder, line(), line(id="y", image="b.png", meta={"visit": "1"}))
    ds = load_dataset(folder)
    assert len(ds) == 2
    a = ds.instances[0]
    assert (a.width, a.height) == (64, 48)
    assert a.truth["box"] == [1, 2, 10, 20] and a.text["instruction"] == "Open it"
    assert ds.instances[1].meta == {"visit": "1"}
    assert load_dataset(folder / "instances.jsonl").fingerprint == ds.fingerprint


def test_fingerprint_follows_lines_and_image_bytes(folder):
    write(folder, line())
    fp1 = load_dataset(folder).fingerprint
    Image.new("RGB", (64, 48), (0, 0, 0)).save(folder / "a.png")
    fp2 = load_dataset(folder).fingerprint
    write(folder, line(instruction="Close it"))
    fp3 = load_dataset(folder).fingerprint
    assert len({fp1, fp2, fp3}) == 3


@pytest.mark.parametrize("bad, why", [
    ("{not json", "bad JSON"),
    (line(image="missing.png"), "image not found: missing.png"),
    (line(box=[10, 2, 1, 20]), "x1 < x2"),
    (line(box=[1, 2, 100, 20]), "outside the 64x48 image"),
    (line(box=[1, 2, 3]), "four numbers"),
    (json.dumps({"id": "x", "image": "a.png", "box": [1, 2, 3, 4]}), "missing field 'instruction'"),
    (line(id=5), "field 'id' must be a str"),
    ("[1, 2]", "must be a JSON object"),
])
def test_first_bad_line_reported(folder, bad, why):
    write(folder, line(id="ok"), bad)
    with pytest.raises(DatasetError) as info:
        load_dataset(folder)
    msg = str(info.value)
    assert ":2:" in msg and why in msg


def test_duplicate_ids_and_empty_and_missing(folder, tmp_path):
    write(folder, line(), line())
    with pytest.raises(DatasetError, match="duplicate id 'x' \\(first on line 1\\)"):
        load_dataset(folder)
    write(folder, "", "  ")
    with pytest.raises(DatasetError, match="no instances"):
        load_dataset(folder)
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(tmp_path / "nowhere")


def test_unreadable_image(folder):
    (folder / "junk.png").write_bytes(b"not an image")
    write(folder, line(image="junk.png"))
    with pytest.raises(DatasetError, match="unreadable image"):
        load_dataset(folder)


def test_find_instance_reads_one_line(folder):
    from unseen.evals.scenefunri.data.dataset import find_instance

    # the other line names a missing image: only the line asked for is validated
    write(folder, line(id="a"), line(id="b", image="gone.png"))
    inst = find_instance(folder, "a")
    assert inst.id == "a" and (inst.width, inst.height) == (64, 48)
    with pytest.raises(DatasetError, match="image not found"):
        find_instance(folder, "b")
    with pytest.raises(DatasetError, match="no instance 'zz'"):
        find_instance(folder, "zz")
