"""The Director power simulation: the fast GEE, the true differences, power and coverage."""

import math
import tomllib

import numpy as np
import pytest
from rich.table import Table
from scipy.special import expit

from unseen.engine.types import Instance
from unseen.evals.director.analysis import power as P
from unseen.evals.director.analysis import power_report as PR
from unseen.evals.director.analysis.stats import compare
from unseen.evals.director.sim import respondent as R
from unseen.evals.director.study.design import Design
from unseen.evals.director.task.measures import score
from unseen.evals.director.task.prompts import conditions


def _design(text: str, n: int = 12, samples: int = 5) -> Design:
    head = f'name = "t"\nsamples = {samples}\n[sets.main]\nn = {n}\n'
    return Design.model_validate(tomllib.loads(head + text))


TINY = """
[[batch]]
name = "q"
conditions = ["move", "move/novis", "mean", "move/know", "move+combined"]
[[comparison]]
batch = "q"
base = "move/novis"
variant = "move"
family = "s4"
[[comparison]]
batch = "q"
base = "move"
variant = "mean"
measure = "accuracy"
margin = true
[[comparison]]
batch = "q"
base = "move"
variant = "move/know"
where = "report-excludes-hidden"
family = "s5"
[[comparison]]
batch = "q"
base = "move"
variant = "move+combined"
measure = "joint"
family = "s5"
"""


# --- the fast GEE ------------------------------------------------------------------------------


def _data(rng, G, unbalanced, lo=-2.0, effect=1.5, sd=1.0):
    u = rng.normal(0, sd, G)
    rows = []
    for g in range(G):
        for c in (0, 1):
            for _ in range(int(rng.integers(0, 8)) if unbalanced else 5):
                rows.append((int(rng.random() < expit(lo + effect * c + u[g])), c, g))
    a = np.array(rows)
    return a[:, 0], a[:, 1], a[:, 2]


@pytest.mark.parametrize("seed", range(8))
def test_the_fast_fit_is_statsmodels_fit(seed):
    rng = np.random.default_rng(seed)
    G = int(rng.integers(4, 60))
    y, x, s = _data(rng, G, unbalanced=seed % 2 == 1, lo=[-2.0, -5.0][seed % 4 == 2])
    a, b = compare(y, x, s), compare(y, x, s, fast=True)
    assert a.method == b.method
    for f in ("diff", "low", "high", "p", "share0", "share1"):
        assert getattr(b, f) == pytest.approx(getattr(a, f), abs=1e-8)
    assert (a.n, a.G, a.df) == (b.n, b.G, b.df)


def test_the_fast_path_takes_the_bound_and_paired_estimators_and_raises_alike():
    x = np.tile([0, 1], 20)
    s = np.repeat(np.arange(20), 2)
    bound = compare(np.tile([0, 1], 20), x, s, fast=True)
    assert bound.method == "bound" and bound == compare(np.tile([0, 1], 20), x, s)
    y = np.zeros(40, dtype=int)
    y[[1, 5, 9]] = 1
    assert compare(y, x, s, fast=True).method == "paired"
    with pytest.raises(ValueError):
        compare([0, 1, 1, 0], [0, 1, 0, 1], [0, 0, 1, 1], fast=True)


# --- knobs -------------------------------------------------------------------------------------


def test_effects_parse_and_override():
    assert P.parse_effects(["uplift=0.3", "dir_scene_sd=0.5"]) == {"uplift": 0.3, "scene_sd": 0.5}
    with pytest.raises(ValueError, match="unknown knob 'wisdom'"):
        P.parse_effects(["wisdom=1"])
    with pytest.raises(ValueError, match="knob=value"):
        P.parse_effects(["uplift"])
    with pytest.raises(ValueError, match="not a number"):
        P.parse_effects(["uplift=big"])
    k = P.make_knobs({"uplift": 0.1, "miss": 0.2}, {"uplift": 0.3})
    assert k.uplift == 0.3 and k.miss == 0.2


# --- true differences --------------------------------------------------------------------------


def _truth(design, knobs, scenes="fixed"):
    ctx = P._context(design, {"sim": P.make_knobs(knobs)}, False, scenes, None)
    return [P.true_difference(ctx, cell) for cell in ctx.cells]


def test_true_differences_worked_by_hand():
    """No digit pull: every scene's expected rate is the knob's rate, whatever scene_sd.

    - hidden, move − move/novis: move has 0.05 + 0.40 = 0.45 own-view choices, and a wrong report
      that adds the hidden block (1 − 0.9) · 0.4 = 0.04 of replies; a quarter of those that were
      not going to take it take it: 0.45 + 0.04 · 0.25 · 0.55 = 0.4555. Without the question:
      0.05. Difference 0.4055.
    - accuracy, mean − move: 0.9 both, difference 0.
    - hidden among reports without the hidden block, know − vis: those reports never pull the
      choice, so the share is the own-view rate, 0.05 + 0.4 · 0.5 = 0.25 against 0.45: −0.20.
    - joint, combined − move: correct report (0.9) beside an own-view choice; the combined
      constraint multiplies the rate by 0.02: 0.9 · 0.45 · 0.02 − 0.9 · 0.45 = −0.3969.
    """
    knobs = {"top_digit_pull": 0.0, "scene_sd": 1.0, "acc_scene_sd": 0.5}
    t = _truth(_design(TINY), knobs)
    assert t[0] == pytest.approx((0.05, 0.4555, 0.4055), abs=1e-9)
    assert t[1] == pytest.approx((0.9, 0.9, 0.0), abs=1e-9)
    assert t[2] == pytest.approx((0.45, 0.25, -0.20), abs=1e-9)
    assert t[3] == pytest.approx((0.405, 0.0081, -0.3969), abs=1e-9)


def test_ldv_other_worked_by_hand():
    """Scenes of KEY (a largest-digit block 9, another visible block 2): a non-own choice misses
    the director-view block with probability 0.1, and a miss takes 9 with probability 0.8. Among
    choices other than the director-view block, the share taking 9 is
    (1 − h) · 0.1 · 0.8 / (h + (1 − h) · 0.1)."""
    knobs = R.DirectorKnobs(top_digit_pull=0.0, scene_sd=0.0, acc_scene_sd=0.0, miss=0.1,
                            digit_reading=0.8)
    key = {"hidden_digit": 7, "visible_digits": [2, 5, 9], "director_view_digit": 5,
           "largest_digit_visible": 9, "apparent_size_flag": False, "digits": [2, 5, 7, 9]}
    pool = P.ScenePool("main", ("main-000",), (key,), R.features([key]))
    num, den = P.expected_share(knobs, "move/novis", "ldv_other", "all", pool)
    h = 0.05
    assert num / den == pytest.approx((1 - h) * 0.08 / (h + (1 - h) * 0.1), abs=1e-12)


KEYS = [
    {"hidden_digit": 7, "visible_digits": [2, 5, 9], "director_view_digit": 5,
     "largest_digit_visible": 9, "apparent_size_flag": False, "digits": [2, 5, 7, 9]},
    {"hidden_digit": 9, "visible_digits": [3, 4, 6], "director_view_digit": 4,
     "largest_digit_visible": 6, "apparent_size_flag": True, "digits": [3, 4, 6, 9]},
    {"hidden_digit": 1, "visible_digits": [4, 8], "director_view_digit": 8,
     "largest_digit_visible": None, "apparent_size_flag": False, "digits": [1, 4, 8]},
]


@pytest.mark.parametrize("where", ["all", "report-excludes-hidden", "hidden-top-digit"])
def test_role_measures_agree_with_measures_score(where):
    """The power simulation's measures by role give the same expectations as ``measures.score``
    applied to every outcome of ``outcome_probs``."""
    knobs = R.DirectorKnobs(scene_sd=0.0, acc_scene_sd=0.0, vis_acc=0.7, miss=0.3,
                            digit_reading=0.6)
    keep = {"all": lambda m: True, "report-excludes-hidden":
            lambda m: m.get("report_excludes_hidden") == 1,
            "hidden-top-digit": lambda m: m.get("hidden_top_digit") == 1}[where]
    for i, key in enumerate(KEYS):
        inst = Instance(id=f"main-{i:03d}", image="/x.png", width=1, height=1, truth=key)
        pool = P.ScenePool("main", (inst.id,), (key,), R.features([key], [inst.id]))
        for cond in conditions()[::3]:
            outs = [(p, score(inst, f)) for p, f in R.outcome_probs(knobs, cond, key) if f]
            for m in ("hidden", "dv", "accuracy", "joint", "ldv", "ldv_other", "count", "known"):
                num, den = P.expected_share(knobs, cond, m, where, pool)
                want_den = sum(p for p, s in outs if m in s and keep(s))
                want_num = sum(p * s[m] for p, s in outs if m in s and keep(s))
                assert (num, den) == pytest.approx((want_num, want_den), abs=1e-12), (cond, m)


# --- the simulation ----------------------------------------------------------------------------


def test_power_on_a_tiny_design_gives_sane_fields():
    rep = PR.power_report(_design(TINY), reps=6, seed=1, scenes="fixed")
    assert len(rep) == 4
    for r in rep:
        assert 0 <= r["power"] <= 1 and 0 <= r["excludes_zero"] <= 1
        assert 0 <= r["coverage"] <= 1 and r["coverage_se"] >= 0
        assert math.isfinite(r["true_diff"]) and r["mean_width"] > 0
        assert sum(r["methods"].values()) == r["reps"] == 6
        assert r["scenes"] == 12 and r["samples"] == 5
    assert rep[0]["family"] == "s4" and rep[1]["family"] is None and rep[1]["margin"]
    assert rep[1]["within_margin"] is not None and rep[0]["within_margin"] is None
    assert rep[0]["power"] >= rep[1]["power"]
    table = PR.render(rep)
    assert isinstance(table, Table) and table.row_count == 4


def test_simulation_is_deterministic_and_matches_exact_fits_and_workers():
    d = _design(TINY, n=8)
    a = P.simulate(d, reps=3, seed=4, scenes="fixed")
    b = P.simulate(d, reps=3, seed=4, scenes="fixed", exact=True)
    np.testing.assert_allclose(a.runs, b.runs, atol=1e-8)
    c = P.simulate(d, reps=3, seed=4, scenes="fixed", workers=2)
    np.testing.assert_array_equal(a.runs, c.runs)
    assert not np.array_equal(a.runs, P.simulate(d, reps=3, seed=5, scenes="fixed").runs)


def test_effects_move_the_truth_and_the_power():
    d = _design(TINY, n=20)
    none = PR.power_report(d, effects={"uplift": 0.0, "follow_report": 0.0}, reps=40, seed=2,
                          scenes="fixed")
    big = PR.power_report(d, effects={"uplift": 0.4}, reps=40, seed=2, scenes="fixed")
    assert none[0]["true_diff"] == pytest.approx(0.0, abs=1e-12)
    assert none[0]["power"] <= 0.2 and big[0]["power"] >= 0.9


def test_named_models_get_what_the_design_asks_them():
    d = _design("""
[[batch]]
name = "q"
models = ["a", "b"]
conditions = ["move", "move/novis"]
[batch.only]
"move/novis" = ["a"]
[[comparison]]
batch = "q"
base = "move/novis"
variant = "move"
family = "s4"
""")
    rep = PR.power_report(d, reps=3, seed=0, models={"a": {"uplift": 0.1}, "b": {}},
                         scenes="fixed")
    assert [r["model"] for r in rep] == ["a"]
    assert rep[0]["true_diff"] < 0.2


def test_coverage_sanity():
    """A large effect and a null one, 40 scenes x 5: the 95% intervals cover the truth."""
    d = _design("""
[[batch]]
name = "q"
conditions = ["move", "move/novis", "move+padding"]
[[comparison]]
batch = "q"
base = "move/novis"
variant = "move"
family = "s4"
[[comparison]]
batch = "q"
base = "move"
variant = "move+padding"
family = "s4"
""", n=40)
    rep = PR.power_report(d, reps=200, seed=11)
    for r in rep:
        assert r["coverage"] >= 0.88, r
    assert rep[0]["power"] > 0.95 and rep[1]["true_diff"] == 0.0 and rep[1]["power"] < 0.12
