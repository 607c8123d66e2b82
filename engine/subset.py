"""Subsets of a benchmark's instances other than the first N (``unseen run --instances``,
``--sample N --seed S``): chosen after the benchmark plans its run, recorded in ``run.json``
and held to on resume, so one run directory never mixes two subsets."""

from __future__ import annotations

import random
from typing import Any

from .errors import UnseenError


class SubsetError(UnseenError, ValueError):
    """A subset that names unknown instances, or one a resume does not match."""


def describe(instances: list[str] | None = None, sample: int | None = None,
             seed: int | None = None, limit: int | None = None) -> dict[str, Any] | None:
    """The subset as ``run.json`` records it (None: every instance); one kind at a time."""
    given = [n for n, v in (("--instances", instances), ("--sample", sample),
                            ("--limit", limit)) if v]
    if len(given) > 1:
        raise SubsetError(f"{' and '.join(given)} both choose instances: give one of them")
    if seed is not None and sample is None:
        raise SubsetError("--seed chooses the instances of --sample N: give --sample too")
    if instances:
        ids = list(dict.fromkeys(i.strip() for i in instances if i.strip()))
        if not ids:
            raise SubsetError("--instances names no instance id")
        return {"instances": ids}
    if sample is not None:
        if sample < 1:
            raise SubsetError(f"--sample must be at least 1, got {sample}")
        return {"sample": sample, "seed": 0 if seed is None else seed}
    return None


def choose(instances: list, subset: dict[str, Any] | None) -> list:
    """The instances of ``subset``, in the dataset's order."""
    if not subset:
        return instances
    if "instances" in subset:
        by_id = {inst.id: inst for inst in instances}
        unknown = [i for i in subset["instances"] if i not in by_id]
        if unknown:
            more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
            raise SubsetError(f"--instances: no instance {unknown[0]!r} in the data{more} "
                              f"({len(instances)} instances; `unseen show` lists their ids)")
        wanted = set(subset["instances"])
        return [inst for inst in instances if inst.id in wanted]
    n = subset["sample"]
    if n > len(instances):
        raise SubsetError(f"--sample {n}: the data holds only {len(instances)} instances")
    # a seeded draw of positions: the same data, N and seed give the same instances anywhere
    picked = set(random.Random(subset["seed"]).sample(range(len(instances)), n))
    return [inst for i, inst in enumerate(instances) if i in picked]


def apply(plan: Any, subset: dict[str, Any] | None) -> None:
    """Narrow ``plan`` to ``subset`` and record it in its ``run.json`` (ids included)."""
    if not subset:
        return
    if plan.order is not None:
        raise SubsetError(f"the {plan.config.benchmark} benchmark plans its own order of "
                          "calls: --instances and --sample work with runs it does not order")
    plan.instances = choose(plan.instances, subset)
    plan.config.subset = {**subset, "ids": [inst.id for inst in plan.instances]}
    plan.config.instances = len(plan.instances)


def check_resume(old: Any, new: Any, run_dir: Any) -> None:
    """Refuse to resume a run directory made for another subset of the instances."""
    if (old.subset or None) == (new.subset or None):
        return
    raise SubsetError(f"{run_dir} was run on {_words(old.subset)}, now {_words(new.subset)}: "
                      "give the same subset to resume, or another --out")


def _words(subset: dict[str, Any] | None) -> str:
    if not subset:
        return "every instance (or the first N, --limit)"
    if "sample" in subset:
        return f"--sample {subset['sample']} --seed {subset['seed']}"
    ids = subset.get("instances", [])
    return f"--instances {','.join(ids[:3])}" + (f",... ({len(ids)})" if len(ids) > 3 else "")
