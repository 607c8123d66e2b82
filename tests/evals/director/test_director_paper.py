"""`unseen director analyze RUN --paper`: the paper's tables and figures by number, from a
simulated run of the paper's own design (fewer scenes and samples, every batch, model and
comparison kept), and the verdicts that change without the apparent-size scenes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unseen.commands.director_code import run_coding
from unseen.commands.director_run import run_study
from unseen.evals.director.analysis.analyze import analyze, analyze_run
from unseen.evals.director.analysis.tables import to_dict
from unseen.evals.director.coding.report import summarize
from unseen.evals.director.paper.picks import Pick, find
from unseen.evals.director.paper.tables import layouts
from unseen.evals.director.paper.verdicts import changed
from unseen.evals.director.study.design import Design, SetSpec, load_design

N_BOOT = 200
# every table and figure the paper's text describes, by its number
NUMBERS = ["Table 2", "Table 3", "Table 4", "Table 5", "Table 6", "Table 7", "Table 8",
           "Table 9", "Table 10a", "Table 10b", "Table 10c", "Table 10d", "Table 11", "Table 12",
           "Table 13", "Figure 3", "Figure 4", "Figure 5", "Figure 6", "Figure 7a", "Figure 7b"]
OPEN = ("Qwen3.8-27B", "Muse-Glimmer-30B")


def small_paper() -> Design:
    """The paper's design with 6 scenes per set (3 rotated) and one sample: the same
    batches, models and comparisons."""
    d = load_design("paper")
    return d.model_copy(update={"samples": 1, "size": "512x384",
                                "sets": {"main": SetSpec(n=6), "rotated": SetSpec(n=3),
                                         "rearranged": SetSpec(n=6)}})


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory) -> Path:
    d = small_paper()
    run_dir = tmp_path_factory.mktemp("paper") / "run"
    # every model of the paper answered by the simulator, each on its own seed
    backends = [f"{m}=sim:director-strong,seed={i}" for i, m in enumerate(d.named_models())]
    run_study(d, backends, run_dir, cache=False, progress=False)
    run_coding(run_dir, "sim", models=OPEN, batches_=["r01-question"], tests=4, repeats=4,
               cache=False, progress=False)
    return run_dir


@pytest.mark.slow
def test_a_simulated_paper_run_gives_every_numbered_table_and_figure(paper_run, run_main,
                                                                     tmp_path):
    figs = tmp_path / "figs"
    code, out, err = run_main(["director", "analyze", str(paper_run), "--paper", "--format",
                               "json", "--n-boot", str(N_BOOT), "--plots", str(figs)])
    assert code == 0, err
    data = json.loads(out)
    by = {x["number"]: x for x in data["layouts"]}
    assert list(by) == NUMBERS
    for number in NUMBERS:
        assert by[number]["rows"], number  # each filled from the run, none empty
        assert any("Layout ours" in n for n in by[number]["notes"]), number
    # simulated replies are marked as such: the heading and every model's name
    assert data["heading"][1].startswith("SIMULATED") and len(data["simulated"]) == 10
    assert all(r[0].endswith(" (sim)") for r in by["Figure 3"]["rows"])
    # Figures 3-7 as PNGs (4, 5 and 7a among them), read back
    for name in ("figure3", "figure4", "figure5", "figure6", "figure7a", "figure7b"):
        png = (figs / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, name
        assert f"wrote {figs / name}.png" in err

    analysis = analyze_run(paper_run, n_boot=N_BOOT)
    flat = to_dict(analysis)
    # Table 2's cell is the analysis's own change of the same comparison (row 12)
    terra = next(c for c in flat["changes"] if c["label"] == "Table 2: visibility question, move"
                 and c["model"] == "gpt-5.6-terra")
    t2 = by["Table 2"]
    cell = t2["rows"][0][t2["columns"].index("gpt-5.6-terra (sim)")]
    assert cell.startswith(f"{terra['diff'] * 100:+.1f} [") or cell.startswith(
        f"{terra['diff'] * 100:.1f} [")
    # grok-4.6 answers no move/novis in row 1: Figure 3 takes its change from row 2, as §4 does
    grok = find(analysis, Pick("move/novis", "move"), "grok-4.6")
    assert grok.comparison.batch == "r02-count"
    assert any(r[0] == "grok-4.6 (sim)" and r[-1] == "r02-count" for r in by["Figure 3"]["rows"])
    # Table 11 counts the main coding pass; Figure 5 its readings, for the two open models
    coding = summarize(paper_run)
    assert len(by["Table 11"]["rows"]) == len(coding["readings"]) == 6
    assert {r[0] for r in by["Figure 5"]["rows"]} == {f"{m} (sim)" for m in OPEN}
    # the families of Appendix C over the run's models, every member estimated (s5's trace
    # comparisons too: the open models' traces are coded)
    fams = flat["families"]
    assert {g: (v["estimated"], v["asked"]) for g, v in fams.items() if g in ("s4", "s5", "s6")} \
        == {"s4": (72, 72), "s5": (42, 42), "s6": (39, 39)}


@pytest.mark.slow
def test_the_numbered_tables_fit_the_terminal(paper_run):
    from rich.console import Console

    from unseen.evals.director.paper.tables import _apart, plan, render

    a = analyze_run(paper_run, n_boot=N_BOOT)
    lays = layouts(a, summarize(paper_run))
    for width in (80, 120):
        console = Console(width=width, record=True)
        console.print(render(a, lays, "table", width=width))
        out = console.export_text()
        assert max(len(line) for line in out.splitlines()) <= width
        for number in NUMBERS:
            assert f"{number}. " in out, number
        assert "SIMULATED: the replies of" in out
        assert ("Table 13 (continued)" in out) == (width == 80)  # a grid too wide goes on
        # no cell breaks mid-way: an interval keeps both its ends on one line, and every
        # cell of the layouts appears whole in the text
        for line in out.splitlines():
            assert line.count("[") == line.count("]"), line
        # (a margin verdict, then an estimate, may go on the line under its interval, where
        # that saves a part)
        cells = {p for x in lays for r in x.rows for c in r[1:] if c for p in _apart(c, 2)}
        assert all(c in out for c in cells), [c for c in cells if c not in out][:3]
        for x in lays:  # the parts share the columns evenly: none lone beside two
            data = [len(c) - 1 for c in plan(x, width)[2]]
            assert max(data) - min(data) <= 1, (x.number, width, data)
        if width == 80:  # Table 5's five columns in two parts (3 + 2), not three (2 + 2 + 1)
            assert out.count("Table 5 (continued)") == 1
            table5 = out[out.index("Table 5. "):out.index("Table 6. ")]
            assert "Muse-Glimmer-30B (sim)" in table5  # labels whole where there is room


@pytest.mark.slow
def test_md_latex_and_drop_apparent(paper_run, run_main, tmp_path):
    from unseen.evals.director.paper.tables import render
    from unseen.evals.director.paper.verdicts import render as render_verdicts

    full = analyze_run(paper_run, n_boot=N_BOOT)
    lays = layouts(full, summarize(paper_run))
    md = render(full, lays, "md")
    assert "### Table 10d." in md and "**SIMULATED" in md and "| gpt-6-luna (sim) |" in md
    latex = render(full, lays, "latex")
    assert r"\textbf{SIMULATED}" in latex and "% Table 13." in latex and "‡" not in latex
    # --drop-apparent: the tables without the flagged scenes, and the verdicts that changed
    code, out, err = run_main(["director", "analyze", str(paper_run), "--paper", "--n-boot",
                               str(N_BOOT), "--plots", str(tmp_path), "--format", "json",
                               "--drop-apparent"])
    assert code == 0, err
    data = json.loads(out)
    assert "apparent-size flag left out" in data["heading"][0]
    part = analyze_run(paper_run, n_boot=N_BOOT, drop_apparent=True)
    assert data["verdicts_changed"] == changed(full, part)
    assert render_verdicts(changed(full, part), "md").startswith(
        "### Verdicts that change without the apparent-size scenes")


# --- without a run ------------------------------------------------------------------------------


def _row(model, condition, scene, batch="b", **measures):
    return {"model": model, "backend": "sim", "batch": batch, "condition": condition,
            "set": "main", "scene": f"main-{scene:03d}", "sample": 0, "answered": True,
            "error": None, "hidden_top_digit": 0.0, "apparent_flag": float(scene >= 6),
            **measures}


def test_verdicts_that_change_on_a_subset_worked_by_hand():
    d = Design.model_validate({
        "name": "t", "sets": {"main": {"n": 12}},
        "batch": [{"name": "b", "conditions": ["move", "move/novis"]}],
        "comparison": [{"batch": "b", "base": "move/novis", "variant": "move", "family": "f"}]})
    # on all 12 scenes every scene goes from 0 to 1 in one of its two replies under move,
    # except that scenes 6-11 (flagged) go 0 -> 1 in both: a clear increase
    rows = []
    for g in range(12):
        rows += [_row("m", "move/novis", g, hidden=0.0), _row("m", "move/novis", g, hidden=0.0)]
        rows += [_row("m", "move", g, hidden=1.0),
                 _row("m", "move", g, hidden=float(g >= 6 or g % 2 == 0))]
    full = analyze(rows, d, n_boot=N_BOOT)
    same = analyze([r for r in rows if r["apparent_flag"] == 0], d, n_boot=N_BOOT)
    assert full.changes[0].mark == "*" and same.changes[0].mark == "*"
    assert changed(full, same) == []
    # without scenes 0-5 nothing changes between the conditions: the increase is gone
    flat = [r for r in rows if r["apparent_flag"] == 1 or r["condition"] == "move/novis"]
    for r in flat:
        if r["condition"] == "move/novis" and r["scene"] >= "main-006":
            r["hidden"] = 1.0
    gone = analyze(flat, d, n_boot=N_BOOT)
    (row,) = changed(full, gone)
    assert row["model"] == "m" and row["all scenes"].endswith("(increase ∗)")
    assert row["subset"].endswith("(includes zero)")


def test_layouts_of_a_design_without_most_comparisons_say_so():
    d = Design.model_validate({
        "name": "q", "sets": {"main": {"n": 6}},
        "batch": [{"name": "b", "conditions": ["move", "move/novis"]}],
        "comparison": [{"batch": "b", "base": "move/novis", "variant": "move", "family": "s4"}]})
    rows = [_row("m", c, g, hidden=float(c == "move" and g % 2), dv=float(c != "move"))
            for c in ("move", "move/novis") for g in range(6) for _ in range(2)]
    lays = {x.number: x for x in layouts(analyze(rows, d, n_boot=N_BOOT))}
    assert list(lays) == NUMBERS
    assert lays["Figure 3"].rows and lays["Figure 3"].rows[0][0] == "m"  # not simulated
    assert not lays["Table 2"].rows and not lays["Table 12"].rows
    assert lays["Table 11"].notes[-1].startswith("not coded")
