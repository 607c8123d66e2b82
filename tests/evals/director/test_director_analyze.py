"""Director study analysis: rates, comparisons, BH marks, margin verdicts, formats and plots."""

import json
import math

import numpy as np
import pytest
from rich.console import Console

from unseen.evals.director.analysis import analyze as an
from unseen.evals.director.analysis.analyze import AnalysisError, analyze, analyze_run, load_run
from unseen.evals.director.analysis.plots import plot_analysis as plot
from unseen.evals.director.analysis.shown import end, pct, tex
from unseen.evals.director.analysis.stats import Comparison, bh, round_half_away, share_interval
from unseen.evals.director.analysis.tables import render
from unseen.evals.director.study.design import Design

N_BOOT = 200  # enough for the tests; the default is the paper's 2000


def design(conditions, comparisons=(), models=("*",), **kw) -> Design:
    return Design.model_validate({
        "name": "t", "sets": {"main": {"n": 40}},
        "batch": [{"name": "b", "conditions": list(conditions), "models": list(models)}],
        "comparison": list(comparisons), **kw})


def row(model, condition, scene, answered=True, **measures):
    r = {"model": model, "backend": "sim", "batch": "b", "condition": condition, "set": "main",
         "scene": f"main-{scene:03d}", "sample": 0, "answered": answered,
         "error": None if answered else "parse", "hidden_top_digit": 0.0, "apparent_flag": 0.0}
    if answered:
        r.update(measures)
    return r


def text_of(renderable) -> str:
    console = Console(record=True, width=220)
    console.print(renderable)
    return console.export_text()


# --- numbers as shown -----------------------------------------------------------------------


def test_points_round_half_away_and_small_ends_get_two_places():
    assert pct(0.1225) == "12.3"  # 12.25 exactly: away from zero (float round would give 12.2)
    assert pct(-0.1225, signed=True) == "-12.3"
    assert pct(0.5, signed=True) == "+50.0"
    assert pct(-0.0004, signed=True) == "0.0"  # a point estimate rounding to zero has no sign
    assert end(0.0004) == "0.04" and end(-0.0004) == "-0.04"
    assert end(0.0) == "0.00"
    assert end(0.00049) == "0.05"  # 0.049 points: zero at one place, two places shown
    assert end(-0.1235) == "-12.4"


def test_tex_escapes_specials():
    assert tex("a_b & 10% #1 $x {y} ~^\\") == (
        r"a\_b \& 10\% \#1 \$x \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}")
    assert tex("mean − move") == "mean $-$ move"


# --- rates ----------------------------------------------------------------------------------


def test_rates_hand_worked():
    d = design(["move", "move/novis"])
    rows = [
        row("m", "move", 0, hidden=1.0, ldv=0.0), row("m", "move", 0, hidden=1.0),
        row("m", "move", 1, hidden=1.0, ldv=1.0), row("m", "move", 1, hidden=0.0),
        row("m", "move", 2, hidden=0.0, ldv=0.0), row("m", "move", 2, hidden=0.0),
        row("m", "move", 3, hidden=1.0), row("m", "move", 3, answered=False),
        row("m", "move/novis", 0, answered=False), row("m", "move/novis", 1, answered=False),
    ]
    a = analyze(rows, d, n_boot=N_BOOT, seed=3)
    move = a.rate("m", "b", "main", "move")
    assert (move.n, move.answered, move.answer_rate) == (8, 7, 0.875)
    assert set(move.shares) == {"hidden", "ldv"}  # dv applies to no reply
    h = move.shares["hidden"]
    assert h.n == 7 and h.share == 0.5714  # 4 / 7
    _, lo, hi = share_interval([1, 1, 1, 0, 0, 0, 1], [0, 0, 1, 1, 2, 2, 3], n_boot=N_BOOT, seed=3)
    assert (h.low, h.high) == (round_half_away(lo, 4), round_half_away(hi, 4))
    assert move.shares["ldv"].n == 3 and move.shares["ldv"].share == 0.3333
    novis = a.rate("m", "b", "main", "move/novis")
    assert (novis.n, novis.answered, novis.answer_rate, novis.shares) == (2, 0, 0.0, {})
    assert pct(h.share) == "57.1"


# --- comparisons ----------------------------------------------------------------------------


def test_diff_is_the_raw_difference_in_a_balanced_case():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.2, 0.8, size=(12, 2))
    rows = [row("m", cond, g, hidden=float(rng.random() < p[g, j]))
            for g in range(12) for j, cond in enumerate(["move/novis", "move"]) for _ in range(5)]
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "family": "f"}])
    (ch,) = analyze(rows, d, n_boot=N_BOOT).changes
    y = np.array([r["hidden"] for r in rows])
    x = np.array([r["condition"] == "move" for r in rows])
    raw = y[x].mean() - y[~x].mean()
    assert ch.status == "ok" and ch.method == "gee" and (ch.n, ch.G) == (120, 12)
    assert abs(ch.diff - raw) <= 0.5e-4 + 1e-9
    assert ch.share0 == pytest.approx(y[~x].mean(), abs=0.5e-4 + 1e-9)
    assert ch.share1 == pytest.approx(y[x].mean(), abs=0.5e-4 + 1e-9)
    assert ch.low < ch.diff < ch.high


def _where_rows():
    """10 scenes; the hidden block carries the top digit in scenes 0-4, where move always
    chooses it; move/novis never does; scenes 0 and 1 are apparent-size flagged."""
    rows = []
    for g in range(10):
        top = float(g < 5)
        for cond in ("move/novis", "move"):
            for _ in range(2):
                r = row("m", cond, g, hidden=float(cond == "move" and g < 5))
                r["hidden_top_digit"], r["apparent_flag"] = top, float(g < 2)
                if cond == "move":
                    r["report_excludes_hidden"] = 1.0
                rows.append(r)
    return rows


@pytest.mark.parametrize("where, diff, n, method", [
    ("all", 0.5, 40, "paired"),
    ("hidden-top-digit", 1.0, 20, "bound"),
    ("hidden-not-top-digit", 0.0, 20, "bound"),
    ("apparent-ok", 0.375, 32, "paired"),
])
def test_where_filters(where, diff, n, method):
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "where": where, "family": "f"}])
    (ch,) = analyze(_where_rows(), d, n_boot=N_BOOT).changes
    assert (ch.status, ch.diff, ch.n, ch.method) == ("ok", diff, n, method)


def test_where_that_keeps_no_base_reply_is_no_data():
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "where": "report-excludes-hidden", "family": "f"}])
    (ch,) = analyze(_where_rows(), d, n_boot=N_BOOT).changes
    assert ch.status == "no data" and ch.diff is None and "move/novis" in ch.note


def _bh_case(monkeypatch):
    """Family f: p = 0.001 on two models, 0.04 and 0.9 on one (adjusted 0.002, 0.002, 0.053,
    0.9): the first survives, the second's interval excludes zero but it fails the correction;
    and a comparison in no family. ``compare`` is replaced by the Comparison of each variant."""
    comps = {
        "move": Comparison(0.30, 0.0004, 0.45, 0.001, "gee", 0.1, 0.4, 20, 5, 0.05, 3),
        "move/count": Comparison(0.10, 0.01, 0.19, 0.04, "gee", 0.1, 0.2, 20, 5, 0.04, 3),
        "move/stated": Comparison(-0.02, -0.2, 0.16, 0.9, "gee", 0.1, 0.08, 20, 5, 0.08, 3),
        "mean": Comparison(-0.5, -0.7, -0.3, 0.0001, "gee", 0.6, 0.1, 20, 5, 0.1, 3),
    }
    current = []  # the variant of the comparison being estimated

    def fake(y, condition, scene):
        return comps[current[-1]]

    real = an._one_change

    def spy(i, c, model, index, design_, backends):
        current.append(c.variant)
        return real(i, c, model, index, design_, backends)

    monkeypatch.setattr(an, "compare", fake)
    monkeypatch.setattr(an, "_one_change", spy)
    conds = ["move/novis", "move", "move/count", "move/stated", "mean"]
    rows = [row(m, c, g, hidden=float(g % 2)) for m in ("gpt_x", "other") for c in conds
            for g in range(3)]
    base = {"batch": "b", "base": "move/novis"}
    d = design(conds, [
        {**base, "variant": "move", "family": "f", "label": "visibility question"},
        {**base, "variant": "move/count", "family": "f", "models": ["gpt_x"]},
        {**base, "variant": "move/stated", "family": "f", "models": ["gpt_x"]},
        {**base, "variant": "mean", "label": "no family", "models": ["gpt_x"]},
    ], models=("gpt_x", "other"))
    return analyze(rows, d, n_boot=N_BOOT)


def test_bh_marks_survivor_dagger_and_unmarked(monkeypatch):
    a = _bh_case(monkeypatch)
    got = {(c.comparison.variant, c.model): c for c in a.changes}
    fam = [got[("move", "gpt_x")], got[("move", "other")], got[("move/count", "gpt_x")],
           got[("move/stated", "gpt_x")]]
    _, adjusted = bh([c.p for c in fam], 0.05)
    assert [c.p_adjusted for c in fam] == pytest.approx(list(adjusted))
    assert [c.mark for c in fam] == ["*", "*", "†", ""]
    assert got[("move/count", "gpt_x")].p_adjusted == pytest.approx(0.04 * 4 / 3)
    assert got[("move/count", "other")].status == "not asked"
    free = got[("mean", "gpt_x")]
    assert free.group == "uncorrected" and free.mark == "" and free.p_adjusted is None
    assert free.raw.excludes_zero  # excludes zero, but outside the families: never marked


def test_margin_verdict_outside_the_families():
    rows = []
    for model, G in (("wide", 20), ("narrow", 40)):
        for g in range(G):
            for cond in ("move", "mean"):
                rows.append(row(model, cond, g, accuracy=float(g % 3 == 0), hidden=0.0))
    d = design(["move", "mean"], [
        {"batch": "b", "base": "move", "variant": "mean", "measure": "accuracy", "margin": True},
        {"batch": "b", "base": "move", "variant": "mean", "measure": "accuracy", "margin": True,
         "family": "f"},
    ], margin=0.10)
    a = analyze(rows, d, n_boot=N_BOOT)
    by = {(c.index, c.model): c for c in a.changes}
    for i in (0, 1):
        narrow, wide = by[(i, "narrow")], by[(i, "wide")]
        assert narrow.method == wide.method == "bound" and narrow.diff == wide.diff == 0.0
        U40, U20 = 1 - 0.025 ** (1 / 40), 1 - 0.025 ** (1 / 20)
        assert narrow.high == round_half_away(U40, 4) and wide.high == round_half_away(U20, 4)
        assert narrow.equivalent is True and wide.equivalent is False
        assert narrow.group == "margin" and narrow.mark == "" and narrow.p_adjusted is None
    assert [g for g, _ in a.groups()] == ["margin"]
    md = render(a, "md")
    assert "within ±10.0 points" in md and "| within |" in md and "| not within |" in md


def test_not_asked_and_zero_answered():
    d = design(["move", "move/novis"], [
        {"batch": "b", "base": "move/novis", "variant": "move", "family": "f",
         "models": ["a", "c"]}], models=("a", "b", "c"))
    rows = [row("a", cond, g, hidden=float(g == 1 and cond == "move"))
            for cond in ("move", "move/novis") for g in range(4)]
    rows += [row("b", cond, g, hidden=1.0) for cond in ("move", "move/novis") for g in range(4)]
    rows += [row("c", "move", g, hidden=1.0) for g in range(4)]
    rows += [row("c", "move/novis", g, answered=False) for g in range(4)]
    rows += [row("d", cond, g, hidden=1.0) for cond in ("move", "move/novis") for g in range(4)]
    a = analyze(rows, d, n_boot=N_BOOT)
    status = {c.model: c.status for c in a.changes}
    assert status == {"a": "ok", "b": "not asked", "c": "no answers", "d": "not asked"}
    j = json.loads(render(a, "json"))
    assert {c["model"]: c["status"] for c in j["changes"]}["b"] == "not asked"
    # the design asks a and c; c has no answers under the base, so one of two is estimated
    assert j["families"] == {"f": {"estimated": 1, "asked": 2}}
    assert "Family f: Benjamini-Hochberg at q = 0.05 over 1 comparisons (the design asks 2 of these models)" in render(a, "md")
    md = render(a, "md")
    assert "| b | – |" in md and "no answers" in md
    assert "| c | answered | 100.0 (4/4) | 0.0 (0/4) |" in md
    assert "|  | hidden | 100.0 [100.0, 100.0] | – |" in md


# --- formats and plots ----------------------------------------------------------------------


def test_every_format_shows_the_numbers(monkeypatch):
    a = _bh_case(monkeypatch)
    # the first change: +30.0 [0.04, 45.0]*  (the low end rounds to zero at one place)
    table = text_of(render(a, "table"))
    for s in ("+30.0", "[0.04, 45.0]", "∗", "+10.0", "[1.0, 19.0]", "†", "-50.0", "gpt_x",
              "Family f", "not corrected", "visibility question", "0.053"):
        assert s in table, s
    assert "33.3" in table and "3/3" in table  # the rates: 3 of 3 answered, 1 hidden choice
    md = render(a, "md")
    assert "| gpt_x | answered | 100.0 (3/3) |" in md and "| hidden | 33.3 [" in md
    assert "| visibility question (move − move/novis: hidden; batch b) | gpt_x | +30.0 | " \
           "[0.04, 45.0] | ∗ | 0.001 | 0.002 | gee | 20 | 5 |" in md
    assert "| +10.0 | [1.0, 19.0] | † | 0.040 | 0.053 |" in md
    tex_out = render(a, "latex")
    assert r"\toprule" in tex_out and r"\bottomrule" in tex_out
    assert r"gpt\_x & answered & $100.0$" in tex_out and "& hidden & $33.3$" in tex_out
    assert r"$+30.0^{*}$ & $[0.04, 45.0]$" in tex_out
    assert r"$+10.0^{\dagger}$" in tex_out and "gpt\\_x" in tex_out
    body = "\n".join(line for line in tex_out.splitlines() if not line.startswith("%"))
    assert "_x" not in body.replace(r"\_x", "")  # every underscore escaped
    j = json.loads(render(a, "json"))
    first = next(c for c in j["changes"] if c["variant"] == "move" and c["model"] == "gpt_x")
    assert first["diff"] == 0.3 and first["low"] == 0.0004 and first["mark"] == "*"
    assert isinstance(first["p_adjusted"], float) and first["status"] == "ok"
    rate = j["rates"][0]
    assert isinstance(rate["answer_rate"], float) and isinstance(rate["measures"]["hidden"]["share"], float)
    with pytest.raises(ValueError, match="unknown format"):
        render(a, "csv")


def test_latex_escapes_names_and_labels():
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "family": "f_1", "label": "50% & more #1"}])
    rows = [row("m_1&co", cond, g, hidden=float(cond == "move" and g % 2))
            for cond in ("move", "move/novis") for g in range(6) for _ in range(2)]
    out = render(analyze(rows, d, n_boot=N_BOOT), "latex")
    assert r"m\_1\&co" in out and r"50\% \& more \#1" in out and r"f\_1" in out


def test_plot_writes_pngs(monkeypatch, tmp_path):
    a = _bh_case(monkeypatch)
    paths = plot(a, tmp_path / "plots")
    names = sorted(p.name for p in paths)
    assert names == ["forest_f.png", "forest_uncorrected.png", "hidden_b.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


# --- runs -----------------------------------------------------------------------------------


def test_empty_rows_raise():
    with pytest.raises(AnalysisError, match="no replies"):
        analyze([], design(["move"]))


def _write_run(path, records, d: Design):
    path.mkdir()
    (path / "study.json").write_text(json.dumps({
        "design": d.model_dump(by_alias=True), "backends": [{"spec": "sim", "model": "alias"}]}))
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_run_directory(tmp_path):
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "family": "f"}])
    records = [{"key": f"k{c}{g}", "backend": "sim", "model": "sim-default",
                "strategy": f"director:batch=b,condition={c}",
                "params": {"condition": c, "batch": "b"}, "instance_id": f"main-{g:03d}",
                "sample": 0, "status": "answered",
                "metrics": {"hidden": float(c == "move"), "hidden_top_digit": 0.0,
                            "apparent_flag": 0.0}}
               for c in ("move", "move/novis") for g in range(4)]
    _write_run(tmp_path / "run", records, d)
    a = analyze_run(tmp_path / "run", n_boot=N_BOOT)
    assert a.models == ["alias"] and a.design.name == "t"
    (ch,) = a.changes
    assert (ch.status, ch.diff, ch.method) == ("ok", 1.0, "bound")
    other = design(["move"], name="other")
    assert analyze_run(tmp_path / "run", other, n_boot=N_BOOT).design.name == "other"

    _write_run(tmp_path / "empty", [], d)
    with pytest.raises(AnalysisError, match="no replies"):
        load_run(tmp_path / "empty")
    with pytest.raises(AnalysisError, match="no such run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "bare").mkdir()
    with pytest.raises(AnalysisError, match="--design"):
        load_run(tmp_path / "bare")


def test_nan_free_json(monkeypatch):
    a = _bh_case(monkeypatch)
    text = render(a, "json")
    assert "NaN" not in text and not any(
        isinstance(v, float) and math.isnan(v) for c in json.loads(text)["changes"]
        for v in c.values())


def test_every_output_marks_simulated_replies(tmp_path, monkeypatch):
    # DESIGN: "the sim backend ... is labelled as a simulation in every output"
    d = design(["move", "move/novis"], [{"batch": "b", "base": "move/novis", "variant": "move",
                                         "family": "f"}])
    rows = [{**row(m, cond, g, hidden=float(cond == "move" and g % 2)), "simulated": m == "fake"}
            for m in ("fake", "real") for cond in ("move", "move/novis") for g in range(6)]
    a = analyze(rows, d, n_boot=N_BOOT)
    assert a.simulated == ["fake"] and a.label("fake") == "fake (sim)" and a.label("real") == "real"
    notice = "SIMULATED: the replies of fake come from the offline simulator"
    table = text_of(render(a, "table"))
    assert notice in " ".join(table.split()) and "fake (sim)" in table and "real (sim)" not in table
    md = render(a, "md")
    assert f"**{notice}" in md and "| fake (sim) | answered |" in md and "| real | answered |" in md
    latex = render(a, "latex")
    assert r"\textbf{SIMULATED}" in latex and "fake (sim)" in latex
    j = json.loads(render(a, "json"))
    assert j["simulated"] == ["fake"] and j["notice"].startswith("SIMULATED")
    assert {(c["model"], c["simulated"]) for c in j["changes"]} == {("fake", True), ("real", False)}
    assert all(r["simulated"] == (r["model"] == "fake") for r in j["rates"])
    # the figures: every text drawn, read from the figure before it is saved
    import matplotlib.figure

    drawn: list[str] = []
    save = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kw):
        drawn.append(" ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text)))
        return save(fig, *args, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    assert len(plot(a, tmp_path)) == 2
    assert all("SIMULATED (fake)" in t and "fake (sim)" in t for t in drawn)
    # a run of real models only says nothing of the kind
    real = analyze([r for r in rows if r["model"] == "real"], d, n_boot=N_BOOT)
    assert "SIMULATED" not in render(real, "md") and "(sim)" not in render(real, "md")
