"""Percentile bootstrap over instances, vectorised with numpy.

The estimator, stated once:

- The unit is the *instance*. When an instance has several samples (trajectories), its value
  is the mean over its samples, so an instance counts once however often it was sampled.
- A statistic is the mean over instances of those values (``NaN`` values, e.g. a Dist left
  out for an unanswered instance, are left out of the mean).
- Interval: draw ``B`` (default 2,000) resamples of the ``n`` instances with replacement,
  all at once as a ``B × n`` index matrix from ``numpy.random.default_rng(seed)``; take the
  mean of each resample; the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of those
  ``B`` means (numpy's default, linear interpolation) are the interval's bounds.
- Paired difference between two rows: over the instances both rows have, the per-instance
  difference ``a_i − b_i``; its mean is the point estimate and the same resampling of those
  shared instances gives the interval. An interval that excludes zero is "significant".

Every call starts a fresh generator from ``seed``, so an interval depends only on its own data
and the seed, never on what else was bootstrapped before it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95


def resample_counts(n: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """A ``resamples × n`` matrix: how often each instance is drawn in each resample.

    All ``resamples × n`` indices are drawn at once; row ``b`` counts resample ``b``.
    """
    if n < 1:
        raise ValueError("cannot bootstrap an empty sample")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    flat = idx + n * np.arange(resamples)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n)


def _means(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Resample means (``B × k``) of the columns of ``values`` (``n × k``), NaN left out.

    Each column is centred on its first finite value before the weighted sum, so a column
    of equal values gives exactly that value in every resample (a zero-width interval).
    """
    finite = np.isfinite(values)
    first = np.where(finite.any(axis=0), values[finite.argmax(axis=0), np.arange(values.shape[1])], 0.0)
    centred = np.where(finite, values - first, 0.0)
    weights = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return weights @ centred / (weights @ finite) + first


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0,
    level: float = LEVEL,
) -> np.ndarray:
    """Percentile interval(s) of the mean over instances.

    ``values``: one value per instance (shape ``n``) or one column per statistic (``n × k``;
    every column shares the same resamples). Returns ``[low, high]`` (shape ``2`` or
    ``2 × k``); NaN where a column has no finite value.
    """
    arr = np.asarray(values, dtype=np.float64)
    one = arr.ndim == 1
    arr = arr[:, None] if one else arr
    means = _means(resample_counts(arr.shape[0], resamples, seed), arr)
    alpha = (1 - level) / 2
    with warnings.catch_warnings():  # an all-NaN column gives NaN bounds, quietly
        warnings.simplefilter("ignore", RuntimeWarning)
        bounds = np.nanquantile(means, [alpha, 1 - alpha], axis=0)
    return bounds[:, 0] if one else bounds


def instance_means(
    by_instance: Mapping[str, Sequence[Mapping[str, float]]], keys: Sequence[str],
) -> tuple[list[str], np.ndarray]:
    """Sorted instance ids and an ``n × len(keys)`` matrix of per-instance sample means.

    ``by_instance`` maps an instance id to its samples' metric dicts; a key missing from a
    sample is left out of that instance's mean (NaN when no sample has it).
    """
    ids = sorted(by_instance)
    out = np.full((len(ids), len(keys)), np.nan)
    for i, iid in enumerate(ids):
        for j, key in enumerate(keys):
            vals = [s[key] for s in by_instance[iid] if s.get(key) is not None]
            if vals:
                out[i, j] = sum(vals) / len(vals)
    return ids, out


def paired(
    ids_a: Sequence[str], a: np.ndarray, ids_b: Sequence[str], b: np.ndarray,
) -> tuple[list[str], np.ndarray]:
    """The instances two rows share (sorted) and the per-instance differences ``a − b``."""
    pos_b = {iid: i for i, iid in enumerate(ids_b)}
    shared = [(i, pos_b[iid]) for i, iid in enumerate(ids_a) if iid in pos_b]
    ids = [ids_a[i] for i, _ in shared]
    rows_a = np.array([i for i, _ in shared], dtype=int)
    rows_b = np.array([j for _, j in shared], dtype=int)
    return ids, a[rows_a] - b[rows_b]


def excludes_zero(low: float, high: float) -> bool:
    """True when ``[low, high]`` lies wholly above or below zero."""
    return bool(low > 0 or high < 0)
