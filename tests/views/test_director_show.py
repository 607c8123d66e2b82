"""``unseen show`` and ``unseen tui`` on a Director Task study run: the summary per condition,
one scene turn by turn with its marks and key, the PNG, the browser, and clear errors.

One tiny study per module (4 scenes at 512x384, two samples, two models), answered by a
stand-in respondent set for the module (restored after it), so what is asserted does not
move with the simulator's director model: the right visibility report, a block drawn at
random, and no readable answer for one (scene, condition).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from helpers import key_answer, run_tiny_study, tiny_design
from PIL import Image
from rich.console import Console

from unseen.backends import sim
from unseen.evals.director.scenes.dataset import load_scenes
from unseen.views.director.marks import CHOSEN_RGB, DV_RGB, HIDDEN_RGB, marked_scene
from unseen.views.director.run import select
from unseen.views.show import show_instance, show_summary, write_strip

TINY = tiny_design(
    samples=2, seed=3, n=4,
    batches={"q": ["move", "move/novis", "move/twoturn"],
             "c": {"models": ["gpt-x"], "conditions": ["move", "move+combined"]}})
UNANSWERED = ("main-002", "move/novis")


def _answer(s, truth, rng):
    if (truth.instance, truth.condition) == UNANSWERED:
        return "I cannot tell which block."
    return key_answer(s, truth, rng)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, director_scenes) -> Path:
    before = sim.TASKS.get("director")
    sim.TASKS["director"] = _answer
    try:
        _, run = run_tiny_study(tmp_path_factory.mktemp("dshow"), TINY,
                                ["sim", "gpt-x=sim:strong"], director_scenes, cache=False)
    finally:
        if before is None:
            sim.TASKS.pop("director", None)
        else:
            sim.TASKS["director"] = before
    return run


@pytest.fixture(scope="module")
def scenes(run_dir, director_scenes):
    """The scenes the run asked (the first ones of the shared set)."""
    asked = {json.loads(line)["instance_id"] for line in (run_dir / "trajectories.jsonl").open()}
    insts, _ = load_scenes(director_scenes / "main")
    return {i.id: i for i in insts if i.id in asked}


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """No kitty announcement: half-blocks whatever terminal runs the tests."""
    for var in ("KITTY_WINDOW_ID", "TMUX", "STY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def recorder(width: int = 150) -> Console:
    return Console(record=True, width=width, force_terminal=True, color_system="truecolor",
                   file=io.StringIO())


def flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


# --- the summary ---------------------------------------------------------------------------


def test_summary_lists_each_condition_with_rates_and_failures(run_dir, scenes):
    c = recorder(170)
    show_summary(c, run_dir)
    text = c.export_text()
    lines = text.splitlines()

    def row(model: str, batch: str, cond: str) -> str:
        pat = re.compile(rf"^ {re.escape(model)}\*? +{batch} +{re.escape(cond)} ")
        found = [line for line in lines if pat.search(line)]
        assert len(found) == 1, (model, batch, cond, text)
        return found[0]

    for model, batch, cond in [("sim-default", "q", "move"), ("sim-default", "q", "move/novis"),
                               ("sim-default", "q", "move/twoturn"), ("gpt-x", "q", "move"),
                               ("gpt-x", "c", "move"), ("gpt-x", "c", "move+combined")]:
        row(model, batch, cond)
    for col in ("ans", "hidden", "dv", "acc", "joint", "failures"):
        assert f" {col} " in text
    # the reports are right: visibility accuracy 100 wherever it is asked
    assert re.search(r" 8/8 +[\d.]+ +[\d.]+ +100\.0 ", row("gpt-x", "q", "move"))
    novis = row("gpt-x", "q", "move/novis")
    assert " 6/8 " in novis and "parse 2" in novis and " — " in novis  # no report asked
    assert "*: a simulated respondent" in flat(text)
    # then the scenes, with the key from the scene folder
    for sid, inst in scenes.items():
        line = next(line for line in lines if line.startswith(f" {sid} "))
        key = inst.truth
        assert re.match(rf" {sid} +{key['hidden_digit']} +{key['director_view_digit']} ", line)
    assert "most hidden-block choices first: 4 of 4" in text


def test_summary_filters_by_condition_and_model(run_dir):
    c = recorder(170)
    show_summary(c, run_dir, strategy="move/twoturn", model="gpt-x")
    text = c.export_text()
    assert "move/twoturn" in text and "sim-default" not in text
    assert "move/novis" not in text


# --- one scene -----------------------------------------------------------------------------


def test_scene_view_has_image_prompt_parsed_report_key_and_measures(run_dir, scenes):
    c = recorder()
    show_instance(c, run_dir, "main-000", strategy="move/twoturn", model="gpt-x", sample=0)
    styled = c.export_text(styles=True, clear=False)
    text = flat(c.export_text())
    key = scenes["main-000"].truth
    rec, _ = select_one(run_dir, "main-000", "move/twoturn", "gpt-x", 0)
    block = rec["prediction"]["block"]
    assert "main-000 · gpt-x (SIMULATED) · move/twoturn · batch q · sample 0" in text
    assert "turn 1 of 2 · asks visible" in text and "turn 2 of 2 · asks block" in text
    assert "Question A: Which numbered blocks can the director see?" in text
    assert "Question B" in text and "messages 3" in text
    visible = "{" + ", ".join(map(str, sorted(key["visible_digits"]))) + "}"
    assert f"parsed visible {visible}" in text and f"parsed block {block}" in text
    assert f"report visible {visible} ✓ right" in text
    assert f"choice block {block}" in text
    assert (f"key hidden {key['hidden_digit']} · visible {visible} · director-view "
            f"{key['director_view_digit']}") in text
    assert f"■ hidden block {key['hidden_digit']}" in text
    assert f"chosen block {block}" in text
    assert re.search(r"measures hidden [✓✗] · dv [✓✗] · accuracy ✓ · joint [✓✗]", text)
    assert "▀" in styled  # the scene, as half-blocks, with the hidden block's red outline
    assert _has_red(styled)


def select_one(run_dir, scene, strategy, model, sample):
    from unseen.views.director.run import DirectorRun

    recs, note = select(DirectorRun.open(run_dir), scene, strategy=strategy, model=model,
                        sample=sample)
    assert len(recs) == 1
    return recs[0], note


def _has_red(styled: str) -> bool:
    """Some half-block cell is close to the hidden block's red (downsampling blends it)."""
    for m in re.finditer(r"[34]8;2;(\d+);(\d+);(\d+)", styled):
        r, g, b = map(int, m.groups())
        if r > 170 and g < 90 and b < 90:
            return True
    return False


def test_marks_outline_hidden_red_director_view_green_chosen_magenta(scenes):
    inst = scenes["main-001"]
    key, boxes = inst.truth, inst.meta["boxes"]
    other = next(d for d in key["digits"]
                 if d not in (key["hidden_digit"], key["director_view_digit"]))
    img = marked_scene(inst, other)
    assert img.size == (inst.width, inst.height)
    px = img.load()
    for digit, color in ((key["hidden_digit"], HIDDEN_RGB),
                         (key["director_view_digit"], DV_RGB), (other, CHOSEN_RGB)):
        x1, y1, x2, y2 = (round(v) for v in boxes[str(digit)])
        ys = range(max(0, y1) + 3, min(y2, inst.height - 1) - 3)
        assert any(px[max(0, x1), y] == color for y in ys), digit  # its left edge


def test_scene_view_without_images_and_folded(run_dir):
    c = recorder()
    show_instance(c, run_dir, "main-001", strategy="move", model="sim-default", sample=1,
                  images=False)
    text = c.export_text()
    assert "▀" not in text
    assert "more lines of the shared intro (--full)" in flat(text)
    c = recorder()
    show_instance(c, run_dir, "main-001", strategy="move", model="sim-default", sample=1,
                  images=False, full=True)
    assert "(--full)" not in c.export_text()


def test_condition_in_two_batches_keeps_the_first_and_says_so(run_dir):
    c = recorder()
    show_instance(c, run_dir, "main-000", strategy="move", model="gpt-x", sample=0,
                  images=False)
    text = flat(c.export_text())
    assert "condition move is asked in batches q, c: showing batch q" in text
    assert "--strategy director:batch=c,condition=move" in text
    assert "batch q · sample 0" in text and "batch c" not in text.split("showing")[1]
    c = recorder()
    show_instance(c, run_dir, "main-000", strategy="director:batch=c,condition=move",
                  model="gpt-x", sample=0, images=False)
    assert "move · batch c · sample 0" in flat(c.export_text())
    c = recorder()
    show_instance(c, run_dir, "main-000", strategy="batch=c,condition=move", model="gpt-x",
                  sample=0, images=False)  # the label without "director:"
    assert "move · batch c · sample 0" in flat(c.export_text())


def test_unanswered_trajectory_shows_the_parse_error(run_dir):
    c = recorder()
    show_instance(c, run_dir, UNANSWERED[0], strategy=UNANSWERED[1], model="gpt-x", sample=0,
                  images=False)
    text = flat(c.export_text())
    assert "parse:" in text and "unanswered (parse)" in text
    assert "no measure" in text


def test_bad_input_says_what_exists(run_dir):
    with pytest.raises(ValueError, match=r"no scene 'main-099' .*4 scenes, e\.g\. main-000"):
        show_instance(recorder(), run_dir, "main-099")
    with pytest.raises(ValueError, match=r"no condition or strategy 'mov' .*conditions: move, "
                                         r"move\+combined, move/novis, move/twoturn"):
        show_instance(recorder(), run_dir, "main-000", strategy="mov")
    with pytest.raises(ValueError, match=r"no model 'gpt-y' .*models: gpt-x, sim-default"):
        show_summary(recorder(), run_dir, model="gpt-y")
    with pytest.raises(ValueError, match=r"no sample 7 .*samples: 0, 1"):
        show_instance(recorder(), run_dir, "main-000", strategy="move/novis", sample=7)


def test_cli_show_errors_are_one_line(run_dir, run_main):
    code, out, err = run_main(["show", str(run_dir), "main-000", "--strategy", "nope"])
    assert code == 2 and "no condition or strategy 'nope'" in err
    code, out, err = run_main(["show", str(run_dir), "scene-x"])
    assert code == 2 and "no scene 'scene-x'" in err


def test_step_picks_a_turn_numbered_from_one(run_dir, run_main):
    base = ["show", str(run_dir), "main-000", "--strategy", "move/twoturn", "--model",
            "sim-default", "--sample", "0", "--no-images"]
    code, out, err = run_main([*base, "--step", "2"])
    assert code == 0, err
    assert "turn 2 of 2" in out and "turn 1 of 2" not in out
    for bad in ("0", "3"):
        code, out, err = run_main([*base, "--step", bad])
        assert code == 2 and err.strip() == (
            f"error: no step {bad} in this trajectory (steps, one per turn: 1-2)")


# --- PNG ---------------------------------------------------------------------------------------


def test_png_draws_the_marked_scene_and_a_text_panel(run_dir, scenes, tmp_path):
    out = tmp_path / "d.png"
    layout = write_strip(run_dir, "main-000", out, strategy="move/twoturn", model="gpt-x",
                         sample=1)
    inst = scenes["main-000"]
    with Image.open(out) as im:
        assert im.width >= inst.width and im.height >= inst.height
        assert (im.width, im.height) == (layout.width, layout.height)
        assert im.width > inst.width + 200  # the text panel
        x0, y0, w, h = layout.tiles[0]
        assert (w, h) == (inst.width, inst.height)
        x1, y1, x2, y2 = (round(v) for v in inst.meta["boxes"][str(inst.truth["hidden_digit"])])
        px = im.convert("RGB").load()
        assert any(px[x0 + x1, y0 + y] == HIDDEN_RGB for y in range(y1 + 3, y2 - 3))
    with pytest.raises(ValueError, match="--png draws one trajectory; 4 match"):
        write_strip(run_dir, "main-000", out, strategy="move/twoturn")


def test_cli_png(run_dir, run_main, tmp_path):
    out = tmp_path / "c.png"
    code, stdout, err = run_main(["show", str(run_dir), "main-003", "--strategy", "move",
                                  "--model", "sim-default", "--sample", "0", "--png", str(out)])
    assert code == 0, err
    assert out.is_file() and "wrote" in stdout


# --- tui ---------------------------------------------------------------------------------------


def _text(app, wid: str) -> str:
    from textual.widgets import Static

    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    console.print(app.query_one(wid, Static).content)
    return console.export_text()


async def test_tui_browses_a_director_run_and_filters_by_outcome(run_dir, scenes):
    pytest.importorskip("textual")
    from textual.widgets import Input, Tree

    from unseen.views.tui import TuiApp, build_index

    idx = build_index([run_dir])
    for e in idx.entries:  # correct = the director-view block
        if e.status == "answered" and e.metrics.get("dv") is not None:
            assert e.outcome == ("correct" if e.metrics["dv"] == 1 else "wrong")
    assert any(e.outcome == "unanswered" for e in idx.entries)
    app = TuiApp(index=idx)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one("#tree", Tree)
        labels = [str(n.label) for n in tree.root.children[0].children]
        assert any(lab.startswith("gpt-x (sim) · move+combined batch c") for lab in labels), labels
        await pilot.press("home", "down")  # the first group
        assert tree.cursor_node.data[0] == "group"
        assert "hidden block:" in _text(app, "#detail")
        await pilot.press("space", "down")  # its first trajectory
        node = tree.cursor_node
        assert node.data[0] == "traj"
        key = scenes[node.data[1].instance_id].truth
        detail = _text(app, "#detail")
        assert f"key hidden {key['hidden_digit']}" in detail and "measures" in detail
        assert app.image_rendered and "▀" in _text(app, "#image")
        assert f"hidden block {key['hidden_digit']}" in _text(app, "#image")
        await pilot.press("space", "down")  # its first turn
        assert tree.cursor_node.data[0] == "step"
        detail = _text(app, "#detail")
        assert "turn 1 of" in detail and "prompt" in detail and "parsed" in detail
        assert app.image_rendered
        await pilot.press("c")  # the same scene and sample under every condition
        await pilot.pause()
        assert "compare" in str(app.query_one("#status").content)
        await pilot.press("escape", "1")
        assert {e.outcome for e in app.shown()} == {"correct"}
        await pilot.press("3")
        assert {(e.instance_id, e.strategy.rsplit("=", 1)[1]) for e in app.shown()} == {
            UNANSWERED}
        await pilot.press("0")
        app.query_one("#filter", Input).value = "main-001"
        await pilot.pause()
        assert {e.instance_id for e in app.shown()} == {"main-001"}


@pytest.mark.parametrize("width", [80, 120])
def test_summary_reads_at_80_and_120_columns(run_dir, width):
    c = recorder(width)
    show_summary(c, run_dir)
    text = c.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    table = text[:text.index("scenes, most hidden-block")]
    for model, batch, cond in [("sim-default", "q", "move/novis"), ("gpt-x", "c", "move+combined")]:
        # each row on one line: nothing folded into "gpt\n-x" or "par\nse"
        assert re.search(rf"^ {re.escape(model)}\*? +{batch} +{re.escape(cond)} +\d+/\d+ ",
                         table, re.M), table
    if "failures" not in table:  # moved under the table, summed
        records = [json.loads(x) for x in (run_dir / "trajectories.jsonl").open()]
        n = sum(r["status"] != "answered" for r in records)
        assert f"unanswered, by reason: parse {n} " in " ".join(table.split())
