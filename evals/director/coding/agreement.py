"""Agreement between two codings of the same items: Cohen's kappa and its interval.

κ = (p_o − p_e) / (1 − p_e), with p_o the share of items given the same code and
p_e = Σ_k p_A(k) p_B(k) the agreement expected from each coder's own code shares. Where both
coders give one and the same code to every item (p_e = 1), κ is 1. The interval is the
percentile interval over resamples of the items (the paper: 2,000 resamples of the 36 traces).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    if len(a) != len(b):
        raise ValueError(f"two codings of the same items, got {len(a)} and {len(b)} codes")
    if not a:
        raise ValueError("no items to compare")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if p_e >= 1.0:
        return 1.0
    return (p_o - p_e) / (1 - p_e)


def kappa_interval(a: Sequence[Hashable], b: Sequence[Hashable], n_boot: int = 2000,
                   seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of κ over ``n_boot`` resamples of the items (seeded)."""
    rng = random.Random(seed)
    n = len(a)
    stats = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        stats.append(cohen_kappa([a[i] for i in idx], [b[i] for i in idx]))
    stats.sort()
    lo = stats[int((1 - level) / 2 * n_boot)]
    hi = stats[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return lo, hi
