"""``unseen show``: half-block terminal images, the step-by-step view (recorded on a
truecolour console), ``--no-images``, ``--step``, the summary, and the PNG strip.

One small run per module: the test set's first four instances, ``direct``, ``spoe:T=4`` and
``cot-sr`` with the default simulator and a noisy one that often answers unparseably.
"""

from __future__ import annotations

import base64
import io
import json
import re

import pytest
from PIL import Image
from rich.console import Console
from rich.segment import Segment

import unseen
from unseen.evals.scenefunri.metrics import score
from unseen.renderers.strips import PRED_RGB, TRUTH_RGB
from unseen.renderers.terminal import (
    HalfBlockImage,
    KittyImage,
    cell_size,
    image_protocol,
    terminal_image,
)
from unseen.views.show import show_instance, show_summary, write_strip

TRUECOLOR = re.compile(r"\x1b\[[0-9;]*[34]8;2;")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, sample_data):
    out = tmp_path_factory.mktemp("show") / "r"
    unseen.run(sample_data, ["direct", "spoe:T=4", "cot-sr"], ["sim", "sim:noisy,unparseable=0.5"],
               out=out, cache=False, progress=False, limit=4)
    return out


@pytest.fixture(scope="module")
def records(run_dir):
    return [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def truth(instances):
    return {i.id: i for i in instances}


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """No kitty announcement: half-blocks whatever terminal runs the tests."""
    for var in ("KITTY_WINDOW_ID", "TMUX", "STY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def spoe_record(records):
    return next(r for r in records if r["strategy"] == "spoe:T=4" and r["status"] == "answered"
                and len(r["steps"]) == 4)


def recorder(width: int = 120) -> Console:
    return Console(record=True, width=width, force_terminal=True, color_system="truecolor",
                   file=io.StringIO())


def flat(text: str) -> str:
    """Exported text without panel borders, whitespace collapsed."""
    return " ".join(text.replace("│", " ").split())


# --- terminal images --------------------------------------------------------------------------


def test_half_blocks_of_a_tiny_image():
    colors = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0),
              (0, 255, 255), (255, 0, 255), (10, 20, 30), (200, 100, 50)]
    img = Image.new("RGB", (2, 4))
    img.putdata(colors)  # row-major: (x, y) = colors[2y + x]
    console = Console(width=40, force_terminal=True, color_system="truecolor", file=io.StringIO())
    lines = list(Segment.split_lines(console.render(HalfBlockImage(img, cells=2))))
    lines = [[s for s in line if s.text] for line in lines if any(s.text for s in line)]
    assert len(lines) == 2  # 4 pixel rows → 2 cell rows
    for row, line in enumerate(lines):
        assert [s.text for s in line] == ["▀", "▀"]  # every cell differs: one segment each
        for x, seg in enumerate(line):
            top, bottom = colors[2 * (2 * row) + x], colors[2 * (2 * row + 1) + x]
            assert seg.style.color.get_truecolor() == top
            assert seg.style.bgcolor.get_truecolor() == bottom
    out = io.StringIO()
    Console(file=out, width=40, force_terminal=True, color_system="truecolor").print(
        HalfBlockImage(img, cells=2))
    assert "\x1b[38;2;255;0;0;48;2;0;0;255m▀" in out.getvalue()


def test_half_blocks_merge_runs_and_keep_the_aspect():
    img = Image.new("RGB", (640, 480), (40, 80, 120))
    assert cell_size(img.size, 64) == (64, 24)
    console = Console(width=200, force_terminal=True, color_system="truecolor", file=io.StringIO())
    lines = [line for line in Segment.split_lines(console.render(HalfBlockImage(img, 64)))
             if any(s.text for s in line)]
    assert len(lines) == 24
    assert all([s.text for s in line if s.text] == ["▀" * 64] for line in lines)
    # capped by the space rich offers
    narrow = Console(width=30, force_terminal=True, color_system="truecolor", file=io.StringIO())
    lines = [line for line in Segment.split_lines(narrow.render(HalfBlockImage(img, 64)))
             if any(s.text for s in line)]
    assert sum(len(s.text) for s in lines[0]) == 30 and len(lines) == cell_size(img.size, 30)[1]


def test_kitty_only_when_announced():
    assert image_protocol({"TERM": "xterm-kitty"}) == "kitty"
    assert image_protocol({"TERM": "xterm-256color", "KITTY_WINDOW_ID": "1"}) == "kitty"
    assert image_protocol({"TERM": "xterm-256color"}) == "halfblock"
    assert image_protocol({"TERM": "tmux-256color", "KITTY_WINDOW_ID": "1", "TMUX": "x"}) == "halfblock"
    assert image_protocol({}) == "halfblock"
    assert isinstance(terminal_image(Image.new("RGB", (4, 4)), protocol="halfblock"), HalfBlockImage)

    img = Image.effect_noise((300, 200), 80).convert("RGB")  # big enough for several chunks
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=True).print(KittyImage(img, 40))
    text = out.getvalue()
    chunks = re.findall(r"\x1b_G([^;]*);([A-Za-z0-9+/=]*)\x1b\\", text)
    assert len(chunks) > 1
    assert chunks[0][0].startswith("a=T,f=100") and "c=40" in chunks[0][0]
    assert [c[0].endswith("m=1") for c in chunks] == [True] * (len(chunks) - 1) + [False]
    png = base64.b64decode("".join(c[1] for c in chunks))
    assert Image.open(io.BytesIO(png)).size == (300, 200)
    rows = cell_size(img.size, 40)[1]
    assert text.count("\n") == rows  # the blank cells the image covers


# --- the step view ----------------------------------------------------------------------------


def test_steps_with_images(run_dir, records, truth):
    rec = spoe_record(records)
    inst = truth[rec["instance_id"]]
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy=rec["strategy"],
                  model=rec["model"], sample=rec["sample"])
    ansi = console.export_text(styles=True, clear=False)
    plain = console.export_text()
    assert TRUECOLOR.search(ansi), "images on: truecolour cells expected"
    assert "▀" in plain
    assert max(len(line) for line in plain.splitlines()) <= 120
    for s in rec["steps"]:
        assert f"step {s['index'] + 1} · {s['name']}" in plain  # numbered from 1
        assert s["prompt"].splitlines()[0] in plain
        assert f"choice {s['parsed']['choice']}" in plain
        region = "[" + ", ".join(f"{v:.0f}" for v in s["region"]) + "]"
        assert region in plain
        m = score(s["region"], inst.truth["box"], inst.width, inst.height)
        assert f"IoU {100 * m['iou']:.1f}  Dist {100 * m['dist']:.1f}" in plain
    assert "result" in plain and "SIMULATED" in plain
    pred = "[" + ", ".join(f"{v:.0f}" for v in rec["prediction"]) + "]"
    assert pred in plain


def test_no_images_full_prompts(run_dir, records):
    rec = spoe_record(records)
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy=rec["strategy"],
                  model=rec["model"], sample=rec["sample"], images=False, full=True)
    ansi = console.export_text(styles=True, clear=False)
    assert not TRUECOLOR.search(ansi) and "▀" not in ansi
    text = flat(console.export_text())
    for s in rec["steps"]:
        assert " ".join(s["prompt"].split()) in text
    assert "more line" not in text  # nothing folded


def test_prompt_folds_without_full(run_dir, records):
    rec = next(r for r in records if r["strategy"] == "cot-sr" and r["status"] == "answered")
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy="cot-sr", model=rec["model"],
                  images=False)
    assert "more lines (--full)" in console.export_text()


def test_one_step(run_dir, records):
    rec = spoe_record(records)
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy=rec["strategy"],
                  model=rec["model"], sample=rec["sample"], step=2)
    plain = console.export_text(clear=False)
    assert "step 2 · ask" in plain
    for other in (0, 1, 3):
        assert f"step {other} ·" not in plain
    assert "result" not in plain
    assert TRUECOLOR.search(console.export_text(styles=True))
    with pytest.raises(ValueError, match="no step 9"):
        show_instance(recorder(), run_dir, rec["instance_id"], strategy=rec["strategy"],
                      model=rec["model"], step=9)


def test_unanswered_shows_the_error(run_dir, records):
    rec = next(r for r in records if r["status"] == "unanswered")
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy=rec["strategy"],
                  model=rec["model"], sample=rec["sample"], images=False)
    text = flat(console.export_text())
    assert f"unanswered ({rec['error']['kind']})" in text
    assert " ".join(rec["error"]["message"].split()) in text
    assert "prediction none" in text


def test_filters_and_unknowns(run_dir, records):
    rec = spoe_record(records)
    console = recorder()
    # a strategy name matches its labels; without filters every trajectory is shown
    show_instance(console, run_dir, rec["instance_id"], strategy="spoe", images=False)
    plain = console.export_text()
    assert plain.count("· spoe:T=4 · sample") == sum(
        1 for r in records if r["instance_id"] == rec["instance_id"] and r["strategy"] == "spoe:T=4")
    with pytest.raises(ValueError, match="no instance 'nope'"):
        show_instance(recorder(), run_dir, "nope")
    with pytest.raises(ValueError, match="models: sim-default, sim-noisy"):
        show_instance(recorder(), run_dir, rec["instance_id"], model="gpt")


def test_summary_lists_instances_worst_first(run_dir, records):
    console = recorder()
    show_summary(console, run_dir)
    plain = console.export_text()
    assert "sim-default" in plain and "unanswered, by reason" in plain
    assert "✗ parse" in plain
    # worst first: the instance with the largest share of unanswered trajectories leads
    share = {}
    for inst in {r["instance_id"] for r in records}:
        rs = [r for r in records if r["instance_id"] == inst]
        share[inst] = sum(r["status"] != "answered" for r in rs) / len(rs)
    rows = [line.split("│")[1].strip() for line in plain.splitlines()
            if line.startswith("│ syn-")]
    assert share[rows[0]] == max(share.values())
    assert [share[i] for i in rows] == sorted((share[i] for i in rows), reverse=True)


# --- the PNG strip ----------------------------------------------------------------------------


def _near(img: Image.Image, box, color, tol: int = 60) -> int:
    """Pixels within ``box`` (strip pixels, inclusive) close to ``color``."""
    x1, y1, x2, y2 = (round(v) for v in box)
    n = 0
    for y in range(max(0, y1), min(img.height, y2 + 1)):
        for x in range(max(0, x1), min(img.width, x2 + 1)):
            if sum(abs(a - b) for a, b in zip(img.getpixel((x, y)), color, strict=True)) < tol:
                n += 1
    return n


def test_png_strip(run_dir, records, truth, tmp_path):
    rec = spoe_record(records)
    inst = truth[rec["instance_id"]]
    out = tmp_path / "strip.png"
    layout = write_strip(run_dir, rec["instance_id"], out, strategy=rec["strategy"],
                         model=rec["model"], sample=rec["sample"])
    img = Image.open(out).convert("RGB")
    assert len(layout.tiles) == len(rec["steps"]) + 1 == 5
    # geometry: margin 8, tiles 240 px tall and as wide as the image at that height, 8 apart;
    # a title line (13 px font: 17 px line + 4) above, two caption lines (4 + 2·17) below
    tile_w = round(inst.width * 240 / inst.height)
    assert img.size == (layout.width, layout.height)
    assert layout.width == 2 * 8 + 5 * tile_w + 4 * 8
    assert layout.height == 2 * 8 + 21 + 240 + 38
    assert [t[2:] for t in layout.tiles] == [(tile_w, 240)] * 5
    assert [t[0] for t in layout.tiles] == [8 + i * (tile_w + 8) for i in range(5)]
    # the last tile: the prediction in red, the truth in green, where their boxes are
    last = len(layout.tiles) - 1
    p1 = layout.to_png(last, *rec["prediction"][:2])
    p2 = layout.to_png(last, *rec["prediction"][2:])
    g1 = layout.to_png(last, *inst.truth["box"][:2])
    g2 = layout.to_png(last, *inst.truth["box"][2:])
    assert _near(img, (p1[0] - 2, p1[1] - 2, p2[0] + 2, p2[1] + 2), PRED_RGB) > 10
    assert _near(img, (g1[0] - 2, g1[1] - 2, g2[0] + 2, g2[1] + 2), TRUTH_RGB) > 3
    # the step tiles show the overlays the model saw (label A's red tag, B's blue one)
    x0, y0, w, h = layout.tiles[0]
    assert _near(img, (x0, y0, x0 + w - 1, y0 + h - 1), (230, 40, 40)) > 10


def test_png_strip_of_one_step_and_unanswered(run_dir, records, truth, tmp_path):
    rec = spoe_record(records)
    layout = write_strip(run_dir, rec["instance_id"], tmp_path / "one.png",
                         strategy=rec["strategy"], model=rec["model"], step=2)
    assert len(layout.tiles) == 2
    bad = next(r for r in records if r["status"] == "unanswered")
    inst = truth[bad["instance_id"]]
    out = tmp_path / "bad.png"
    layout = write_strip(run_dir, bad["instance_id"], out, strategy=bad["strategy"],
                         model=bad["model"], sample=bad["sample"])
    img = Image.open(out).convert("RGB")
    x0, y0, w, h = layout.tiles[-1]
    assert _near(img, (x0, y0, x0 + w - 1, y0 + h - 1), PRED_RGB, tol=40) == 0
    g1 = layout.to_png(len(layout.tiles) - 1, *inst.truth["box"][:2])
    g2 = layout.to_png(len(layout.tiles) - 1, *inst.truth["box"][2:])
    assert _near(img, (g1[0] - 2, g1[1] - 2, g2[0] + 2, g2[1] + 2), TRUTH_RGB) > 3
    with pytest.raises(ValueError, match="--png draws one trajectory"):
        write_strip(run_dir, bad["instance_id"], tmp_path / "x.png")


# --- through the command line -------------------------------------------------------------------


def test_cli_show_png_and_step(run_dir, records, run_main, tmp_path):
    rec = spoe_record(records)
    base = ["show", str(run_dir), rec["instance_id"], "--strategy", rec["strategy"],
            "--model", rec["model"]]
    code, out, err = run_main([*base, "--png", str(tmp_path / "s.png")])
    assert code == 0, err
    assert "5 tiles" in out and (tmp_path / "s.png").is_file()
    code, out, err = run_main([*base, "--step", "1", "--full"])
    assert code == 0, err
    assert "step 1 · ask" in out and "step 0 ·" not in out
    assert "\x1b[" not in out  # captured stdout is no terminal: no images, no colour
    code, out, err = run_main([*base, "--step", "7"])
    assert code == 2 and "no step 7" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_main(["show", str(run_dir), "--png", str(tmp_path / "t.png")])
    assert code == 2 and "INSTANCE" in err


# --- steps are numbered t = 1..T, as the paper numbers iterations ------------------------------


def test_steps_are_numbered_from_one(run_dir, records, run_main, tmp_path):
    """A one-step trajectory's step is step 1 (the journal's index 0), in the heading, for
    --step and in the strip's caption; a step that is not there is one line, exit 2."""
    one = next(r for r in records if r["strategy"] == "direct" and r["status"] == "answered")
    assert len(one["steps"]) == 1 and one["steps"][0]["index"] == 0
    base = ["show", str(run_dir), one["instance_id"], "--strategy", "direct", "--model",
            one["model"], "--sample", "0"]
    code, out, err = run_main([*base, "--step", "1"])
    assert code == 0, err
    assert "step 1 · ask" in out and "step 0 ·" not in out
    assert one["steps"][0]["prompt"].splitlines()[0] in out
    for bad in ("0", "2"):
        code, out, err = run_main([*base, "--step", bad])
        assert code == 2 and out == "", err
        assert err.strip().splitlines() == [
            f"error: no step {bad} in this trajectory (steps: 1)"]
    code, out, err = run_main([*base, "--png", str(tmp_path / "one.png"), "--step", "1"])
    assert code == 0 and "(2 tiles," in " ".join(out.split()), err
    from unseen.views.steps import strip_tiles

    assert strip_tiles(one, None, "x.png")[0].caption.startswith("step 1 ask ")
    assert strip_tiles(one, 1, "x.png")[0].caption.startswith("step 1 ask ")
    with pytest.raises(ValueError, match=r"no step 0 .*\(steps with an image: 1\)"):
        strip_tiles(one, 0, "x.png")


def test_step_headings_and_the_missing_step_line_count_from_one(run_dir, records, run_main):
    rec = spoe_record(records)
    console = recorder()
    show_instance(console, run_dir, rec["instance_id"], strategy=rec["strategy"],
                  model=rec["model"], sample=rec["sample"], images=False)
    text = console.export_text()
    for n in (1, 2, 3, 4):
        assert f"step {n} · ask · t={n}," in text
    assert "step 0 ·" not in text
    base = ["show", str(run_dir), rec["instance_id"], "--strategy", rec["strategy"],
            "--model", rec["model"], "--sample", str(rec["sample"])]
    code, out, err = run_main([*base, "--step", "5"])
    assert code == 2 and err.strip() == "error: no step 5 in this trajectory (steps: 1-4)"
    code, out, err = run_main([*base, "--step", "4"])
    assert code == 0 and "step 4 · ask · t=4" in out and "step 3 ·" not in out
