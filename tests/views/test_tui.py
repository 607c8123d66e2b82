"""``unseen tui``: the index, and the app driven headless with textual's pilot."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Static, Tree  # noqa: E402

from unseen.views.tui import TuiApp, build_index  # noqa: E402


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    import unseen
    from unseen.evals.scenefunri.data.sample import write_test_set

    tmp = tmp_path_factory.mktemp("tui")
    data = write_test_set(tmp / "d")
    unseen.run(data, ["direct", "spoe:T=3"], ["sim", "sim:noisy,unparseable=0.5"],
               out=tmp / "r", cache=False, progress=False, limit=6)
    return tmp / "r"


def _text(app: TuiApp, wid: str) -> str:
    """What a Static shows, rendered to plain text."""
    from rich.console import Console

    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    console.print(app.query_one(wid, Static).content)
    return console.export_text()


def test_index_reads_heads_and_records(run_dir):
    idx = build_index([run_dir])
    assert len(idx.entries) == 24
    assert len(idx.groups) == 4
    outcomes = {e.outcome for e in idx.entries}
    assert {"wrong", "unanswered"} <= outcomes
    e = next(e for e in idx.entries if e.iterative)
    rec = idx.read(e)
    assert rec["instance_id"] == e.instance_id and rec["steps"]


async def _goto_step(app: TuiApp, pilot) -> None:
    """Down to the first spoe trajectory of sim-default, expand it, go to its first step."""
    tree = app.query_one("#tree", Tree)
    # the first group (sim-default · direct) is on line 1, spoe on line 2
    await pilot.press("down", "down")  # run → group 1 → group 2 (spoe)
    assert tree.cursor_node.data[0] == "group" and tree.cursor_node.data[1][2] == "spoe:T=3"
    await pilot.press("space")  # expand: its trajectories
    await pilot.press("down")
    assert tree.cursor_node.data[0] == "traj"
    await pilot.press("space")  # expand: its steps
    await pilot.press("down")
    assert tree.cursor_node.data[0] == "step"
    await pilot.pause()


async def test_navigation_reaches_a_step_with_its_prompt_and_image(run_dir):
    app = TuiApp([run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("home")
        await _goto_step(app, pilot)
        detail = _text(app, "#detail")
        rec = app.index.read(app.query_one("#tree", Tree).cursor_node.data[1])
        assert "prompt" in detail
        assert rec["steps"][0]["prompt"].splitlines()[0] in detail
        assert app.image_rendered  # the step's overlay as half-blocks
        assert "▀" in _text(app, "#image")
        assert "Dist ×100 per t" in _text(app, "#curve")


async def test_outcome_and_text_filters_change_the_list(run_dir):
    app = TuiApp([run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        every = app.shown()
        assert len(every) == 24
        await pilot.press("3")  # unanswered
        unanswered = app.shown()
        assert 0 < len(unanswered) < len(every)
        assert all(e.status == "unanswered" for e in unanswered)
        await pilot.press("2")  # wrong
        assert all(e.outcome == "wrong" for e in app.shown())
        await pilot.press("0")
        assert len(app.shown()) == 24
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"syn-001")
        await pilot.pause()
        assert app.shown_instances() == {"syn-001"}
        await pilot.press("enter")  # back to the tree
        assert isinstance(app.focused, Tree)
        # the text filter also matches instructions
        inst = app.index.runs[0].instances["syn-000"]["instruction"]
        app.query_one("#filter", Input).value = inst
        await pilot.pause()
        assert "syn-000" in app.shown_instances()
        assert len(app.shown_instances()) < 6


async def test_compare_lists_every_strategy(run_dir):
    app = TuiApp([run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("home")
        await _goto_step(app, pilot)
        await pilot.press("c")
        await pilot.pause()
        cols = app.query(".col")
        assert len(cols) == 2
        text = " ".join(str(c.query_one(Static).content) for c in cols)
        assert "direct" in text and "spoe:T=3" in text
        await pilot.press("escape")
        assert not app.query_one("#compare").display


async def test_group_curve_from_curves(run_dir):
    app = TuiApp([run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("home", "down", "down")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "mean Dist ×100 per t (curves)" in _text(app, "#curve")


def test_index_of_10000_lines_is_quick(run_dir, tmp_path):
    src = (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(line) for line in src]
    out = tmp_path / "big"
    out.mkdir()
    (out / "run.json").write_text((run_dir / "run.json").read_text(encoding="utf-8"),
                                  encoding="utf-8")
    with open(out / "trajectories.jsonl", "w", encoding="utf-8") as fh:
        for i in range(10_000):
            rec = dict(recs[i % len(recs)])
            rec["key"] = f"k{i:06d}"
            rec["instance_id"] = f"{rec['instance_id']}-{i // len(recs)}"
            fh.write(json.dumps(rec) + "\n")
    idx = build_index([out])  # its speed: benchmarks/tui_open.py
    assert len(idx.entries) == 10_000
    e = idx.entries[-1]
    assert idx.read(e)["key"] == "k009999"


# --- reading well (issue 18) -----------------------------------------------------------------


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_rows_show_their_outcome_mark_short_id_and_instruction(run_dir, size):
    """At 80 columns the instruction is cut: the short id before it tells rows apart."""
    from unseen.views.scenefunri.tui import short_id

    app = TuiApp([run_dir])
    async with app.run_test(size=size) as pilot:
        await pilot.press("home", "down", "space")
        group = app.query_one("#tree", Tree).cursor_node
        instructions = {i: v["instruction"] for i, v in app.index.runs[0].instances.items()}
        for leaf in group.children:
            row = leaf.data[1]
            label = str(leaf.label)
            mark = {"correct": "✓", "wrong": "✗", "unanswered": "∅", "error": "!"}[row.outcome]
            short = short_id(row.instance_id)
            assert label.startswith(f"{mark} {short}  {instructions[row.instance_id][:20]}")
            if short != row.instance_id:  # a long id: its short part, not the whole
                assert row.instance_id not in label
        starts = [str(leaf.label)[:12] for leaf in group.children]
        assert len(set(starts)) == len(starts)  # no two rows read the same where they begin


async def test_question_mark_lists_every_key(run_dir):
    from unseen.views.tui.app import HelpScreen

    app = TuiApp([run_dir])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from rich.console import Console

        console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
        console.print(app.screen.query_one("#help", Static).content)
        text = console.export_text()
        for binding in TuiApp.BINDINGS:  # every key the app answers is in the help
            key = {"question_mark": "?", "slash": "/"}.get(binding.key, binding.key)
            assert re.search(rf"(^|\s){re.escape(key)}(\s|$)", text, re.M), key
        assert "✓ correct" in text and "∅ unanswered" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_after_a_filter_the_detail_follows_the_selection(run_dir):
    app = TuiApp([run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one("#tree", Tree)
        await pilot.press("home", "down", "space", "down")
        before = tree.cursor_node.data[1]
        title = _text(app, "#detail").splitlines()[0]
        assert before.instance_id in title and before.strategy in title
        other = next(o for o in ("correct", "wrong", "unanswered") if o != before.outcome
                     and any(e.outcome == o for e in app.index.entries))
        await pilot.press({"correct": "1", "wrong": "2", "unanswered": "3"}[other])
        await pilot.pause()
        node = tree.cursor_node
        detail = _text(app, "#detail")
        assert app._current == node.data  # what is shown is what the cursor is on
        if node.data[0] == "traj":
            assert node.data[1].outcome == other and node.data[1].instance_id in detail
        assert title not in detail  # not the trajectory shown before


@pytest.fixture(scope="module")
def long_labels(tmp_path_factory) -> Path:
    import unseen
    from unseen.evals.scenefunri.data.sample import write_test_set

    tmp = tmp_path_factory.mktemp("tui-labels")
    data = write_test_set(tmp / "d")
    unseen.run(data, ["direct:prompt=both", "spoe:T=2,mode=keep", "cot-sr", "direct"], ["sim"],
               out=tmp / "r", cache=False, progress=False, limit=2)
    return tmp / "r"


@pytest.mark.parametrize("size", [(80, 30), (120, 40)])
async def test_the_compare_view_never_wraps_inside_a_word(long_labels, size):
    from rich.console import Console

    app = TuiApp([long_labels])
    async with app.run_test(size=size) as pilot:
        await pilot.press("home", "down", "space", "down", "c")
        await pilot.pause()
        statics = [c.query_one(Static) for c in app.query(".col")]
        assert len(statics) == 4
        for static in statics:
            width = static.content_region.width
            console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
            console.print(static.content)
            lines = console.export_text().splitlines()
            words = static.content.plain.split()
            assert max(len(w) for w in words[:12]) <= width  # the heading and the outcome
            for word in words:
                if len(word) <= width:
                    assert any(word in line for line in lines), (word, width)


def test_tui_steps_are_numbered_from_one(run_dir):
    idx = build_index([run_dir])
    e = next(e for e in idx.entries if e.strategy == "spoe:T=3" and e.status == "answered")
    rec = idx.read(e)
    run = idx.runs[e.run]
    assert run.step_labels(e, rec)[0].startswith("t=1 ")
    assert run.step(e, rec, 0).text.plain.startswith("step 1 · ask · t=1")
    d = next(e for e in idx.entries if e.strategy == "direct" and e.status == "answered")
    labels = run.step_labels(d, idx.read(d))
    assert len(labels) == 1 and labels[0].startswith("step 1 ask ")
    assert run.step(d, idx.read(d), 0).text.plain.startswith("step 1 · ask")
