"""``stats.compare`` for binary data, vectorised: the same estimators, ~50x faster.

For simulations that fit thousands of comparisons (``power``): per-scene counts instead of
reply rows; the logit GEE with an exchangeable working correlation estimated by moments, the
sandwich times G/(G−1) and the delta-method t interval on G−2 degrees of freedom, and the
paired and bound fallbacks chosen by the same rules. Tested against ``stats.compare``
(statsmodels) to 1e-12; ``analyze`` keeps using statsmodels.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import stats


def _gee_binary(n0: np.ndarray, n1: np.ndarray, e0: np.ndarray, e1: np.ndarray,
                tol: float = 1e-10, maxiter: int = 100) -> tuple[float, float, np.ndarray]:
    """``stats.fit_gee``'s fit, from each cluster's replies (n0, n1) and events (e0, e1) under
    x = 0 and x = 1: logit link, exchangeable working correlation by statsmodels' moment
    estimator (``ddof_scale`` = 2), robust sandwich times G/(G-1). With one binary covariate every
    sum over a cluster's replies reduces to these four counts, so an iteration costs a few vector
    operations instead of a Python loop over clusters. It iterates to the same fixed point
    (the score equations at the moment estimate of the correlation). Returns (b0, b1, cov)."""
    k = n0 + n1
    n_pairs = float((k * (k - 1) / 2).sum())
    N, G, ddof = float(k.sum()), len(k), 2.0

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
    return b0, b1, Bi @ (score.T @ score) @ Bi * (G / (G - 1))


def fast_compare(y: np.ndarray, x: np.ndarray, scene: np.ndarray) -> stats.Comparison:
    """``stats.compare`` (bound, then paired, else GEE; same numbers to ~1e-9) for 0/1 arrays,
    with the GEE fitted by :func:`_gee_binary`. Raises ``ValueError`` as ``compare`` does."""
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=int)
    if len(y) == 0:
        raise ValueError("no replies")
    if not (np.any(x == 0) and np.any(x == 1)):
        raise ValueError("both conditions need replies")
    _, g = np.unique(np.asarray(scene), return_inverse=True)
    s0, s1, n_both = stats._per_scene(y, x, g)
    d = s1 - s0
    Gb = len(d)
    if Gb >= 1 and np.all(np.abs(d - d[0]) <= stats._SAME):
        cval = float(d.mean())
        cval = 0.0 if abs(cval) <= stats._SAME else cval
        low, high, p = stats._bound(cval, Gb)
        return stats.Comparison(diff=cval, low=low, high=high, p=p, method="bound",
                                share0=float(s0.mean()), share1=float(s1.mean()), n=n_both, G=Gb)
    m0, m1 = y[x == 0].mean(), y[x == 1].mean()
    if m0 in (0.0, 1.0) or m1 in (0.0, 1.0):
        return stats.compare(y, x, g)  # the paired estimator: cheap, take it from the source
    G = int(g.max()) + 1
    if G < 3:
        raise ValueError(f"GEE's t interval on G-2 df needs at least 3 scenes, got {G}")
    n0 = np.bincount(g, weights=(x == 0), minlength=G)
    n1 = np.bincount(g, weights=(x == 1), minlength=G)
    e0 = np.bincount(g, weights=y * (x == 0), minlength=G)
    e1 = np.bincount(g, weights=y * (x == 1), minlength=G)
    b0, b1, V = _gee_binary(n0, n1, e0, e1)
    p0, p1 = 1 / (1 + math.exp(-b0)), 1 / (1 + math.exp(-(b0 + b1)))
    grad = np.array([p1 * (1 - p1) - p0 * (1 - p0), p1 * (1 - p1)])
    se = float(math.sqrt(grad @ V @ grad)) if np.all(np.isfinite(V)) else math.nan
    diff = p1 - p0
    if not (math.isfinite(diff) and math.isfinite(se) and se > 0):
        raise RuntimeError(f"GEE gave a non-finite or zero standard error (b={b0}, {b1}; se={se})")
    df = G - 2
    tq = float(_t975(df))
    p = float(2 * _t_sf(abs(diff / se), df))
    return stats.Comparison(diff=diff, low=diff - tq * se, high=diff + tq * se, p=p, method="gee",
                            share0=p0, share1=p1, n=len(y), G=G, se=se, df=df)


@lru_cache(maxsize=64)
def _t975(df: int) -> float:
    from scipy import stats as sps

    return float(sps.t.ppf(0.975, df))


def _t_sf(t: float, df: int) -> float:
    from scipy.special import stdtr

    return float(stdtr(df, -t))


