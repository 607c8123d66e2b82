"""The list of images that decoded whole (``engine/decoded.py``): beside the reply cache, never
written by a run with ``--no-cache``, and kept under its size cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from unseen.api import run
from unseen.engine import decoded


@pytest.fixture
def fresh(monkeypatch, tmp_path) -> Path:
    """A user cache folder of this test's own, and no image decoded yet in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(decoded, "_SEEN", set())
    return tmp_path / "xdg" / "unseen" / decoded.DECODED_FILE


def test_a_run_remembers_its_images_beside_the_cache_and_no_cache_writes_nothing(
        fresh, sample_data, tmp_path):
    run(sample_data, ["direct"], ["sim"], limit=2, out=tmp_path / "r1", cache=False,
        progress=False)
    assert not fresh.parent.exists()  # --no-cache: the user cache folder left alone
    decoded._SEEN.clear()
    run(sample_data, ["direct"], ["sim"], limit=2, out=tmp_path / "r2",
        cache_dir=tmp_path / "c", progress=False)
    assert not fresh.exists()  # with --cache-dir: there, beside the replies
    images = len(list((sample_data / "images").iterdir()))  # the dataset's, each once
    assert len((tmp_path / "c" / decoded.DECODED_FILE).read_text().split()) == images


def test_the_list_is_kept_under_its_cap(fresh, sample_data, tmp_path, monkeypatch):
    monkeypatch.setattr(decoded, "MAX_BYTES", 65 * 10)  # ten digests of 64 hex digits
    image = next((sample_data / "images").iterdir())
    digests = [f"{i:064x}" for i in range(40)]
    with decoded.decoded_store(tmp_path / "c"):
        for d in digests:
            decoded.check_decodes(image, d)
    kept = (tmp_path / "c" / decoded.DECODED_FILE).read_text().split()
    assert len(kept) <= 10 and kept[-1] == digests[-1] and digests[0] not in kept
