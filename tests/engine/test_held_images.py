"""What a trajectory holds (``engine/images.py``: ``HELD``, ``part_bytes``, ``prepare``;
``renderers/overlay.py``: ``_image``): one decode of each image and one encoding of each
overlay for the trajectory's life, drawn in a worker thread, the bytes sent unchanged."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from PIL import Image

import unseen.api  # noqa: F401 - registers the overlay renderer
from unseen.engine import images
from unseen.engine.types import ImagePart
from unseen.renderers import overlay

SPEC = {"boxes": [[10, 10, 60, 50], [40, 20, 90, 70]], "labels": ["A", "B"]}


@pytest.fixture
def picture(tmp_path) -> Path:
    path = tmp_path / "room.png"
    Image.effect_noise((160, 120), 40).convert("RGB").save(path)
    return path


@pytest.fixture
def counted(monkeypatch):
    """Counts of decodes (``Image.open`` in the overlay's loader) and of overlay renders,
    with the thread each render ran on."""
    counts: dict = {"decode": 0, "render": 0, "threads": set()}
    opened = overlay.Image.open
    render = images.overlay_renderer()

    def open_counted(*a, **k):
        counts["decode"] += 1
        return opened(*a, **k)

    def render_counted(path, spec):
        counts["render"] += 1
        counts["threads"].add(threading.get_ident())
        return render(path, spec)

    monkeypatch.setattr(overlay.Image, "open", open_counted)
    monkeypatch.setattr(images, "_overlay_renderer", render_counted)
    overlay._base.cache_clear()
    images._RECENT.clear()
    return counts


def test_bytes_are_the_same_held_or_not(picture, counted):
    part = ImagePart(path=str(picture), overlay=SPEC)
    plain = images.part_bytes(part)
    with images.holding():
        held = images.part_bytes(part)
        fitted = images.part_bytes(part, max_side=80)
    assert held == plain
    assert fitted == images._fitted(80, plain[1], plain[0])


def test_a_trajectory_decodes_each_image_once_and_encodes_each_overlay_once(picture,
                                                                           counted):
    """Steps with other boxes share one decode; a vote that sends the same overlay again
    reuses its bytes. More images than the old 16-entry cache held: none is decoded twice
    within the trajectory that holds it."""
    others = []
    for i in range(20):  # more than overlay._base's lru_cache keeps
        p = picture.with_name(f"other{i}.png")
        Image.new("RGB", (160, 120), (i, 0, 0)).save(p)
        others.append(p)
    with images.holding():
        for p in others:
            images.part_bytes(ImagePart(path=str(p), overlay=SPEC))
        for boxes in ([[0, 0, 50, 50]], [[50, 50, 100, 100]], [[0, 0, 50, 50]]):
            spec = {"boxes": boxes, "labels": ["A"]}
            images.part_bytes(ImagePart(path=str(picture), overlay=spec))
        for p in others:
            images.part_bytes(ImagePart(path=str(p), overlay=SPEC))
    assert counted["decode"] == 21  # 20 others and the picture, each once
    assert counted["render"] == 22  # 20 + two distinct specs on the picture


def test_trajectories_in_flight_share_and_the_last_one_out_lets_go(picture, counted):
    """Two samples of one instance running together share one decode and one encoding;
    once both have ended nothing is kept, and a later trajectory makes them again."""
    part = ImagePart(path=str(picture), overlay=SPEC)

    def kept() -> list:  # what is shared for this picture (other tests' runs may hold more)
        return [k for k in images._SHARED if str(picture) in k]

    first, second = images.holding(), images.holding()
    first.__enter__()
    images.part_bytes(part)
    outer = images.HELD.get()
    second.__enter__()
    images.part_bytes(part)
    second.__exit__(None, None, None)
    assert len(kept()) == 2, "the first trajectory still runs: its image and overlay stay"
    assert images.HELD.get() is outer
    first.__exit__(None, None, None)
    assert not kept() and images.held() is None
    assert (counted["render"], counted["decode"]) == (1, 1)
    with images.holding():
        images.part_bytes(part)
    assert (counted["render"], counted["decode"]) == (2, 2)


def test_prepare_draws_in_a_worker_thread_and_the_send_reuses_it(picture, counted):
    part = ImagePart(path=str(picture), overlay=SPEC)
    plain = ImagePart(path=str(picture))

    async def trajectory() -> tuple[bytes, int]:
        with images.holding():  # as the runner gives each trajectory
            await images.prepare([part, plain])
            return images.part_bytes(part)[0], threading.get_ident()

    data, loop_thread = asyncio.run(trajectory())
    assert counted["render"] == 1, "the send drew the overlay again"
    assert loop_thread not in counted["threads"]
    assert data == overlay.render_overlay(str(picture), SPEC)


def test_the_runner_gives_each_trajectory_its_own_store(tmp_path):
    from unseen.backends.base import BaseBackend
    from unseen.backends.reliable import Reliable
    from unseen.engine.runner import Runner
    from unseen.engine.types import Reply, RunConfig
    from unseen.evals.scenefunri import load_dataset
    from unseen.evals.scenefunri.data.sample import write_test_set
    from unseen.strategies import build

    seen: list[dict | None] = []

    class Recording(BaseBackend):
        provider, cacheable = "recording", False

        async def complete(self, request):
            seen.append(images.held())
            return Reply(text='{"box": [1, 1, 5, 5]}', finish_reason="stop")

    ds = load_dataset(write_test_set(tmp_path / "data"))
    cfg = RunConfig(run="t", benchmark="scenefunri", data="d",
                    dataset_fingerprint=ds.fingerprint, instances=2, strategies=[], backends=[],
                    package_version="t", created_at="now")
    runner = Runner(ds.instances[:2], [build("direct")],
                    [Reliable(Recording("m", box_format="pixel"), concurrency=1)],
                    tmp_path / "run", cfg, samples=2, workers=1, progress=False)
    asyncio.run(runner.run())
    assert len(seen) == 4 and all(isinstance(s, dict) for s in seen)
    assert len({id(s) for s in seen}) == 4  # one store per trajectory, none shared
