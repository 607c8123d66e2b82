"""Which instances ``unseen figure`` draws when it is not given their ids: the worst, the best,
or a seeded random few.

An instance's score is the mean Dist (×100) over the trajectories the figure would draw:
every (model, strategy) row that passes ``--model`` and ``--strategy``, sample ``--sample``.
An unanswered trajectory counts with its Dist as scored (that of the full-image box). The
worst are the highest means, the best the lowest, ties broken by instance id; ``random``
draws ``n`` of the scored instances with ``random.Random(seed)``, in id order first, so the
same runs and seed give the same picks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from ....engine.rundir import RunDir
from .summary import open_runs, run_records

PICKS = ("worst", "best", "random")


def instance_dist(run_dirs: Sequence[str | Path | RunDir], *, sample: int = 0,
                  models: Sequence[str] | None = None,
                  strategies: Sequence[str] | None = None) -> dict[str, float]:
    """Instance id → its mean Dist ×100 over the matching trajectories (see the module)."""
    dists: dict[str, list[float]] = defaultdict(list)
    for rec in (r for run in open_runs(run_dirs) for r in run_records(run)):
        if rec.get("sample", 0) != sample or (models and rec["model"] not in models) or (
                strategies and rec["strategy"] not in strategies):
            continue
        d = (rec.get("metrics") or {}).get("dist")
        if d is not None:
            dists[rec["instance_id"]].append(100 * d)
    return {i: sum(v) / len(v) for i, v in dists.items()}


def pick(scores: dict[str, float], how: str, n: int, seed: int = 0) -> list[str]:
    """``n`` instance ids by ``how`` (``worst``, ``best`` or ``random``) from ``scores``."""
    if how not in PICKS:
        raise ValueError(f"unknown pick {how!r}; choose {', '.join(PICKS)}")
    ids = sorted(scores)
    if how == "random":
        return random.Random(seed).sample(ids, min(n, len(ids)))
    sign = -1 if how == "worst" else 1
    return sorted(ids, key=lambda i: (sign * scores[i], i))[:n]
