"""The views package (issue 17): a benchmark's views by entry point, the generic views that show
a benchmark without any (a third benchmark in show, tui, export and compare with no edit to
unseen/), strategy filters that match with or without default parameters, who answered named
by one function, and a run directory written by main before the views package (it opens in
every view)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image
from rich.console import Console
from third_benchmark import Pointing

import unseen
from unseen.engine import benchmark as benchmarks
from unseen.engine.rundir import Head, RunDir, RunDirError, kind_of, who
from unseen.views import BenchmarkViews, Filters, register, views_for
from unseen.views.common import value_text
from unseen.views.generic import GenericViews
from unseen.views.select import NoMatch, find_instance, strategy_matcher
from unseen.views.show import show_instance, show_summary, write_strip
from unseen.views.steps import parsed_text

MAIN_RUN = Path(__file__).parent / "data" / "main_run"


def recorder(width: int = 120) -> Console:
    return Console(record=True, width=width, file=io.StringIO(), color_system=None)


def flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


# --- the registry --------------------------------------------------------------------------


def test_the_built_in_views_register_by_entry_point():
    assert views_for("scenefunri").title == "SceneFunRI"
    assert views_for("director").title == "Director"
    assert views_for("director-coding").title == "Director coding"
    for name in ("scenefunri", "director", "director-coding", "no-such-benchmark"):
        assert isinstance(views_for(name), BenchmarkViews)  # the protocol, at run time
    generic = views_for("no-such-benchmark")
    assert isinstance(generic, GenericViews) and generic.title == "no-such-benchmark"


def test_views_that_leave_a_method_out_get_the_generic_one(tmp_path):
    class Partial:
        title = "partial"

        def outcome(self, head: Head) -> str:
            return "correct"

    register("partial-test", Partial())
    views = views_for("partial-test")
    assert views.title == "partial"
    assert callable(views.compare) and callable(views.tui)  # the generic ones
    # the generic TUI rows take the partial views' own verdict
    head = Head("k", "i", "m", "s", "b", 0, "unanswered", False, {}, {}, None, "parse", "",
                0, 1)
    assert views.tui(RunDir(tmp_path)).row(head, 0).outcome == "correct"
    # and the generic sections name the run by the partial views' title, not the benchmark's
    about = views.tui(RunDir(tmp_path)).about([]).text
    assert str(about).startswith("partial run ") and "partial-test" not in str(about)


# --- a third benchmark, shown by the generic views ----------------------------------------


@pytest.fixture(scope="module")
def third(tmp_path_factory, sample_data) -> Path:
    """A run of a benchmark that registered no views (``test_benchmarks.Pointing``)."""
    benchmarks.register(Pointing(sample_data))
    out = tmp_path_factory.mktemp("third") / "r"
    unseen.run(None, ["spoe:T=2", "direct"], ["sim:oracle", "sim:noisy,unparseable=0.5"],
               benchmark="pointing-test", out=out, limit=3, cache=False, progress=False)
    return out


def test_a_third_benchmark_in_show(third):
    c = recorder()
    show_summary(c, third)
    text = c.export_text()
    assert "pointing-test run r" in text and "hit" in text and "answered %" in text
    assert "sim-oracle (sim)" in text and "SIMULATED rows marked (sim)" in text
    heads = RunDir(third).heads()
    hits = [h.metrics["hit"] for h in heads if h.model == "sim-oracle" and h.strategy == "direct"]
    assert f"{sum(hits) / len(hits):.3g}" in text  # the mean of the scorer's own metric
    c = recorder()
    show_instance(c, third, "syn-001", strategy="spoe:T=2", model="sim-oracle", images=False)
    text = flat(c.export_text())
    assert "step 1 · ask" in text and "step 0 ·" not in text and "prompt" in text and "parsed choice" in text
    assert "result" in text and "metrics hit" in text and "(SIMULATED)" in text


def test_a_third_benchmark_strip_draws_the_step_images(third, tmp_path):
    rec = next(json.loads(x) for x in (third / "trajectories.jsonl").open()
               if json.loads(x)["strategy"] == "spoe:T=2")
    layout = write_strip(third, rec["instance_id"], tmp_path / "s.png", strategy="spoe:T=2",
                         model=rec["model"])
    assert len(layout.tiles) == sum(1 for s in rec["steps"] if s.get("images"))
    assert Image.open(tmp_path / "s.png").size == (layout.width, layout.height)


def test_a_third_benchmark_in_compare_curve_and_figure(third, run_main, tmp_path):
    code, out, err = run_main(["compare", str(third), "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert {r["strategy"] for r in rows} == {"spoe:T=2", "direct"}
    direct = next(r for r in rows if r["model"] == "sim-oracle" and r["strategy"] == "direct")
    assert direct["hit"] == 1.0 and direct["n"] == 3 and direct["answered"] == 100.0
    code, out, _ = run_main(["compare", str(third), "--format", "md"])
    assert code == 0 and out.splitlines()[0].endswith("| answered % | hit |")
    for argv in (["curve", str(third)],
                 ["figure", str(third), "--instances", "syn-000", "--out", str(tmp_path / "f.png")]):
        code, _, err = run_main(argv)
        assert code == 2 and "pointing-test run" in err and err.count("\n") == 1


def test_a_third_benchmark_in_the_tui(third):
    pytest.importorskip("textual")
    import asyncio

    from textual.widgets import Static, Tree

    from unseen.views.tui import TuiApp, build_index

    index = build_index([third])
    assert len(index.entries) == 12
    for e in index.entries:  # its verdict: the scorer's 0-or-1 metric
        assert e.outcome == ("unanswered" if e.status != "answered" else
                             "correct" if e.metrics["hit"] == 1 else "wrong")

    async def drive() -> None:
        app = TuiApp(index=index)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("home", "down", "space", "down")
            node = app.query_one("#tree", Tree).cursor_node
            assert node.data[0] == "traj"
            assert str(node.label).startswith(("✓ syn-", "✗ syn-", "∅ syn-"))
            await pilot.press("space", "down")
            assert app.query_one("#tree", Tree).cursor_node.data[0] == "step"
            assert "prompt" in str(app.query_one("#detail", Static).content)
            assert app.image_rendered

    asyncio.run(drive())


def test_a_third_benchmark_exports(third, tmp_path, run_main):
    code, out, err = run_main(["export", str(third), "--html", str(tmp_path / "site")])
    assert code == 0, err
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<h1>pointing-test report</h1>" in html and "SIMULATED" in html
    assert 'class="summary"' in html and ">hit</th>" in html and "<script" not in html
    for src in re.findall(r'src="(img/[^"]+)"', html):
        assert (tmp_path / "site" / src).is_file()


def test_runs_of_two_benchmarks_are_refused_in_one_line(third, run_main):
    code, _, err = run_main(["compare", str(third), str(MAIN_RUN)])
    assert code == 2 and "cannot compare" in err and "together with" in err
    assert err.count("\n") == 1


# --- filters --------------------------------------------------------------------------------


def test_a_strategy_matches_with_or_without_its_default_parameters():
    from unseen.strategies import build

    spoe = build("spoe")  # T=8 is the default: its label leaves it out
    labels = [(spoe.label, spoe.params.model_dump()),
              ("spoe:T=4", build("spoe:T=4").params.model_dump())]
    assert spoe.label == "spoe"
    assert strategy_matcher("spoe:T=8", labels)(*labels[0])  # the label, defaults written out
    assert not strategy_matcher("spoe:T=8", labels)(*labels[1])
    assert strategy_matcher("spoe:T=4.0", labels)(*labels[1])  # read as the model reads it
    assert strategy_matcher("spoe", labels)(*labels[0])  # exactly plain spoe, when some is
    assert not strategy_matcher("spoe", labels)(*labels[1])
    only4 = labels[1:]
    assert strategy_matcher("spoe", only4)(*only4[0])  # else by name
    assert not strategy_matcher("spoe:T=3", only4)(*only4[0])


def test_an_instance_by_any_unique_part_of_its_id():
    ids = ["100000-091091fe-c6de", "100000-2071ae17-918d", "100000-2071ae17-0000"]
    assert find_instance(ids, "…c6de", "r") == "100000-091091fe-c6de"
    assert find_instance(ids, "918d", "r") == "100000-2071ae17-918d"
    with pytest.raises(NoMatch, match="part of 2 instances"):
        find_instance(ids, "2071ae17", "r")
    with pytest.raises(NoMatch, match="no instance 'zz'"):
        find_instance(ids, "zz", "r")


# --- who answered, and numbers as people read them -------------------------------------------


def test_who_answered_is_named_by_one_function():
    assert kind_of("baseline:center", True) == "rule"  # a rule is no simulated respondent
    assert kind_of("human:ana", False) == "human" and kind_of("sim", True) == "sim"
    assert kind_of("openai:gpt-4o", False) == "model"
    assert who("baseline-center", "rule") == who("baseline-center", "rule", loud=True) \
        == "center (rule)"
    assert who("sim-default", "sim") == "sim-default (sim)"
    assert who("sim-default", "sim", loud=True) == "sim-default (SIMULATED)"
    assert who("ana", "human") == "ana (human)" and who("gpt-4o", "model") == "gpt-4o"


def test_confidences_and_other_numbers_print_rounded():
    step = {"parsed": {"choice": "A", "confidence": 0.9553578295668259, "note": None}}
    assert parsed_text(step, {"mode": "eliminate"}) == \
        "choice A (eliminate), confidence 0.955"
    assert value_text({"x": 1234.5678, "y": 0.000123456, "z": [1.23456, True]}) == \
        "x 1235, y 1.2e-04, z [1.23, true]"


# --- a run directory main wrote before the views package -------------------------------------


@pytest.fixture(scope="module")
def old_run(tmp_path_factory, sample_data) -> Path:
    """``tests/views/data/main_run`` with its dataset path pointed at this session's test set."""
    out = tmp_path_factory.mktemp("old") / "run"
    out.mkdir()
    for name in ("run.json", "trajectories.jsonl"):
        text = (MAIN_RUN / name).read_text(encoding="utf-8")
        (out / name).write_text(text.replace("@DATA@", str(sample_data)), encoding="utf-8")
    return out


def test_a_run_main_wrote_opens_in_show(old_run, tmp_path):
    c = recorder(120)
    show_summary(c, old_run)
    text = c.export_text()
    assert "run run · 14 trajectories" in text and "center (rule)" in text
    c = recorder(120)
    show_instance(c, old_run, "syn-000", strategy="direct", images=False)
    text = flat(c.export_text())
    # the rule says (rule) where it used to say (SIMULATED); the simulator says SIMULATED
    assert "syn-000 · center (rule) · direct · sample 0" in text
    assert "syn-000 · sim-default (SIMULATED) · direct · sample 0" in text
    assert "center (SIMULATED)" not in text
    layout = write_strip(old_run, "syn-001", tmp_path / "s.png", strategy="spoe:T=2",
                         model="sim-default")
    assert len(layout.tiles) >= 2


def test_a_run_main_wrote_opens_in_compare_tui_and_export(old_run, tmp_path, run_main):
    from unseen.views.tui import build_index

    code, out, err = run_main(["compare", str(old_run), "--format", "json"])
    assert code == 0, err
    assert {r["kind"] for r in json.loads(out)} == {"sim", "rule"}
    index = build_index([old_run])
    assert len(index.entries) == 14
    instructions = {i["instruction"] for i in index.runs[0].instances.values()}
    # rows say the instance's short id, then its instruction
    assert {e.label.partition("  ")[2] for e in index.entries} <= instructions
    assert index.read(index.entries[0])["steps"]
    code, _, err = run_main(["export", str(old_run), "--html", str(tmp_path / "site")])
    assert code == 0, err
    assert "SIMULATED" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_a_coding_run_points_at_its_study(tmp_path, run_main):
    run = tmp_path / "study" / "coding" / "main"
    run.mkdir(parents=True)
    shutil.copy(MAIN_RUN / "trajectories.jsonl", run / "trajectories.jsonl")
    config = json.loads((MAIN_RUN / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**config, "benchmark": "director-coding"}))
    for argv in (["show", str(run)], ["tui", str(run)], ["view", str(run)],
                 ["export", str(run), "--html", str(tmp_path / "h")]):
        code, _, err = run_main(argv)
        assert code == 2 and "unseen director codes" in err and err.count("\n") == 1
    with pytest.raises(RunDirError):
        views_for("director-coding").summary(RunDir(run), recorder(), Filters())
