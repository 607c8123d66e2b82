"""Tables at 80 columns keep their headings whole (issue 28)."""

from __future__ import annotations

import re


def test_power_table_headings_are_whole_at_80_columns(run_main, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_main(["director", "power", "quick", "--reps", "10"])
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    head = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    for word in ("comparison", "family", "true", "power", "coverage", "width", "methods"):
        assert f" {word}" in head, head
    assert "…" not in out


def _whole(text: str, out: str) -> list[str]:
    """The words of ``text`` that ``out`` broke inside (a break after a hyphen or a slash,
    ``director-`` / ``view``, is no break inside a word)."""
    tokens = set(out.split())

    def shown(word: str) -> bool:  # the word, or its head up to a hyphen and the rest shown
        return word in tokens or any(
            word[:i] in tokens and shown(word[i:]) for i in range(1, len(word))
            if word[i - 1] in "-/")

    return [w for w in text.split() if not shown(w)]


def test_power_cells_fold_at_words_at_80_columns(run_main, monkeypatch):
    """The cells folded mid-word ("block-coun" / "t", "director-v" / "iew") and a coverage's
    "±" went apart from its standard error; now a cell folds at spaces and after hyphens."""
    from unseen.evals.director.study.design import TRACE_MEASURES, load_design

    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_main(["director", "power", "quick", "--reps", "10"])
    assert code == 0, err
    titles = [c.title for c in load_design("quick").comparisons
              if c.measure not in TRACE_MEASURES]  # the simulation draws no traces
    broken = [w for t in titles for w in _whole(t, out)]
    assert not broken, broken
    assert "block-coun\n" not in out and "director-v " not in out
    for line in out.splitlines():
        assert not line.rstrip().endswith("±"), line
    assert re.findall(r"± \d+\.\d", out)  # the standard error beside its ±


def test_power_table_leaves_a_column_out_rather_than_break_a_word():
    """Two models and long family names do not fit 80 columns even folded at words: the
    methods go (the caption says so), and no word breaks."""
    from rich.console import Console

    from unseen.evals.director.analysis.power_report import render

    rows = [{"index": i, "comparison": f"visibility question, move: director-view choices {i}",
             "model": m, "family": "s6-rearranged", "margin": 0.1 if i == 1 else None,
             "scenes": 160, "samples": 5, "true_diff": 0.42, "mean_diff": -0.431,
             "power": 0.5, "within_margin": 0.4, "coverage": 0.9, "coverage_se": 0.095,
             "mean_width": 0.154, "methods": {"gee": 6, "paired": 4}, "reps": 10}
            for i in range(3) for m in ("gpt-5.6-terra", "Qwen/Qwen3.8-27B-Instruct")]
    console = Console(width=80, record=True)
    console.print(render(rows, width=80))
    out = console.export_text()
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Left out at 80 columns: methods" in out
    broken = [w for r in rows for k in ("comparison", "model", "family")
              for w in _whole(r[k], out)]
    assert not broken, broken
    assert "± 9.5" in out and "-43.1" in out and "+42.0" in out
