"""Rendered Director scenes: both checkers, the records, determinism, rearranged digits."""

import json

import numpy as np
import pytest
from PIL import Image

from unseen.evals.director.scenes.layout import Block, Layout, make_layout, make_set
from unseen.evals.director.scenes.render import (
    CUBE0,
    DIGIT0,
    SceneError,
    check,
    idbuffer_counts,
    model_camera,
    render_scene,
    scene_meshes,
)
from unseen.evals.director.scenes.sets import build_set
from unseen.renderers.raster import render

SMALL = (320, 240)


def test_idbuffer_checker_agrees_with_the_key():
    for lay in make_set("main", 6, seed=3):
        counts = idbuffer_counts(lay)
        for b in lay.blocks:
            assert (counts[b.digit] > 0) == b.visible_to_director


def test_a_wrong_key_is_an_error_not_a_silent_pick():
    lay = make_layout("main", 0, 0)
    hidden = lay.hidden
    lay.blocks = [Block(b.digit, b.edge, b.center, b.yaw_deg, b.color, True) if b is hidden else b
                  for b in lay.blocks]
    lay.blocks[0].visible_to_director = False  # the key now names the wrong cube
    with pytest.raises(SceneError, match="key says visible"):
        check(lay)


def test_moving_the_partition_away_is_caught_by_both_checkers():
    lay = make_layout("main", 1, 0)
    lay.partition_center = (lay.partition_center[0] + 0.5, *lay.partition_center[1:])
    with pytest.raises(SceneError):
        check(lay)


def test_scene_set_files(tmp_path):
    path = build_set("main", tmp_path, n=3, size=SMALL, progress=False)
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["id"] for r in recs] == ["main-000", "main-001", "main-002"]
    for r in recs:
        im = Image.open(tmp_path / r["image"])
        assert im.size == SMALL
        assert {"eye", "partition", "blocks", "hidden_digit", "director_view_digit",
                "largest_digit_visible", "camera", "apparent_size_flag"} <= r.keys()
        assert np.asarray(r["camera"]["K"]).shape == (3, 3)
        assert np.asarray(r["camera"]["world_to_camera"]).shape == (4, 4)
        hidden = [b for b in r["blocks"] if not b["visible_to_director"]]
        assert len(hidden) == 1 and hidden[0]["digit"] == r["hidden_digit"]
        assert hidden[0]["edge"] == max(b["edge"] for b in r["blocks"])
        assert r["checks"]["idbuffer_px"][str(r["hidden_digit"])] == 0
        # the camera in the record projects each cube's centre into the image
        K, T = np.asarray(r["camera"]["K"]), np.asarray(r["camera"]["world_to_camera"])
        for b in r["blocks"]:
            p = T @ np.append(b["center"], 1.0)
            u, v, w = K @ p[:3]
            assert 0 <= u / w < SMALL[0] and 0 <= v / w < SMALL[1]


def test_same_scene_same_bytes(tmp_path):
    a = build_set("rotated", tmp_path / "a", n=3, size=SMALL, progress=False)
    b = build_set("rotated", tmp_path / "b", n=3, size=SMALL, progress=False)
    assert a.read_bytes() == b.read_bytes()
    for i in range(3):
        name = f"images/rotated-{i:03d}.png"
        assert (a.parent / name).read_bytes() == (b.parent / name).read_bytes()


def _pixels(lay: Layout) -> np.ndarray:
    return np.asarray(render_scene(lay, *SMALL).image).astype(int)


def test_rearranged_digits_change_only_cube_pixels():
    main = make_set("main", 4, seed=0)
    rearr = make_set("rearranged", 4, seed=0)
    for base, new in zip(main, rearr, strict=True):
        a, b = _pixels(base), _pixels(new)
        changed = (a != b).any(axis=2)
        assert changed.any()
        ids = render(scene_meshes(base), model_camera(*SMALL), ids_only=True).ids
        on_cubes = (ids >= CUBE0) & (ids < DIGIT0 + 10)
        # colour is supersampled: allow the one-pixel rim around each cube
        grown = on_cubes.copy()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                grown |= np.roll(np.roll(on_cubes, dy, 0), dx, 1)
        assert not (changed & ~grown).any()
        # drawn again with the original digits, the scene matches main pixel for pixel
        back = {nb.digit: ob.digit for ob, nb in zip(base.blocks, new.blocks, strict=True)}
        for blk in new.blocks:
            blk.digit = back[blk.digit]
        assert np.array_equal(_pixels(new), a)
