"""The bundled sample set: what it holds, and that the shipped files are what the generator
and the build pipeline make."""

import json

import numpy as np
import pytest

from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.data.build import FRAME_RULE, build
from unseen.evals.scenefunri.data.rooms import write_rooms
from unseen.evals.scenefunri.data.sample import SAMPLE_ROOMS, bundled_sample
from unseen.evals.scenefunri.metrics import cacc
from unseen.evals.scenefunri.report.dataset_card import describe


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


STEP = 20  # the grid of baseline:fixed: corners on multiples of 1/20 of width and height


def own_loso_search(ds, theta_pick):
    """An independent leave-one-scene-out search over the 5 % grid (not fixed.py's code):
    per held-out visit, the grid box with the most CAcc@``theta_pick`` hits on the other
    visits (ties: the lower mean Dist, then the order below); returns each instance's
    CAcc@75 and CAcc@50 under the box learned without its visit."""
    pairs = [(a, b) for a in range(STEP + 1) for b in range(a + 1, STEP + 1)]
    grid = np.array([(x1, y1, x2, y2) for x1, x2 in pairs for y1, y2 in pairs], float) / STEP
    insts = ds.instances
    wh = np.array([[i.width, i.height, i.width, i.height] for i in insts], float)
    gt = np.array([i.truth["box"] for i in insts], float)
    px = grid[:, None, :] * wh[None]  # (boxes, instances, 4) in pixels
    inside = ((px[..., 0] <= gt[:, 0]) & (px[..., 1] <= gt[:, 1]) & (px[..., 2] >= gt[:, 2])
              & (px[..., 3] >= gt[:, 3]))
    share = (grid[:, 2] - grid[:, 0]) * (grid[:, 3] - grid[:, 1])
    hit = {t: inside & (1 - share[:, None] > t) for t in (0.75, 0.5)}
    d = np.zeros(inside.shape)
    for i in (0, 2):
        for j in (1, 3):
            d += np.hypot((px[..., i] - gt[:, i]) / wh[:, 0], (px[..., j] - gt[:, j]) / wh[:, 1])
    d /= 4
    visit = np.array([i.meta["visit"] for i in insts])
    out = {0.75: np.zeros(len(insts)), 0.5: np.zeros(len(insts))}
    for v in np.unique(visit):
        train, test = visit != v, visit == v
        k = np.lexsort((d[:, train].mean(1), -hit[theta_pick][:, train].sum(1)))[0]
        for t in out:
            out[t][test] = hit[t][k, test]
    return {t: 100 * x.mean() for t, x in out.items()}


def test_no_fixed_box_finds_the_hidden_targets():
    """Computed here, independently of baseline:fixed's code: the best constant box learned
    leave-one-scene-out (by CAcc@50, as baseline:fixed; by CAcc@75, as an outside check
    learned it) and the centred box of baseline:center, on the bundled set; the targets'
    centres in all 9 cells of a 3x3 grid. This set: 60.0, 30.8, 27.7; the set before it
    (issue 26): fixed CAcc@50 83.1, the CAcc@75-learned box CAcc@75 32.3 (33.8 with ties
    left to grid order), center CAcc@50 29.2. Issue 26 asked for 20 and 10: out of reach
    (see the next test)."""
    ds = load_dataset(bundled_sample())
    fixed = own_loso_search(ds, 0.5)
    by75 = own_loso_search(ds, 0.75)
    card = describe(bundled_sample(), ds)
    assert fixed[0.5] == pytest.approx(card["rules"]["fixed"]["cacc50"])
    assert fixed[0.75] == pytest.approx(card["rules"]["fixed"]["cacc75"])
    assert fixed[0.5] <= 60 and fixed[0.75] <= 10
    assert by75[0.75] <= 31
    hits, cells = 0, set()
    for inst in ds.instances:
        w, h = inst.width, inst.height
        x1, y1, x2, y2 = inst.truth["box"]
        hits += cacc([w / 4, h / 4, 3 * w / 4, 3 * h / 4], [x1, y1, x2, y2], w, h, 0.5)
        cells.add((min(2, int(3 * (y1 + y2) / 2 / h)), min(2, int(3 * (x1 + x2) / 2 / w))))
    assert 100 * hits / len(ds) <= 30
    assert len(cells) == 9


def test_half_the_image_holds_half_the_small_targets():
    """Why a fixed box keeps about half: on any data, the left and the right 45 % of the
    image (boxes of the grid, under half the image: CAcc@50 hits) hold between them every
    target that does not cross the middle tenth, so the better one holds at least half of
    those, whatever the scenes look like."""
    ds = load_dataset(bundled_sample())
    left = right = across = 0
    for inst in ds.instances:
        w, h = inst.width, inst.height
        g = inst.truth["box"]
        left += cacc([0, 0, 0.45 * w, h], g, w, h, 0.5)
        right += cacc([0.55 * w, 0, w, h], g, w, h, 0.5)
        across += g[2] > 0.45 * w and g[0] < 0.55 * w
    assert left + right == len(ds) - across
    assert max(left, right) >= (len(ds) - across) / 2
    assert 100 * max(left, right) / len(ds) >= 40


THIRDS = [(0.0, 0.45), (0.275, 0.725), (0.55, 1.0)]  # each 45 % of the width: under half


def covered(inst, boxes) -> bool:
    w, h = inst.width, inst.height
    return any(cacc([a * w, b * h, c * w, d * h], inst.truth["box"], w, h, theta)
               for (a, b, c, d), theta in boxes)


def test_no_set_of_narrow_targets_keeps_a_fixed_box_under_a_third():
    """Issue 26's bound, which no regenerated set can beat (the note that marks its
    'CAcc@50 at most 20' blocked): the left, middle and right 45 % strips (full height,
    under half the image: CAcc@50 hits) hold every target narrower than 17.5 % of the width
    between them, so the best of the three holds at least a third of those; and the nine
    boxes of 45 % of the width by 50 % of the height (22.5 %: CAcc@75 hits) on the same
    columns and rows 0-0.5, 0.25-0.75, 0.5-1 hold every target narrower than 17.5 % and
    lower than 25 %, so the best holds at least a ninth (11.1 > 10)."""
    ds = load_dataset(bundled_sample())
    strips = [((a, 0.0, c, 1.0), 0.5) for a, c in THIRDS]
    cells = [((a, b, c, d), 0.75) for a, c in THIRDS for b, d in ((0, .5), (.25, .75), (.5, 1))]
    narrow = [i for i in ds.instances if i.truth["box"][2] - i.truth["box"][0] <= 0.175 * i.width]
    low = [i for i in narrow if i.truth["box"][3] - i.truth["box"][1] <= 0.25 * i.height]
    assert len(narrow) >= 0.9 * len(ds) and len(low) >= 0.9 * len(ds)  # knobs, not walls
    assert all(covered(i, strips) for i in narrow) and all(covered(i, cells) for i in low)
    best50 = max(sum(covered(i, [s]) for i in narrow) for s in strips)
    best75 = max(sum(covered(i, [c]) for i in low) for c in cells)
    assert best50 >= len(narrow) / 3 and best75 >= len(low) / 9
    assert 100 * best50 / len(ds) > 20 and 100 * best75 / len(ds) > 10


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
    # the card of a build output reports baseline:fixed (one visit: one instance left out
    # at a time)
    card = describe(tmp_path / "out")
    assert card["funnel"]["kept"] == len(rebuilt) and "fixed" in card["rules"]
    assert sum(e["folds"] for e in card["fixed_boxes"]) == len(rebuilt)
