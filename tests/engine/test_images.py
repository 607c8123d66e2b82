"""Hostile images: a decompression bomb, a configurable pixel limit, empty and undecodable
files, and images outside the dataset's folder (``../``, absolute, a symlink out), each one
line naming the file (``engine/images.py``, ``evals/scenefunri/data/dataset.py``)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from unseen.engine.images import ImageError, load_image, open_image
from unseen.evals.scenefunri import DatasetError, load_dataset


def bomb_png(path: Path, width: int = 20000, height: int = 20000) -> Path:
    """A valid 1-bit PNG of ``width`` x ``height`` (400 MP by default) in a few kB: the
    PNG format (RFC 2083: signature, IHDR, IDAT of filtered zlib rows, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte 0, then the packed bits
    z = zlib.compressobj(9)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat)
                     + chunk(b"IEND", b""))
    return path


def dataset(folder: Path, image: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    line = {"id": "a", "image": image, "instruction": "Open it", "box": [1, 2, 10, 20]}
    (folder / "instances.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return folder


def one_error_line(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert lines[0].startswith("error:")
    return lines[0]


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return bomb_png(tmp_path_factory.mktemp("bomb") / "bomb.png")


def test_a_20000_square_png_in_a_dataset_is_one_line_naming_it(tmp_path, bomb, run_main):
    """The issue: a DecompressionBombError traceback."""
    folder = dataset(tmp_path / "d", "big.png")
    (folder / "big.png").write_bytes(bomb.read_bytes())
    code, _, err = run_main(["run", "--data", str(folder), "-s", "direct", "--out",
                             str(tmp_path / "r"), "-q", "--no-cache"])
    line = one_error_line(code, err)
    assert "big.png" in line and "pixels" in line and "UNSEEN_MAX_IMAGE_PIXELS" in line


def test_the_pixel_limit_is_configurable(tmp_path, monkeypatch):
    Image.new("RGB", (100, 50), (1, 2, 3)).save(tmp_path / "a.png")
    folder = dataset(tmp_path, "a.png")
    monkeypatch.setenv("UNSEEN_MAX_IMAGE_PIXELS", "4999")
    with pytest.raises(DatasetError, match=r"100x50 is 5,000 pixels, over the limit of 4,999"):
        load_dataset(folder)
    monkeypatch.setenv("UNSEEN_MAX_IMAGE_PIXELS", "5000")
    assert load_dataset(folder).instances[0].width == 100


def test_a_limit_above_pillows_own_guard_is_honoured(tmp_path, bomb, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)  # restored after
    with open_image(bomb, limit=400_000_000) as im:
        assert im.size == (20000, 20000)  # header only: nothing decoded
    with pytest.raises(ImageError, match="over the limit of 399,999,999"):
        open_image(bomb, limit=399_999_999)


@pytest.mark.parametrize("content, why", [
    (b"", "an empty file"),
    (b"GIF89a not really", "not a readable image"),
])
def test_empty_or_undecodable_files_name_the_file(tmp_path, content, why):
    path = tmp_path / "x.png"
    path.write_bytes(content)
    with pytest.raises(ImageError, match=why) as info:
        open_image(path)
    assert str(path) in str(info.value)


def test_a_truncated_image_fails_on_decoding_with_its_name(tmp_path):
    path = tmp_path / "cut.png"
    Image.effect_noise((64, 64), 50).convert("RGB").save(path)
    path.write_bytes(path.read_bytes()[:300])
    with open_image(path) as im:  # the header is intact
        assert im.size == (64, 64)
    with pytest.raises(ImageError, match="cannot be decoded") as info:
        load_image(path)
    assert str(path) in str(info.value)


def test_a_truncated_image_in_a_dataset_is_refused_when_it_loads(tmp_path):
    """The issue: only the header was read, so a truncated image passed the dataset check
    and failed every call (``image file is truncated``, retried on every rerun)."""
    folder = tmp_path / "d"
    folder.mkdir()
    Image.effect_noise((64, 64), 50).convert("RGB").save(folder / "cut.png")
    (folder / "cut.png").write_bytes((folder / "cut.png").read_bytes()[:300])
    dataset(folder, "cut.png")
    with pytest.raises(DatasetError, match=r"instances.jsonl:1: .*cut.png.*truncated"):
        load_dataset(folder)


def test_each_image_is_decoded_once_then_known_by_its_digest(tmp_path, monkeypatch):
    from unseen.engine import decoded as memo

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(memo, "_SEEN", set())
    folder = tmp_path / "d"
    folder.mkdir()
    Image.effect_noise((64, 64), 50).convert("RGB").save(folder / "ok.png")
    dataset(folder, "ok.png")
    decoded = []
    real = memo.open_image
    monkeypatch.setattr(memo, "open_image", lambda p, *a: decoded.append(p) or real(p, *a))
    load_dataset(folder)
    assert len(decoded) == 1
    memo._known.cache_clear()  # as a new process would start: from the file
    memo._SEEN.clear()
    load_dataset(folder)
    assert len(decoded) == 1
    (folder / "ok.png").write_bytes((folder / "ok.png").read_bytes()[:300])  # new bytes
    with pytest.raises(DatasetError, match="truncated"):
        load_dataset(folder)


def _outside(tmp_path: Path, how: str) -> str:
    secret = tmp_path / "private" / "photo.png"
    secret.parent.mkdir()
    Image.new("RGB", (64, 48)).save(secret)
    if how == "parent":
        return "../private/photo.png"
    if how == "absolute":
        return str(secret)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "link.png").symlink_to(secret)
    return "link.png"


@pytest.mark.parametrize("how", ["parent", "absolute", "symlink"])
def test_an_image_outside_the_dataset_folder_is_refused_unless_allowed(tmp_path, how,
                                                                       run_main):
    """The issue: a path outside the dataset folder was read and would be sent to a
    provider."""
    folder = dataset(tmp_path / "d", _outside(tmp_path, how))
    argv = ["run", "--data", str(folder), "-s", "direct", "-q", "--no-cache"]
    code, _, err = run_main([*argv, "--out", str(tmp_path / "r1")])
    line = one_error_line(code, err)
    assert "outside the dataset folder" in line and "--allow-outside-images" in line
    assert not (tmp_path / "r1" / "trajectories.jsonl").exists()
    code, _, err = run_main([*argv, "--out", str(tmp_path / "r2"), "--allow-outside-images"])
    assert code == 0, err


def test_a_symlink_inside_the_folder_is_fine(tmp_path):
    folder = tmp_path / "d"
    (folder / "img").mkdir(parents=True)
    Image.new("RGB", (64, 48)).save(folder / "img" / "real.png")
    (folder / "alias.png").symlink_to(folder / "img" / "real.png")
    dataset(folder, "alias.png")
    assert load_dataset(folder).instances[0].height == 48


def test_show_png_of_a_run_whose_image_became_a_bomb_is_one_line(tmp_path, bomb, run_main,
                                                                  sample_data):
    run_dir = tmp_path / "r"
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "--limit", "1",
                             "--out", str(run_dir), "-q", "--no-cache"])
    assert code == 0, err
    rec = json.loads((run_dir / "trajectories.jsonl").read_text().splitlines()[0])
    rec["steps"][0]["images"][0]["path"] = str(bomb)
    (run_dir / "trajectories.jsonl").write_text(json.dumps(rec) + "\n")
    code, _, err = run_main(["show", str(run_dir), rec["instance_id"], "--png",
                             str(tmp_path / "s.png")])
    assert str(bomb) in one_error_line(code, err)


def test_an_image_is_encoded_once_while_its_file_is_unchanged(tmp_path, monkeypatch):
    """Every call with the same image sends the same data URL, base64-encoded once; a
    changed file is encoded anew."""
    import base64
    import os

    from unseen.engine import images
    from unseen.engine.types import ImagePart

    path = tmp_path / "a.png"
    Image.new("RGB", (8, 6), "red").save(path)
    encoded: list[int] = []
    real = base64.b64encode

    def counting(data: bytes) -> bytes:
        encoded.append(len(data))
        return real(data)

    monkeypatch.setattr(images.base64, "b64encode", counting)
    part = ImagePart(path=str(path))
    first = images.data_url(part)
    assert images.data_url(ImagePart(path=str(path))) == first and len(encoded) == 1
    assert first == "data:image/png;base64," + real(path.read_bytes()).decode()
    Image.new("RGB", (8, 6), "blue").save(path)
    os.utime(path, ns=(1, 1))  # a new time, whatever the clock's resolution
    assert images.data_url(part) == "data:image/png;base64," + real(path.read_bytes()).decode()
    assert len(encoded) == 2
