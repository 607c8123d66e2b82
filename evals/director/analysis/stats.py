"""The Director paper's estimators (appendix, "Estimators" and "The corrections").

A comparison is a difference of shares between two conditions, fitted on the answered replies
with the scene as the cluster:

- ``"gee"``: logit P(y=1) = b0 + b1 x, exchangeable working correlation estimated by moments
  (statsmodels' default), cluster-robust sandwich covariance times G/(G-1)
  (``fit(cov_type="robust", scaling_factor=G/(G-1))``); the difference of the fitted shares
  p1 - p0 gets a delta-method t interval on G-2 degrees of freedom, and the two-sided p comes
  from the same t statistic.
- ``"paired"``, where a condition has no event: the mean over scenes of the per-scene
  differences, with a t interval on G-1 degrees of freedom and the one-sample t-test's p.
- ``"bound"``, where every scene gives the same difference c: [c-(c-l)U, c+(u-c)U] with
  U = 1 - 0.025^(1/G), l = -1, u = 1; p = 1 at c = 0, else the exact two-sided sign test
  (all G scenes agree in sign), 2 * 0.5^G capped at 1.

The estimator is chosen from the data, in that order: bound, then paired, else gee. statsmodels
returns ``converged=True`` with NaN standard errors at the edges, so warnings are never read.

``compare(..., fast=True)`` fits the same GEE from per-scene counts instead of statsmodels
(:func:`_gee_counts`: with one binary covariate every sum over a cluster's replies reduces to
four counts), ~50 times faster and the same numbers to ~1e-9: for simulations that fit
thousands of comparisons (``power``); ``analyze`` keeps statsmodels. Both fits go through one
delta-method interval and one rule for its bounds (:func:`_delta_method`).

A difference of shares lies in [-1, 1], but a t interval on few clusters (t on 1 degree of
freedom is 12.7) can reach past it. **The rule**: a gee or paired interval is cut at [-1, 1]
(``low = max(low, -1)``, ``high = min(high, 1)``) and marked ``clipped``; the estimate and p
are unchanged. The cut interval covers the true difference whenever the uncut one does (the
truth lies in [-1, 1]), so coverage is not lowered; the mark tells the reader that the
interval is as wide as the range allows on that side. The bound estimator's interval never
leaves [-1, 1].

Decisions, beyond the paper's words:

- "No event" is read as separation: the paired estimator is also used when a condition has
  every reply an event (share 1). For this two-parameter logit these are exactly the cases in
  which the fitted coefficients do not exist (b0 or b1 runs off to infinity).
- A per-scene difference needs the scene in both conditions. The bound and paired estimators
  use the scenes that have replies in both conditions (their G counts those); GEE uses every
  reply and every scene. The bound check ("every scene gives the same difference") is made on
  the scenes with both conditions.
- ``share0``/``share1`` are the estimator's own shares, so that ``diff == share1 - share0``:
  GEE's fitted shares, or for paired and bound the mean over scenes of the per-scene shares.
- GEE needs G >= 3 (t on G-2 df) and paired G >= 2; fewer clusters raise ``ValueError``. If
  GEE gives non-finite numbers on data with both shares strictly inside (0, 1) (which should not
  happen), ``RuntimeError`` is raised rather than a silent fallback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import stats as sps
from scipy.special import expit, stdtr

Method = Literal["gee", "paired", "bound"]

LOW, HIGH = -1.0, 1.0  # range of a per-scene difference of shares
_SAME = 1e-12  # per-scene differences are ratios of small counts: equal ones agree to ~1e-16


@dataclass(frozen=True)
class Comparison:
    """A difference of shares, share1 - share0, with its 95% interval and two-sided p."""

    diff: float
    low: float
    high: float
    p: float
    method: Method
    share0: float
    share1: float
    n: int  # replies used
    G: int  # clusters (scenes) used
    se: float | None = None  # standard error (gee, paired); None for bound
    df: int | None = None  # t degrees of freedom (gee, paired); None for bound
    clipped: bool = False  # the t interval reached past [-1, 1] and was cut there

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def _arrays(y, condition, scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.asarray(y)
    x = np.asarray(condition)
    s = np.asarray(scene)
    if not (y.ndim == x.ndim == s.ndim == 1 and len(y) == len(x) == len(s)):
        raise ValueError("y, condition and scene must be 1-d and of equal length")
    if len(y) == 0:
        raise ValueError("no replies")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("y must be 0 or 1")
    if not np.all((x == 0) | (x == 1)):
        raise ValueError("condition must be 0 or 1")
    if not (np.any(x == 0) and np.any(x == 1)):
        raise ValueError("both conditions need replies")
    _, codes = np.unique(s, return_inverse=True)
    return y.astype(float), x.astype(int), codes.astype(int)


def _per_scene(y: np.ndarray, x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-scene shares under 0 and 1, over the scenes with replies in both conditions."""
    k = g.max() + 1
    n0 = np.bincount(g, weights=(x == 0), minlength=k)
    n1 = np.bincount(g, weights=(x == 1), minlength=k)
    e0 = np.bincount(g, weights=y * (x == 0), minlength=k)
    e1 = np.bincount(g, weights=y * (x == 1), minlength=k)
    both = (n0 > 0) & (n1 > 0)
    n_used = int((n0[both] + n1[both]).sum())
    return e0[both] / n0[both], e1[both] / n1[both], n_used


def fit_gee(y, condition, scene, *, ddof_scale: int | None = None, small_sample: bool = True,
            ctol: float = 1e-10):
    """statsmodels' GEE logit of ``y`` on ``[1, condition]`` with the scene as the cluster and an
    exchangeable working correlation estimated by moments. Returns the results; ``cov_params()``
    is the robust sandwich times G/(G-1) when ``small_sample`` (geepack's has no such factor).
    ``ddof_scale=None`` is statsmodels' default (the moment estimate of the correlation divides
    by N-2 and pairs-2); ``ddof_scale=0`` reproduces R's geepack. ``ctol`` is tighter than
    statsmodels' 1e-6 (one or two more iterations) so that the estimate does not depend on it.

    statsmodels starts from the independence fit with no correlation and takes about seven
    iterations, each a Python loop over the clusters. Here it starts where the count fit
    (:func:`_gee_counts`) ends: its coefficients and its correlation. It then takes two or
    three iterations and reaches the same fixed point (about 1e-12 apart in coefficients,
    correlation and covariance, on 40 seeded designs). The fit and its covariance are still
    statsmodels'. Where the count fit cannot start (a share of 0 or 1), statsmodels' own start
    is kept."""
    import warnings

    from statsmodels.genmod.cov_struct import Exchangeable
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_estimating_equations import GEE

    yv, x, g = _arrays(y, condition, scene)
    G = int(g.max()) + 1
    X = np.column_stack([np.ones_like(yv), x.astype(float)])
    model = GEE(yv, X, groups=g, family=Binomial(), cov_struct=Exchangeable())
    start = None
    with warnings.catch_warnings():  # outcomes are judged from the numbers, never from warnings
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                b0, b1, _, alpha = _gee_counts(yv, x, g, G,
                                               ddof=2 if ddof_scale is None else ddof_scale)
                if all(math.isfinite(v) for v in (b0, b1, alpha)):
                    start = np.array([b0, b1])
                    model.cov_struct.dep_params = alpha
            except (ValueError, ZeroDivisionError, OverflowError, np.linalg.LinAlgError):
                pass  # statsmodels' own start
        return model.fit(start_params=start, cov_type="robust", ddof_scale=ddof_scale,
                         ctol=ctol, scaling_factor=G / (G - 1) if small_sample else 1.0)


def _clip(low: float, high: float) -> tuple[float, float, bool]:
    """The interval cut at the range of a difference of shares (module docstring, "The
    rule"), and whether it was cut."""
    cut_low, cut_high = max(low, LOW), min(high, HIGH)
    return cut_low, cut_high, (cut_low, cut_high) != (low, high)


def _bound(c: float, G: int) -> tuple[float, float, float]:
    U = 1.0 - 0.025 ** (1.0 / G)
    low, high = c - (c - LOW) * U, c + (HIGH - c) * U
    p = 1.0 if c == 0 else min(1.0, 2.0 * 0.5**G)
    return low, high, p


def compare(y: Sequence[int] | np.ndarray, condition: Sequence[int] | np.ndarray,
            scene: Sequence | np.ndarray, *, fast: bool = False) -> Comparison:
    """share(condition=1) - share(condition=0), clustered by scene; see the module docstring
    (``fast``: the GEE fitted from per-scene counts, not by statsmodels)."""
    yv, x, g = _arrays(y, condition, scene)
    s0, s1, n_both = _per_scene(yv, x, g)
    d = s1 - s0
    Gb = len(d)

    # 1. bound: every scene (with both conditions) gives the same difference
    if Gb >= 1 and np.all(np.abs(d - d[0]) <= _SAME):
        c = float(d.mean())
        c = 0.0 if abs(c) <= _SAME else c
        low, high, p = _bound(c, Gb)
        return Comparison(diff=c, low=low, high=high, p=p, method="bound",
                          share0=float(s0.mean()), share1=float(s1.mean()), n=n_both, G=Gb)

    # 2. paired: a condition with no event (or, by the same separation, every reply an event)
    m0, m1 = yv[x == 0].mean(), yv[x == 1].mean()
    if m0 in (0.0, 1.0) or m1 in (0.0, 1.0):
        if Gb < 2:
            raise ValueError(f"the paired estimator needs at least 2 scenes in both conditions, got {Gb}")
        diff = float(d.mean())
        se = float(d.std(ddof=1) / math.sqrt(Gb))
        df = Gb - 1
        tq = _t975(df)
        p = 2 * _t_sf(abs(diff / se), df)
        low, high, clipped = _clip(diff - tq * se, diff + tq * se)
        return Comparison(diff=diff, low=low, high=high, p=p,
                          method="paired", share0=float(s0.mean()), share1=float(s1.mean()),
                          n=n_both, G=Gb, se=se, df=df, clipped=clipped)

    # 3. gee
    G = int(g.max()) + 1
    if G < 3:
        raise ValueError(f"GEE's t interval on G-2 df needs at least 3 scenes, got {G}")
    if fast:
        b0, b1, V, _ = _gee_counts(yv, x, g, G)
    else:
        res = fit_gee(yv, x, g)
        b0, b1 = (float(v) for v in res.params)
        V = np.asarray(res.cov_params(), dtype=float)
    return _delta_method(b0, b1, V, n=len(yv), G=G)


def _delta_method(b0: float, b1: float, V: np.ndarray, n: int, G: int) -> Comparison:
    """The GEE comparison from its fit: the difference of the fitted shares p1 - p0 with its
    delta-method t interval on G-2 degrees of freedom, cut by the rule (module docstring)."""
    p0, p1 = float(expit(b0)), float(expit(b0 + b1))
    grad = np.array([p1 * (1 - p1) - p0 * (1 - p0), p1 * (1 - p1)])
    se = float(math.sqrt(grad @ V @ grad)) if np.all(np.isfinite(V)) else math.nan
    diff = p1 - p0
    if not (math.isfinite(diff) and math.isfinite(se) and se > 0):
        raise RuntimeError(f"GEE gave a non-finite or zero standard error (b={b0}, {b1}; se={se})")
    df = G - 2
    tq = _t975(df)
    p = 2 * _t_sf(abs(diff / se), df)
    low, high, clipped = _clip(diff - tq * se, diff + tq * se)
    return Comparison(diff=diff, low=low, high=high, p=p, method="gee",
                      share0=p0, share1=p1, n=n, G=G, se=se, df=df, clipped=clipped)


def _gee_counts(y: np.ndarray, x: np.ndarray, g: np.ndarray, G: int, tol: float = 1e-10,
                maxiter: int = 100, ddof: int = 2
                ) -> tuple[float, float, np.ndarray, float]:
    """:func:`fit_gee`'s fit from each scene's replies (n0, n1) and events (e0, e1) under x = 0
    and x = 1: logit link, exchangeable working correlation by statsmodels' moment estimator
    (``ddof_scale`` = ``ddof``, statsmodels' default 2), robust sandwich times G/(G-1). An
    iteration costs a few vector operations instead of a Python loop over clusters, and
    reaches the same fixed point (the score equations at the moment estimate of the
    correlation). Returns (b0, b1, cov, alpha)."""
    n0 = np.bincount(g, weights=(x == 0), minlength=G)
    n1 = np.bincount(g, weights=(x == 1), minlength=G)
    e0 = np.bincount(g, weights=y * (x == 0), minlength=G)
    e1 = np.bincount(g, weights=y * (x == 1), minlength=G)
    k = n0 + n1
    n_pairs = float((k * (k - 1) / 2).sum())
    N = float(k.sum())

    def at(b0: float, b1: float):
        m0, m1 = 1 / (1 + math.exp(-b0)), 1 / (1 + math.exp(-(b0 + b1)))
        v0, v1 = m0 * (1 - m0), m1 * (1 - m1)
        s0, s1 = math.sqrt(v0), math.sqrt(v1)
        r0, r1 = e0 - n0 * m0, e1 - n1 * m1  # a cluster's summed raw residuals
        t = r0 / s0 + r1 / s1  # ... and summed Pearson residuals
        ssr = ((e0 * (1 - m0) ** 2 + (n0 - e0) * m0**2) / v0
               + (e1 * (1 - m1) ** 2 + (n1 - e1) * m1**2) / v1)
        scale = ssr.sum() / (N - ddof)
        alpha = ((t * t - ssr).sum() / 2 / scale) / (n_pairs - ddof) if n_pairs > ddof else 0.0
        # V^-1 of a cluster of size k: (I/(1-alpha) - c 11') in Pearson units
        c = alpha / (1 - alpha) / (1 + alpha * (k - 1))
        u0, u1 = n0 * s0 + n1 * s1, n1 * s1
        score = np.stack([(r0 + r1) / (1 - alpha) - c * t * u0,
                          r1 / (1 - alpha) - c * t * u1], axis=-1)  # (G, 2): D'V^-1 r
        w = (n1 * v1).sum()
        B = np.array([[(n0 * v0).sum() + w, w], [w, w]]) / (1 - alpha) - np.array(
            [[(c * u0 * u0).sum(), (c * u0 * u1).sum()],
             [(c * u0 * u1).sum(), (c * u1 * u1).sum()]])  # D'V^-1 D
        return alpha, score, B

    E0, E1, N0, N1 = e0.sum(), e1.sum(), n0.sum(), n1.sum()
    b0 = math.log(E0 / (N0 - E0))  # the independence fit: the pooled shares
    b1 = math.log(E1 / (N1 - E1)) - b0
    alpha_prev = math.inf
    for _ in range(maxiter):
        alpha, score, B = at(b0, b1)
        total = score.sum(axis=0)
        step = np.linalg.solve(B, total)
        b0, b1 = b0 + float(step[0]), b1 + float(step[1])
        if float(np.sqrt(total @ total)) < tol and abs(alpha - alpha_prev) < tol:
            break
        alpha_prev = alpha
    alpha, score, B = at(b0, b1)
    Bi = np.linalg.inv(B)
    return b0, b1, Bi @ (score.T @ score) @ Bi * (G / (G - 1)), alpha


@lru_cache(maxsize=64)
def _t975(df: int) -> float:
    """The t distribution's 97.5 % quantile (cached: a power simulation asks it thousands of
    times for a few df)."""
    return float(sps.t.ppf(0.975, df))


def _t_sf(t: float, df: int) -> float:
    """P(T > t) on ``df`` degrees of freedom (``scipy.stats.t.sf``, without its overhead)."""
    return float(stdtr(df, -t))


def share_interval(y, scene, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """A single share with its 95% percentile interval over ``n_boot`` scene resamples (scenes
    drawn with replacement, their replies pooled). Reproducible for a given ``seed``."""
    yv = np.asarray(y, dtype=float)
    if yv.ndim != 1 or len(yv) != len(scene) or len(yv) == 0:
        raise ValueError("y and scene must be 1-d, non-empty and of equal length")
    g = _codes(scene)
    G = int(g.max()) + 1
    events = np.bincount(g, weights=yv, minlength=G)
    counts = np.bincount(g, minlength=G).astype(float)
    if np.array_equal(events, np.round(events)):
        # whole numbers of events (y is 0 or 1): each resample's sums as one product with how
        # often it drew each scene, exactly the sums of the draws (integers add exactly)
        drawn = _drawn(G, n_boot, seed)
        boot = (drawn @ events) / (drawn @ counts)
    else:
        idx = _draws(G, n_boot, seed)
        boot = events[idx].sum(axis=1) / counts[idx].sum(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(yv.mean()), float(low), float(high)


def _codes(scene) -> np.ndarray:
    """Each reply's scene as 0..G-1 in the scenes' sorted order (``np.unique``'s inverse; for a
    list of strings without building and sorting a string array)."""
    if isinstance(scene, list) and all(type(v) is str for v in scene):
        code = {v: i for i, v in enumerate(sorted(set(scene)))}
        return np.fromiter((code[v] for v in scene), dtype=np.intp, count=len(scene))
    s = np.asarray(scene)
    if s.ndim != 1:
        raise ValueError("y and scene must be 1-d, non-empty and of equal length")
    return np.unique(s, return_inverse=True)[1].reshape(-1)


@lru_cache(maxsize=16)
def _draws(G: int, n_boot: int, seed: int) -> np.ndarray:
    """The scenes drawn in each resample: ``default_rng(seed).integers(0, G, (n_boot, G))``
    (the same for every share of G scenes: a study's thousand intervals draw them once)."""
    idx = np.random.default_rng(seed).integers(0, G, size=(n_boot, G))
    idx.setflags(write=False)
    return idx


@lru_cache(maxsize=16)
def _drawn(G: int, n_boot: int, seed: int) -> np.ndarray:
    """How often each resample of :func:`_draws` drew each scene, (n_boot, G)."""
    idx = _draws(G, n_boot, seed)
    flat = (idx + G * np.arange(n_boot)[:, None]).ravel()
    out = np.bincount(flat, minlength=n_boot * G).reshape(n_boot, G).astype(float)
    out.setflags(write=False)
    return out


def bh(pvalues: Sequence[float] | np.ndarray, q: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg at false discovery rate ``q`` over one family: (rejected, adjusted p)."""
    from statsmodels.stats.multitest import multipletests

    rejected, adjusted, _, _ = multipletests(np.asarray(pvalues, dtype=float), alpha=q,
                                             method="fdr_bh")
    return np.asarray(rejected, dtype=bool), np.asarray(adjusted, dtype=float)


def mark(comp: Comparison, adjusted_p: float, q: float = 0.05) -> str:
    """"*" when the interval excludes zero and the comparison survives BH (adjusted p <= q);
    "†" when the interval excludes zero but the comparison fails the correction; else ""."""
    if not comp.excludes_zero:
        return ""
    return "*" if adjusted_p <= q else "†"


def equivalent(comp: Comparison, margin: float = 0.10) -> bool:
    """Whether the interval lies within [-margin, +margin] (ends included)."""
    return -margin <= comp.low and comp.high <= margin


def round_half_away(x: float | int | str | Decimal, places: int = 4) -> float:
    """``x`` rounded to ``places`` decimals, an exact half away from zero. A float is read to 12
    significant digits, not by its binary expansion (0.12345 -> "0.12345" -> 0.1235): an
    exact half reached with float noise (a GEE share of 11/160 came out as
    0.06874999999999998 or 0.06875000000000002, by the iterations' path) rounds as the half
    it is (0.0688)."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    d = x if isinstance(x, Decimal) else Decimal(format(x, ".12g") if isinstance(x, float)
                                                 else str(x))
    return float(d.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
