"""Tables at 80 and 120 columns: no line wider than the terminal, no label broken mid-word
(``evals/table_fit.py``; the SceneFunRI comparison, the paper's layouts, the Director analysis).

The issue: at 80 columns ``direct:prompt=both`` wrapped as ``direct:prom`` / ``pt=both`` and
``director analyze`` wrapped its comparison column over 4-6 lines.
"""

from __future__ import annotations

import io
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

import unseen
from unseen.evals.director.analysis.analyze import analyze
from unseen.evals.director.analysis.tables import render as render_director
from unseen.evals.director.study.design import Design
from unseen.evals.scenefunri import render, summarize
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.evals.scenefunri.report.paper import paper_rows
from unseen.evals.table_fit import Label, fit, fold, longest_piece, measure, pieces

WIDTHS = (80, 120)

# --- folding --------------------------------------------------------------------------------


def test_fold_breaks_after_parameters_worked_by_hand():
    assert fold("direct:prompt=both", 12) == ["direct:", "prompt=both"]
    assert fold("spoe:T=6,share=0.6", 10) == ["spoe:T=6,", "share=0.6"]
    assert fold("Qwen/Qwen3-VL-8B-Instruct", 20) == ["Qwen/", "Qwen3-VL-8B-Instruct"]
    assert fold("move+combined", 8) == ["move+", "combined"]
    assert fold("hidden block not the largest digit", 14) == [
        "hidden block", "not the", "largest digit"]
    # a piece wider than the column breaks after a hyphen, then anywhere
    assert fold("Qwen3-VL-8B-Instruct", 12) == ["Qwen3-VL-8B-", "Instruct"]
    assert fold("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert Label("direct:prompt=both", 2, 4).show(15) == "  direct:\n    prompt=both"


labels = st.text(alphabet="ab=:,/+ -_0", min_size=1, max_size=40)


@given(labels, st.integers(min_value=1, max_value=50))
def test_fold_keeps_every_character_and_the_width(label, width):
    lines = fold(label, width)
    assert all(len(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == label.replace(" ", "")


@given(labels, st.integers(min_value=0, max_value=20))
def test_fold_breaks_no_piece_where_the_longest_fits(label, extra):
    width = longest_piece(label) + extra
    if width == 0:
        return
    lines = fold(label, width)
    for piece in pieces(label):
        if piece.strip():
            assert any(piece.strip() in line for line in lines), (piece, lines)


def test_fit_leaves_out_the_first_columns_then_folds_then_the_last():
    from rich.table import Table

    def build(label_width, left_out):
        t = Table()
        t.add_column("label", no_wrap=True, width=label_width)
        for name in ("a", "b", "c"):
            if name not in left_out:
                t.add_column(name, no_wrap=True)
        t.add_row(Label("direct:prompt=common").show(label_width),
                  *(("x" * 10) for name in "abc" if name not in left_out))
        return t

    full = measure(build(None, []))
    assert fit(build, [Label("direct:prompt=common")], full, ["a"], ["b"])[1] == []
    assert fit(build, [Label("direct:prompt=common")], full - 1, ["a"], ["b"])[1] == ["a"]
    # without a: the label folds before b goes
    table, left = fit(build, [Label("direct:prompt=common")], full - 14, ["a"], ["b"])
    assert left == ["a"] and measure(table) <= full - 14
    table, left = fit(build, [Label("direct:prompt=common")], full - 30, ["a"], ["b"])
    assert left == ["a", "b"]


# --- what the tables show ----------------------------------------------------------------------


def shown(renderable, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def assert_fits(text: str, width: int, names) -> None:
    """No line wider than ``width``; every piece of every name whole on some line."""
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    for name in names:
        for piece in pieces(name):
            assert not piece.strip() or any(piece.strip() in line for line in lines), (name, piece)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("width")
    data = write_test_set(root / "data")
    strategies = ["direct", "direct:prompt=common", "direct:prompt=both", "cot-sr",
                  "spoe:T=6,share=0.6,finish=direct"]
    return unseen.run(data, strategies, ["sim", "sim:flat,skill=0.9"], out=root / "run",
                      cache=False, progress=False, limit=6).run_dir


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("baseline", [None, "direct"])
def test_the_scenefunri_table_fits(run_dir, width, baseline):
    rows = summarize([run_dir], baseline=baseline)
    text = shown(render(rows, "table", width=width), width)
    assert_fits(text, width, [r["strategy"] for r in rows] + [r["model"] for r in rows])
    header = next(line for line in text.splitlines() if "model / strategy" in line)
    said = re.search(r"left out at this width: (.*); --format md has all", text)
    left_out = said.group(1).split(", ") if said else []
    for col in ("ans%", "calls", "tok i/o", "s/inst", "mIoU", "CAcc@50"):
        assert (col in header) != (col in left_out), col  # shown, or said to be left out
    if width == 120:
        assert "spoe:T=6,finish=direct,share=0.6" in text  # room enough: whole


@pytest.mark.parametrize("width", WIDTHS)
def test_the_cost_column_goes_with_the_other_costs(run_dir, width):
    """A table with US dollars per instance fits too: $/inst is left out after the seconds,
    tokens and calls, before answered %, and the notes say so."""
    rows = summarize([run_dir], baseline="direct")
    for r in rows:  # as a priced model's rows would be
        r.update(costed=True, cost_usd=0.00123, cost_total_usd=0.00738,
                 price={"input": 2.5, "cached_input": 1.25, "output": 10.0, "origin": "built-in",
                        "date": "2026-12-02"})
    text = shown(render(rows, "table", width=width), width)
    assert_fits(text, width, [r["strategy"] for r in rows])
    header = next(line for line in text.splitlines() if "model / strategy" in line)
    said = re.search(r"left out at this width: (.*?); --format md has all",
                     " ".join(text.split()))  # the note may wrap
    left_out = said.group(1).split(", ") if said else []
    assert ("$/inst" in header) != ("$/inst" in left_out)
    order = ["s/inst", "tok i/o", "calls", "$/inst", "ans%"]
    assert left_out[:len([c for c in order if c in left_out])] == [c for c in order
                                                                  if c in left_out]
    if "$/inst" in header:
        assert "0.00123" in text and "cost: USD per instance" in text
    if width == 80:
        assert "$/inst" in left_out


def test_at_80_columns_a_label_folds_at_its_parameters(run_dir):
    text = shown(render(summarize([run_dir], baseline="direct"), "table", width=80), 80)
    assert "prompt=common" in text and "direct:prom\n" not in text
    assert re.search(r"^ +spoe:\S* *\d", text, re.M)  # the first piece on the row's own line


@pytest.mark.parametrize("width", WIDTHS)
def test_the_paper_layouts_fit(run_dir, width):
    rows = summarize([run_dir], baseline="direct") + paper_rows()
    text = shown(render(rows, "table", width=width), width)
    assert_fits(text, width, [r["model"] for r in rows] + ["sim-flat,skill=0.9 (sim)"])
    assert "Strong-instruction prompting" in text and "Reasoning-based prompting" in text


# --- the Director analysis --------------------------------------------------------------------

CONDITIONS = ["move", "move/novis", "move/count", "mean", "mean/novis", "move+combined"]
TITLES = ["visibility question, move, hidden block not the largest digit",
          "visibility question, move: hidden-block choices the trace takes as unseen",
          "combined constraint: joint rate"]


@pytest.fixture(scope="module")
def analysis():
    design = Design.model_validate({
        "name": "wide", "sets": {"main": {"n": 30}},
        "batch": [{"name": "b", "conditions": CONDITIONS, "models": ["*"]}],
        "comparison": [
            {"batch": "b", "base": "move/novis", "variant": "move", "measure": "hidden",
             "family": "f", "label": TITLES[0]},
            {"batch": "b", "base": "move", "variant": "move+combined", "measure": "dv",
             "family": "f", "label": TITLES[1]},
            {"batch": "b", "base": "mean", "variant": "mean/novis", "measure": "joint",
             "label": TITLES[2], "margin": True}]})
    rng = random.Random(0)
    rows = []
    for model in ("sim-default", "Qwen/Qwen3.8-27B-Instruct"):
        for cond in CONDITIONS:
            for scene in range(30):
                rows.append({"model": model, "backend": "sim", "batch": "b", "condition": cond,
                             "set": "main", "scene": f"main-{scene:03d}", "sample": 0,
                             "answered": True, "error": None, "hidden_top_digit": 0.0,
                             "apparent_flag": 0.0, "hidden": float(rng.random() < 0.4),
                             "dv": float(rng.random() < 0.5), "joint": float(rng.random() < 0.3),
                             "ldv": float(rng.random() < 0.2)})
    return analyze(rows, design, n_boot=200, seed=0)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_director_tables_fit(analysis, width):
    text = shown(render_director(analysis, "table", width=width), width)
    assert_fits(text, width, [*CONDITIONS, *TITLES, "Qwen/Qwen3.8-27B-Instruct", "hidden", "LDV"])
    for cond in CONDITIONS:  # every condition has its column, in one table or another
        assert re.search(rf"(^| ){re.escape(cond.split('+')[0].split('/')[0])}", text, re.M)


def test_at_80_columns_a_comparison_title_takes_at_most_two_lines(analysis):
    text = shown(render_director(analysis, "table", width=80), 80)
    lines = text.splitlines()
    for title in TITLES:
        first = next(i for i, line in enumerate(lines) if line.strip().startswith(title[:20]))
        title_lines = 1
        while not lines[first + title_lines].startswith("   "):  # the model rows are indented
            title_lines += 1
        assert title_lines <= 2, lines[first:first + title_lines]
    assert "left out" in text and "scenes" in text.split("left out")[-1]
    md = render_director(analysis, "md")
    assert all(t in md for t in TITLES) and "| method | n | scenes |" in md
