"""``compare --paper``: the paper's Table 2 by series with its marks, Table 3's two panels with
each variant's change against basic, ours beside the quoted rows (``paper_layout``); and
``compare --pool`` for runs that share a model and strategy."""

from __future__ import annotations

import json
import shutil

import pytest

import unseen
from unseen.evals.scenefunri import render
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.evals.scenefunri.report.paper import paper_rows
from unseen.evals.scenefunri.report.paper_layout import MISSING, matches, table2, table3

QUOTED = paper_rows()


def ours(model: str, strategy: str, cacc75: float, dist: float, kind: str = "model", **extra):
    return {"model": model, "strategy": strategy, "kind": kind, "source": "run",
            "cacc75": cacc75, "cacc50": cacc75, "miou": cacc75 / 10, "dist": dist, **extra}


def paper_line(lines, model):
    return next(x for x in lines if x.source == "paper" and x.label == model)


def test_table2_marks_what_the_paper_marks():
    lines = table2([], QUOTED)
    # §5.1: "Gemini 3 Flash achieves the best model performance, attaining the highest
    # CAcc@75 (15.20), CAcc@50 (17.19), and mIoU (0.74), while also maintaining the lowest
    # Dist (28.65)" (Table 2's yellow highlights); the human baseline is better but aside
    gemini = paper_line(lines, "Gemini 3 Flash")
    assert gemini.overall_best == {"cacc75", "cacc50", "miou", "dist"}
    assert not any(x.overall_best for x in lines if x is not gemini)
    # §5.1: "Qwen3.5-122B achieves the highest CAcc@75 (12.63), CAcc@50 (16.14), and mIoU
    # (0.41)" of the Qwen 3.5 series; its lowest Dist is Qwen3.5-27B's 38.90
    assert paper_line(lines, "Qwen3.5-122B").series_best == {"cacc75", "cacc50", "miou"}
    assert paper_line(lines, "Qwen3.5-27B").series_best == {"dist"}
    # §5.1: the InternVL series "performs comparatively well in terms of mIoU (0.34) and Dist
    # (35.55)": InternVL3-38B's, the best of its series
    assert {"miou", "dist"} <= paper_line(lines, "InternVL3-38B").series_best
    assert not paper_line(lines, "Human baseline").series_best
    # the paper's order of series, each model's row followed by ours (none here)
    heads = [x.label for x in lines if x.heading]
    assert heads == ["Qwen 3.5 series", "InternVL3 series", "Gemma 3 series",
                     "Spatial Reasoning series", "Gemini series", "Human"]
    after = lines[lines.index(gemini) + 1]
    assert after.source == "ours" and after.note == MISSING


def test_table2_puts_our_rows_under_the_papers_and_marks_them_among_ours():
    run = [ours("Qwen/Qwen3.5-27B", "direct", 20.0, 30.0),
           ours("Qwen/Qwen3.5-4B", "direct", 10.0, 25.0),
           ours("gemini-3-flash-preview", "direct", 30.0, 35.0),
           ours("gpt-4o", "direct", 5.0, 50.0),
           ours("Qwen/Qwen3.5-27B", "cot", 99.0, 1.0),  # not the basic prompt: not in Table 2
           ours("ann", "direct", 70.0, 10.0, kind="human"),
           ours("baseline-center", "direct", 0.0, 40.0, kind="rule")]
    lines = table2(run, QUOTED)
    i = lines.index(paper_line(lines, "Qwen3.5-27B"))
    mine = lines[i + 1]
    assert (mine.source, mine.label, mine.values["cacc75"]) == ("ours", "Qwen/Qwen3.5-27B", 20.0)
    gem = lines[lines.index(paper_line(lines, "Gemini 3 Flash")) + 1]
    assert gem.values["cacc75"] == 30.0
    # among ours: Qwen3.5-27B best of its series in CAcc and mIoU, Qwen3.5-4B in Dist; the
    # best of all our models (the person aside) is gemini's CAcc and mIoU and 4B's Dist
    assert mine.series_best == {"cacc75", "cacc50", "miou"}
    assert gem.overall_best == {"cacc75", "cacc50", "miou"}
    four_b = lines[lines.index(paper_line(lines, "Qwen3.5-4B")) + 1]
    assert four_b.overall_best == {"dist"} and four_b.series_best == {"dist"}
    human = lines[lines.index(paper_line(lines, "Human baseline")) + 1]
    assert human.label == "ann (human)" and human.values["cacc75"] == 70.0 and not human.overall_best
    # a model the paper does not have: a series of its own; rules are not in Table 2
    assert lines[-2].heading and lines[-2].label == "Not in the paper"
    assert lines[-1].label == "gpt-4o"
    assert not any("center" in x.label for x in lines)


def test_table3_changes_against_basic_paper_as_printed_ours_computed():
    run = [ours("Qwen/Qwen3.5-27B", "direct", 10.0, 40.0),
           ours("Qwen/Qwen3.5-27B", "direct:prompt=hidden", 15.0, 37.0),
           ours("Qwen/Qwen3.5-27B", "cot", 12.0, 41.0, baseline="direct", delta_cacc75=1.5,
                delta_cacc50=1.5, delta_miou=0.0, delta_dist=0.25),
           ours("sim-default", "direct", 5.0, 30.0, kind="sim"),
           ours("sim-default", "cot-sr", 6.0, 29.0, kind="sim")]
    left = table3(run, QUOTED, ("Hidden", "Common", "Both"))
    hidden = next(i for i, x in enumerate(left) if x.label == "Hidden" and x.source == "paper")
    # Table 3, Qwen3.5-27B, Hidden: 16.73 +8.78 ... 37.08 -1.82, as printed
    assert left[hidden].values["cacc75"] == 16.73 and left[hidden].changes["cacc75"] == 8.78
    assert left[hidden].changes["dist"] == -1.82
    mine = left[hidden + 1]  # ours: 15 - 10 and 37 - 40, the difference of the two rows
    assert mine.changes["cacc75"] == pytest.approx(5.0) and mine.changes["dist"] == -3.0
    common = next(i for i, x in enumerate(left) if x.label == "Common" and x.source == "paper")
    assert left[common + 1].note == MISSING  # no direct:prompt=common row of that model
    assert left[0].label == "Qwen3.5-27B (ours: Qwen/Qwen3.5-27B)"
    right = table3(run, QUOTED, ("CoT", "CoT-SR"))
    cot = next(i for i, x in enumerate(right) if x.label == "CoT" and x.source == "paper")
    assert right[cot + 1].changes["cacc75"] == 1.5  # the paired difference compare computed
    # a model of ours the paper lacks: its own heading, ours only
    assert right[-2].heading and right[-2].label == "sim-default (sim)"
    assert right[-1].label == "CoT-SR" and right[-1].changes["dist"] == -1.0
    assert [x.label for x in right if x.heading][:5] == [
        "Qwen3.5-27B (ours: Qwen/Qwen3.5-27B)", "gemma-3-27b-it", "InternVL3_5-38B",
        "Qwen3.5-122B", "Gemini 3 Flash"]


@pytest.mark.parametrize("paper, ours_name, same", [
    ("Qwen3.5-27B", "Qwen/Qwen3.5-27B", True), ("Gemini 3 Flash", "gemini-3-flash", True),
    ("Gemini 3 Flash", "gemini-3-flash-preview", True), ("gemma-3-27b-it", "google/gemma-3-27b-it", True),
    ("Qwen3.5-4B", "Qwen3.5-40B", False), ("Qwen3.5-27B", "Qwen3.5-122B", False),
    ("Gemini 3 Flash", "gemini-3-flash-lite", True),
    # Table 2 heads InternVL 3.5 (the text's, Table 3's InternVL3_5-38B) "InternVL3"
    *((paper, f"{org}{name}", True) for paper in ("InternVL3-38B", "InternVL3_5-38B")
      for org in ("", "OpenGVLab/", "opengvlab/")
      for name in ("InternVL3_5-38B", "InternVL3.5-38B", "InternVL3-38B", "internvl3_5-38b",
                   "INTERNVL3.5-38B")),
    ("InternVL3-8B", "OpenGVLab/InternVL3_5-8B", True),
    ("InternVL3-38B", "OpenGVLab/InternVL3_5-8B", False),
    ("InternVL3_5-38B", "OpenGVLab/InternVL3_5-8B", False),
    ("InternVL3-38B", "InternVL2-38B", False), ("InternVL3_5-38B", "InternVL3_4-38B", False),
    ("InternVL3-8B", "InternVL3_5-38B", False),
])
def test_matching_our_names_to_the_papers(paper, ours_name, same):
    assert matches(paper, ours_name) is same


def test_markdown_and_latex_mark_and_say_what_is_missing():
    run = [ours("Qwen/Qwen3.5-27B", "direct", 10.0, 40.0)]
    md = render(run + QUOTED, "md")
    assert "**The paper's Table 2: the basic prompt, models by series (×100)**" in md
    assert "| Qwen3.5-122B | paper | **12.63** | **16.14** | **0.41** | 39.76 |" in md
    assert "| Gemini 3 Flash | paper | **15.20** ★ |" in md
    assert "|  | ours | – | – | – | – |" in md and "_–: the runs have no such row_" in md
    assert "| Hidden | paper | 16.73 (+8.78) | 21.40 (+11.11) | 0.33 (-0.00) | 37.08 (-1.82) |" \
        in md
    assert "Strong-instruction prompting" in md and "Reasoning-based prompting" in md
    tex = render(run + QUOTED, "latex")
    assert r"\textbf{\underline{12.63}}" in tex
    assert r"\colorbox{yellow}{\textbf{\underline{15.20}}}$^{\star}$" in tex
    assert r"\multicolumn{6}{l}{\emph{Qwen 3.5 series}} \\" in tex and " & ours & -- & -- " in tex


# --- the command ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    data = write_test_set(root / "data")
    a = unseen.run(data, ["direct", "cot"], ["sim"], out=root / "a", cache=False, progress=False,
                   limit=4).run_dir
    b = root / "b"
    shutil.copytree(a, b)
    c = unseen.run(data, ["direct"], ["sim:flat"], out=root / "c", cache=False, progress=False,
                   limit=4).run_dir
    return a, b, c


def test_compare_paper_prints_the_layouts(two_runs, run_main):
    code, out, err = run_main(["compare", str(two_runs[0]), "--paper"])
    assert code == 0, err
    for title in ("The paper's Table 2", "Strong-instruction prompting (the paper's Table 3, left)",
                  "Reasoning-based prompting (the paper's Table 3, right)", "Not in the paper"):
        assert title in out
    code, md, _ = run_main(["compare", str(two_runs[0]), "--paper", "--format", "md"])
    assert code == 0 and "| *sim-default (sim)* |" in md


def test_runs_sharing_a_model_and_strategy_are_refused_without_pool(two_runs, run_main):
    a, b, _ = two_runs
    code, out, err = run_main(["compare", str(a), str(b)])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(a) in err and str(b) in err and "--pool" in err and "sim-default" in err


def test_pool_pools_and_says_so(two_runs, run_main, monkeypatch):
    a, b, c = two_runs
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_main(["compare", str(a), str(b), str(c), "--pool"])
    assert code == 0, err
    note = " ".join(out.split()).split("pooled (--pool): ")[1]
    # direct first: the rows are paired against it by default
    assert note.startswith(f"sim-default direct, sim-default cot from {a} + {b} (n counts")
    assert "4×2" in out  # the same 4 instances, once from each run
    rows = json.loads(run_main(["compare", str(a), str(b), str(c), "--pool", "-f", "json"])[1])
    by = {(r["model"], r["strategy"]): r for r in rows}
    assert by[("sim-default", "direct")]["runs"] == [str(a), str(b)]
    assert by[("sim-flat", "direct")]["runs"] == [str(c)] and by[("sim-default", "cot")]["n"] == 8
    md = run_main(["compare", str(a), str(b), "--pool", "-f", "md"])[1]
    assert "_pooled (--pool): every row from" in md


def test_runs_that_share_nothing_need_no_pool(two_runs, run_main):
    a, _, c = two_runs
    code, out, err = run_main(["compare", str(a), str(c)])
    assert code == 0 and "pooled" not in out, err


@pytest.fixture(scope="module")
def internvl_runs(tmp_path_factory):
    """Runs whose model names are InternVL 3.5's as OpenGVLab publishes them (a simulated run,
    its journal given those names)."""
    root = tmp_path_factory.mktemp("internvl")
    data = write_test_set(root / "data")
    out = []
    for model in ("OpenGVLab/InternVL3_5-38B", "OpenGVLab/InternVL3_5-8B"):
        run = unseen.run(data, ["direct", "direct:prompt=hidden", "cot"], ["sim"],
                         out=root / model.split("/")[1], cache=False, progress=False,
                         limit=4).run_dir
        journal = run / "trajectories.jsonl"
        recs = [json.loads(x) for x in journal.read_text().splitlines()]
        for r in recs:
            r.update(model=model, backend=f"vllm:{model}", simulated=False)
        journal.write_text("".join(json.dumps(r) + "\n" for r in recs))
        out.append(run)
    return out


def test_internvl3_5_lands_in_both_tables_internvl_rows(internvl_runs, run_main):
    from unseen.evals.scenefunri.report.summary import summarize

    rows = summarize(internvl_runs)
    t2 = table2(rows, QUOTED)
    for paper, mine in (("InternVL3-38B", "OpenGVLab/InternVL3_5-38B"),
                        ("InternVL3-8B", "OpenGVLab/InternVL3_5-8B")):
        after = t2[t2.index(paper_line(t2, paper)) + 1]
        assert (after.source, after.label) == ("ours", mine)
    assert "Not in the paper" not in [x.label for x in t2]
    t3 = table3(rows, QUOTED, ("Hidden", "Common", "Both"))
    head = t3.index(next(x for x in t3 if x.heading and x.label.startswith("InternVL3_5-38B")))
    assert t3[head].label == "InternVL3_5-38B (ours: OpenGVLab/InternVL3_5-38B)"
    assert (t3[head + 1].source, t3[head + 1].label) == ("paper", "Hidden")
    hidden = next(r for r in rows if r["model"] == "OpenGVLab/InternVL3_5-38B"
                  and r["strategy"] == "direct:prompt=hidden")
    assert t3[head + 2].source == "ours" and t3[head + 2].values["dist"] == hidden["dist"]
    code, md, err = run_main(["compare", *map(str, internvl_runs), "--paper", "-f", "md"])
    assert code == 0, err
    assert "InternVL3_5-38B (ours: OpenGVLab/InternVL3_5-38B)" in md
    assert "| OpenGVLab/InternVL3_5-8B | ours |" in md
