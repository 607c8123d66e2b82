"""The Director paper's estimators: GEE with its fallbacks, BH, marks, rounding, share intervals."""

import math
import shutil
import subprocess
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.special import expit

from unseen.evals.director.analysis.stats import (
    Comparison,
    bh,
    compare,
    equivalent,
    fit_gee,
    mark,
    round_half_away,
    share_interval,
)


def _balanced(G, seed, per=5, lo=0.15, hi=0.85):
    """``per`` + ``per`` replies per scene, each scene with its own random shares."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(lo, hi, size=(G, 2))
    scene = np.repeat(np.arange(G), 2 * per)
    cond = np.tile(np.repeat([0, 1], per), G)
    y = (rng.random(len(scene)) < p[scene, cond]).astype(int)
    return y, cond, scene


def _per_scene_diffs(y, cond, scene):
    return np.array([y[(scene == g) & (cond == 1)].mean() - y[(scene == g) & (cond == 0)].mean()
                     for g in np.unique(scene)])


def _unbalanced(seed=7, G=25):
    """Scenes with 3-7 replies per condition and a scene random effect: a fixed, unbalanced set."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(G):
        u = rng.normal(0, 1)
        for c in (0, 1):
            for _ in range(int(rng.integers(3, 8))):
                rows.append((int(rng.random() < expit(-0.3 + 0.8 * c + u)), c, g))
    a = np.array(rows)
    return a[:, 0], a[:, 1], a[:, 2]


# --- GEE ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("G, seed", [(20, 0), (20, 1), (37, 2), (160, 3)])
def test_balanced_gee_is_raw_shares_and_per_scene_se(G, seed):
    """5 + 5 replies per scene: the fitted shares are the raw shares and the delta-method SE is
    sd(d)/sqrt(G) of the per-scene differences. This pins the G/(G-1) factor (without it the
    SE is sqrt((G-1)/G) smaller) and the exchangeable working correlation."""
    y, cond, scene = _balanced(G, seed)
    c = compare(y, cond, scene)
    assert c.method == "gee" and c.G == G and c.n == 10 * G and c.df == G - 2
    assert c.share0 == pytest.approx(y[cond == 0].mean(), abs=1e-9)
    assert c.share1 == pytest.approx(y[cond == 1].mean(), abs=1e-9)
    d = _per_scene_diffs(y, cond, scene)
    assert c.diff == pytest.approx(d.mean(), abs=1e-9)
    assert c.se == pytest.approx(d.std(ddof=1) / math.sqrt(G), abs=1e-9)
    tq = sps.t.ppf(0.975, G - 2)
    assert (c.low, c.high) == pytest.approx((c.diff - tq * c.se, c.diff + tq * c.se), abs=1e-12)
    assert c.p == pytest.approx(2 * sps.t.sf(abs(c.diff) / c.se, G - 2), rel=1e-9)


def _hand_sandwich(y, cond, scene, b, alpha):
    """Liang-Zeger sandwich for the logit with exchangeable correlation alpha, at ``b``;
    also returns the estimating function's value (zero at the GEE solution)."""
    B, M, U = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)
    for g in np.unique(scene):
        m = scene == g
        X = np.column_stack([np.ones(m.sum()), cond[m]])
        mu = expit(X @ b)
        a = mu * (1 - mu)
        D = X * a[:, None]
        n = m.sum()
        R = (1 - alpha) * np.eye(n) + alpha * np.ones((n, n))
        V = np.sqrt(a)[:, None] * R * np.sqrt(a)[None, :]
        Vi = np.linalg.inv(V)
        r = y[m] - mu
        B += D.T @ Vi @ D
        s = D.T @ Vi @ r
        M += np.outer(s, s)
        U += s
    Bi = np.linalg.inv(B)
    return Bi @ M @ Bi, U


def _hand_alpha(y, cond, scene, b, ddof=2):
    """The moment estimate of the exchangeable correlation (statsmodels' default ddof = 2)."""
    mu = expit(b[0] + b[1] * cond)
    e = (y - mu) / np.sqrt(mu * (1 - mu))
    N = len(y)
    scale = (e**2).sum() / (N - ddof)
    cross, pairs = 0.0, 0.0
    for g in np.unique(scene):
        eg = e[scene == g]
        cross += (eg.sum() ** 2 - (eg**2).sum()) / 2
        pairs += len(eg) * (len(eg) - 1) / 2
    return cross / scale / (pairs - ddof)


def test_gee_matches_a_hand_computed_sandwich():
    y, cond, scene = _unbalanced()
    G = len(np.unique(scene))
    res = fit_gee(y, cond, scene)
    b = np.asarray(res.params)
    alpha = float(res.model.cov_struct.dep_params)
    assert alpha == pytest.approx(_hand_alpha(y, cond, scene, b), rel=1e-9)
    V, U = _hand_sandwich(y, cond, scene, b, alpha)
    assert np.abs(U).max() < 1e-8  # b solves the estimating equations
    V = V * G / (G - 1)
    assert np.asarray(res.cov_params()) == pytest.approx(V, rel=1e-9)

    c = compare(y, cond, scene)
    p0, p1 = expit(b[0]), expit(b[0] + b[1])
    grad = np.array([p1 * (1 - p1) - p0 * (1 - p0), p1 * (1 - p1)])
    assert c.method == "gee" and c.G == G and c.n == len(y)
    assert (c.share0, c.share1, c.diff) == pytest.approx((p0, p1, p1 - p0), abs=1e-12)
    assert c.se == pytest.approx(math.sqrt(grad @ V @ grad), rel=1e-9)
    tq = sps.t.ppf(0.975, G - 2)
    assert (c.low, c.high) == pytest.approx((c.diff - tq * c.se, c.diff + tq * c.se), abs=1e-12)
    assert c.p == pytest.approx(2 * sps.t.sf(abs(c.diff) / c.se, G - 2), rel=1e-9)
    # condition and scene labels of any kind; rows in any order
    perm = np.random.default_rng(0).permutation(len(y))
    c2 = compare(y[perm], cond[perm].astype(bool), np.array([f"s{g}" for g in scene[perm]]))
    assert (c2.diff, c2.se) == pytest.approx((c.diff, c.se), abs=1e-9)


def _geepack_ready():
    if shutil.which("Rscript") is None:
        return False
    r = subprocess.run(["Rscript", "-e", "suppressMessages(library(geepack))"], capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(not _geepack_ready(), reason="R's geepack is not installed "
                    "(apt-get install r-cran-geepack); the hand-computed sandwich test still runs")
def test_gee_matches_geepack(tmp_path):
    y, cond, scene = _unbalanced()
    G = len(np.unique(scene))
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.column_stack([y, cond, scene]), delimiter=",", fmt="%d",
               header="y,x,scene", comments="")
    code = (f'suppressMessages(library(geepack)); d <- read.csv("{csv}"); '
            'f <- geeglm(y ~ x, id = scene, data = d, family = binomial, corstr = "exchangeable", '
            'control = geese.control(epsilon = 1e-12, maxit = 100)); '
            's <- summary(f)$coefficients; '
            'cat(sprintf("%.17g", c(coef(f), s[, "Std.err"], f$geese$alpha)), sep = "\\n")')
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True)
    r = np.array([float(v) for v in out.stdout.split()])
    # like with like: geepack's alpha divides by N and the pairs (ddof 0), its SE has no G/(G-1)
    res = fit_gee(y, cond, scene, ddof_scale=0, small_sample=False)
    assert np.asarray(res.params) == pytest.approx(r[:2], abs=1e-8)
    assert np.asarray(res.bse) == pytest.approx(r[2:4], abs=1e-8)
    assert float(res.model.cov_struct.dep_params) == pytest.approx(r[4], abs=1e-8)
    scaled = fit_gee(y, cond, scene, ddof_scale=0)
    assert np.asarray(scaled.bse) == pytest.approx(r[2:4] * math.sqrt(G / (G - 1)), abs=1e-8)


def test_gee_interval_covers_the_truth():
    """150 studies of 40 scenes x (5 + 5) replies with scene random effects: the 95% GEE
    interval covers the true difference (the mean over scenes) in 90-99% of them."""
    a, b, sigma, G, per, studies = -0.2, 0.6, 0.8, 40, 5, 150
    x, w = np.polynomial.hermite_e.hermegauss(80)  # E over u ~ N(0, sigma^2)
    truth = float((w * (expit(a + b + sigma * x) - expit(a + sigma * x))).sum() / w.sum())
    rng = np.random.default_rng(2026)
    scene = np.repeat(np.arange(G), 2 * per)
    cond = np.tile(np.repeat([0, 1], per), G)
    covered, methods = 0, set()
    for _ in range(studies):
        u = rng.normal(0, sigma, G)
        y = (rng.random(len(scene)) < expit(a + b * cond + u[scene])).astype(int)
        c = compare(y, cond, scene)
        methods.add(c.method)
        covered += c.low <= truth <= c.high
    assert methods == {"gee"}
    assert 0.90 <= covered / studies <= 0.99, covered


# --- fallbacks ---------------------------------------------------------------------------------

def test_paired_when_a_condition_has_no_event():
    # 4 scenes, 5 + 5 replies; condition 0 never an event; per-scene differences 0.2, 0.4, 0, 0.6
    ones = [1, 2, 0, 3]
    y, cond, scene = [], [], []
    for g, k in enumerate(ones):
        y += [0] * 5 + [1] * k + [0] * (5 - k)
        cond += [0] * 5 + [1] * 5
        scene += [g] * 10
    c = compare(y, cond, scene)
    d = np.array([0.2, 0.4, 0.0, 0.6])
    se = math.sqrt(0.2 / 3) / 2  # sd = sqrt(sum((d - 0.3)^2) / 3), over sqrt(4)
    tq = 3.182446305284263  # t(0.975, 3 df)
    assert c.method == "paired" and c.G == 4 and c.n == 40 and c.df == 3
    assert c.diff == pytest.approx(0.3, abs=1e-12)
    assert (c.share0, c.share1) == pytest.approx((0.0, 0.3), abs=1e-12)
    assert c.se == pytest.approx(se, abs=1e-12)
    assert (c.low, c.high) == pytest.approx((0.3 - tq * se, 0.3 + tq * se), abs=1e-9)
    assert c.p == pytest.approx(sps.ttest_1samp(d, 0).pvalue, rel=1e-9)
    # statsmodels would not fail loudly here: the coefficients run off and the SE is useless
    res = fit_gee(y, cond, scene)
    assert abs(res.params[0]) > 10 or not np.all(np.isfinite(res.bse))


def test_paired_when_a_condition_has_every_reply_an_event():
    rng = np.random.default_rng(5)
    G = 12
    scene = np.repeat(np.arange(G), 8)
    cond = np.tile(np.repeat([0, 1], 4), G)
    y = np.where(cond == 1, 1, (rng.random(len(scene)) < 0.5).astype(int))
    c = compare(y, cond, scene)
    d = _per_scene_diffs(y, cond, scene)
    assert c.method == "paired" and c.share1 == 1.0
    assert c.diff == pytest.approx(d.mean(), abs=1e-12)
    assert c.p == pytest.approx(sps.ttest_1samp(d, 0).pvalue, rel=1e-9)


# --- the range of a difference of shares ----------------------------------------------------


def test_a_tiny_stratum_gets_an_interval_cut_at_plus_minus_one_and_marked():
    # 3 scenes, 2 + 2 replies each: t on G-2 = 1 df is 12.7, the delta-method interval runs
    # far past the range. Worked by hand: GEE on balanced clusters gives the raw shares
    # 2/6 and 5/6, diff 0.5; uncut it would be 0.5 ± 12.706 * 0.2887 = [-3.17, 4.17].
    y = [0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1]
    x = [0] * 6 + [1] * 6
    s = [0, 0, 1, 1, 2, 2] * 2
    c = compare(y, x, s)
    assert c.method == "gee" and c.df == 1
    assert c.diff == pytest.approx(0.5, abs=1e-9)
    tq = sps.t.ppf(0.975, 1)
    assert c.diff - tq * c.se < -1 and c.diff + tq * c.se > 1  # the uncut interval
    assert (c.low, c.high, c.clipped) == (-1.0, 1.0, True)  # the rule: cut and marked
    # the paired fallback (a condition with no event) is cut the same way
    y = [0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    c = compare(y, x, s)
    assert c.method == "paired" and c.clipped
    assert c.low == pytest.approx(0.5 - sps.t.ppf(0.975, 2) * c.se) and c.high == 1.0
    # an interval inside the range is not touched
    assert not compare(*_balanced(40, 1)).clipped



def test_the_fast_and_the_statsmodels_fit_give_the_same_interval_clipped_or_not():
    """The power simulation's fast path (``fast=True``) and ``analyze``'s statsmodels fit share
    one delta-method interval and one rule for its ends: on random small studies (3-5 scenes,
    so a third of the intervals reach past ±1) the bounds and the mark agree wherever both
    fits reach the same estimate (statsmodels says it converged)."""
    rng = np.random.default_rng(1)
    seen = {True: 0, False: 0}
    for _ in range(60):
        G = int(rng.integers(3, 6))
        u, lo, effect = rng.normal(0, 0.5, G), rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)
        rows = [(int(rng.random() < expit(lo + effect * c + u[g])), c, g)
                for g in range(G) for c in (0, 1) for _ in range(int(rng.integers(4, 10)))]
        y, x, s = np.array(rows).T
        try:
            exact, fast = compare(y, x, s), compare(y, x, s, fast=True)
        except (ValueError, RuntimeError):
            continue
        if exact.method == "gee" and not fit_gee(y, x, s).converged:
            continue
        assert (fast.method, fast.clipped) == (exact.method, exact.clipped)
        assert (fast.low, fast.high) == pytest.approx((exact.low, exact.high), abs=1e-8)
        assert -1.0 <= fast.low <= fast.high <= 1.0
        seen[exact.clipped] += 1
    assert seen[True] >= 10 and seen[False] >= 10  # both kinds were compared


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 3)),
                min_size=6, max_size=24))
def test_no_interval_leaves_the_range_of_a_difference(data):
    y, x, s = (list(v) for v in zip(*data, strict=True))
    try:
        c = compare(y, x, s)
    except (ValueError, RuntimeError):
        return
    assert -1.0 <= c.low <= c.high <= 1.0
    assert c.clipped == (c.method != "bound" and (c.low == -1.0 or c.high == 1.0))


@pytest.mark.parametrize("G", [1, 10, 160])
def test_bound_at_zero(G):
    # every scene the same share in both conditions (shares differ between scenes)
    k = np.arange(G) % 6
    y, cond, scene = [], [], []
    for g in range(G):
        row = [1] * k[g] + [0] * (5 - k[g])
        y += row + row
        cond += [0] * 5 + [1] * 5
        scene += [g] * 10
    c = compare(y, cond, scene)
    U = 1 - 0.025 ** (1 / G)
    assert c.method == "bound" and c.G == G and c.diff == 0.0 and c.p == 1.0
    assert (c.low, c.high) == pytest.approx((-U, U), abs=1e-15)
    assert c.se is None and c.df is None
    if G == 160:
        assert round_half_away(100 * c.high, 1) == 2.3  # "2.3 points on 160 scenes"


def test_bound_when_nobody_ever_answers_yes():
    """No event at all: bound (checked first), not paired."""
    c = compare([0] * 40, [0, 1] * 20, np.repeat(np.arange(20), 2))
    assert c.method == "bound" and c.diff == 0.0 and c.p == 1.0


@pytest.mark.parametrize("c_true, G", [(0.2, 10), (-0.4, 30), (1.0, 1)])
def test_bound_at_a_constant_difference(c_true, G):
    y, cond, scene = [], [], []
    step = round(abs(c_true) * 5)
    for g in range(G):
        k0 = g % (6 - step)  # shares vary between scenes, the difference does not
        k1 = k0 + step
        if c_true < 0:
            k0, k1 = k1, k0
        y += [1] * k0 + [0] * (5 - k0) + [1] * k1 + [0] * (5 - k1)
        cond += [0] * 5 + [1] * 5
        scene += [g] * 10
    c = compare(y, cond, scene)
    U = 1 - 0.025 ** (1 / G)
    assert c.method == "bound" and c.diff == pytest.approx(c_true, abs=1e-12)
    assert c.low == pytest.approx(c_true - (c_true + 1) * U, abs=1e-12)
    assert c.high == pytest.approx(c_true + (1 - c_true) * U, abs=1e-12)
    assert c.p == pytest.approx(min(1.0, 2 * 0.5**G), rel=1e-12)  # exact sign test
    if G == 10:
        assert c.p == pytest.approx(sps.binomtest(G, G, 0.5).pvalue, rel=1e-12)


def test_bad_input():
    with pytest.raises(ValueError):
        compare([0, 1, 2], [0, 1, 0], [0, 0, 0])
    with pytest.raises(ValueError):
        compare([0, 1], [0, 0], [0, 1])  # one condition only
    with pytest.raises(ValueError):
        compare([0, 1, 1], [0, 1], [0, 1, 1])


# --- BH, marks, equivalence ------------------------------------------------------------------

def test_bh_by_hand():
    # m = 5, p_(k) * m / k = 0.05, 0.05, 0.05, 0.05, 0.20: the first four are rejected at 0.05
    rejected, adjusted = bh([0.01, 0.02, 0.03, 0.04, 0.20], q=0.05)
    assert rejected.tolist() == [True, True, True, True, False]
    assert adjusted == pytest.approx([0.05, 0.05, 0.05, 0.05, 0.20], abs=1e-15)
    # unsorted, with the step-up minimum: sorted 0.001, 0.03, 0.04, 0.5 -> 0.004, 0.06, 0.0533, 0.5
    rejected, adjusted = bh([0.04, 0.001, 0.5, 0.03])
    assert rejected.tolist() == [False, True, False, False]
    assert adjusted == pytest.approx([0.16 / 3, 0.004, 0.5, 0.16 / 3], abs=1e-15)


def _comp(low, high, diff=None):
    diff = (low + high) / 2 if diff is None else diff
    return Comparison(diff=diff, low=low, high=high, p=0.01, method="gee", share0=0.5,
                      share1=0.5 + diff, n=100, G=10)


def test_mark():
    assert mark(_comp(0.01, 0.2), 0.03) == "*"
    assert mark(_comp(-0.2, -0.01), 0.05) == "*"  # adjusted p = q survives, as in BH
    assert mark(_comp(0.01, 0.2), 0.058) == "†"  # the paper's two † estimates
    assert mark(_comp(-0.01, 0.2), 0.001) == ""
    assert mark(_comp(0.0, 0.2), 0.001) == ""  # touching zero does not exclude it


def test_equivalent():
    assert equivalent(_comp(-0.05, 0.08))
    assert equivalent(_comp(-0.10, 0.10))
    assert not equivalent(_comp(-0.05, 0.11))
    assert not equivalent(_comp(-0.12, 0.0))
    assert equivalent(_comp(-0.12, 0.0), margin=0.15)


# --- rounding, single shares -------------------------------------------------------------------

@pytest.mark.parametrize("x, places, expected", [
    (0.00005, 4, 0.0001), (-0.00005, 4, -0.0001), (0.12345, 4, 0.1235), (-0.12345, 4, -0.1235),
    (0.12344999, 4, 0.1234), (0.00015, 4, 0.0002), (0.00025, 4, 0.0003), (1.0, 4, 1.0),
    (0.1, 4, 0.1), (-0.0, 4, 0.0), (Decimal("0.00035"), 4, 0.0004), ("0.00045", 4, 0.0005),
    (3, 4, 3.0), (2.25, 1, 2.3), (-2.25, 1, -2.3), (12.5, 0, 13.0), (-0.5, 0, -1.0),
    # an exact half (11/160) reached with float noise, from either side, rounds as a half
    (0.06874999999999998, 4, 0.0688), (0.06875000000000002, 4, 0.0688),
    (-0.06874999999999998, 4, -0.0688), (0.0687499999, 4, 0.0687),
])
def test_round_half_away(x, places, expected):
    assert round_half_away(x, places) == expected


def test_round_half_away_non_finite():
    assert math.isnan(round_half_away(math.nan))
    assert round_half_away(math.inf) == math.inf


def test_share_interval():
    rng = np.random.default_rng(3)
    G = 30
    sizes = rng.integers(2, 12, G)
    scene = np.repeat(np.arange(G), sizes)
    y = (rng.random(len(scene)) < rng.uniform(0.1, 0.9, G)[scene]).astype(int)
    share, low, high = share_interval(y, scene, n_boot=2000, seed=0)
    assert share == y.mean()
    assert 0 <= low < share < high <= 1
    assert share_interval(y, scene, n_boot=2000, seed=0) == (share, low, high)  # reproducible
    assert share_interval(y, scene, n_boot=2000, seed=1) != (share, low, high)
    # the same draws done slowly: resample scenes, pool their replies (not the mean of shares)
    draws = np.random.default_rng(0).integers(0, G, size=(2000, G))
    boot = [np.concatenate([y[scene == g] for g in d]).mean() for d in draws]
    assert (low, high) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])), abs=1e-12)
    # string scene ids, rows shuffled: the same share
    perm = rng.permutation(len(y))
    s2, _, _ = share_interval(y[perm], np.array([f"s{g}" for g in scene[perm]]))
    assert s2 == pytest.approx(share, abs=1e-15)


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=60),
       st.sampled_from([0.01, 0.05, 0.1]))
@settings(max_examples=200, deadline=None)
def test_bh_matches_statsmodels(pvalues, q):
    from statsmodels.stats.multitest import multipletests

    rejected, adjusted = bh(pvalues, q=q)
    want_rej, want_adj, _, _ = multipletests(pvalues, alpha=q, method="fdr_bh")
    assert rejected.tolist() == want_rej.tolist()
    assert adjusted == pytest.approx(want_adj, abs=1e-12)


def _plain_statsmodels(y, x, s, ddof_scale=None):
    """statsmodels' GEE from its own start (the independence fit, no correlation)."""
    import warnings

    from statsmodels.genmod.cov_struct import Exchangeable
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_estimating_equations import GEE

    y, x, s = (np.asarray(v, dtype=float) for v in (y, x, s))
    G = len(np.unique(s))
    model = GEE(y, np.column_stack([np.ones_like(y), x]), groups=s, family=Binomial(),
                cov_struct=Exchangeable())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(cov_type="robust", ddof_scale=ddof_scale, ctol=1e-10,
                         scaling_factor=G / (G - 1))


@pytest.mark.parametrize("ddof_scale", [None, 0])
def test_the_fit_started_from_the_counts_is_statsmodels_own(ddof_scale):
    """fit_gee starts statsmodels where the count fit ends (coefficients and correlation):
    the same coefficients, correlation and robust covariance as statsmodels from its own
    start, to 1e-9, in far fewer iterations (each a loop over the scenes)."""
    rng = np.random.default_rng(7)
    ours = theirs = compared = 0
    for _ in range(30):
        G = int(rng.integers(5, 60))
        u = rng.normal(0, 1, G)
        rows = [(int(rng.random() < expit(-0.4 + 0.9 * c + u[g])), c, g)
                for g in range(G) for c in (0, 1) for _ in range(int(rng.integers(2, 7)))]
        y, x, s = np.array(rows).T
        fit, plain = fit_gee(y, x, s, ddof_scale=ddof_scale), _plain_statsmodels(y, x, s,
                                                                                 ddof_scale)
        if not plain.converged:
            continue
        assert fit.params == pytest.approx(plain.params, abs=1e-9)
        assert np.asarray(fit.cov_params()) == pytest.approx(np.asarray(plain.cov_params()),
                                                             abs=1e-9)
        assert fit.model.cov_struct.dep_params == pytest.approx(
            plain.model.cov_struct.dep_params, abs=1e-9)
        ours += len(fit.fit_history["params"])
        theirs += len(plain.fit_history["params"])
        compared += 1
    assert compared >= 25 and ours < 0.6 * theirs


def test_where_the_counts_cannot_start_the_fit_is_statsmodels_from_its_own_start():
    """No event at all under one condition: the count fit has no start (log 0), and the fit
    is statsmodels' from its own start, as it was."""
    y = [0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1]
    x = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    s = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    fit, plain = fit_gee(y, x, s), _plain_statsmodels(y, x, s)
    assert len(fit.fit_history["params"]) == len(plain.fit_history["params"])
    assert np.allclose(fit.params, plain.params, equal_nan=True)
