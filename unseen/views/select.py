"""Narrowing a run's trajectories as ``show --strategy --model --sample`` and an instance do.

A strategy filter names a strategy as its label does (``spoe:T=4``), as a label with its
default parameters written out (``spoe:T=8`` is the label ``spoe``: labels leave defaults
out), or by name alone (``spoe`` matches ``spoe:T=4`` when no trajectory is plain ``spoe``).
Parameters are compared as the strategy's own parameter model reads them (``T=8`` and
``T=8.0`` alike); a strategy not installed here is compared by the text of its values.

An instance is named by its id or by any part of it that only one id has (the summary
prints long ids cut to their end).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..engine.errors import UnseenError
from ..engine.records import StepRecord, TrajectoryRecord


class NoMatch(UnseenError, ValueError):
    """Nothing in the run matches what was asked for (one line: what the run has)."""


def _parse(spec: str) -> tuple[str, dict[str, str]]:
    name, _, rest = spec.partition(":")
    values: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if eq:
            values[key.strip()] = value.strip()
    return name.strip(), values


def _typed(name: str, given: dict[str, str]) -> tuple[dict[str, Any] | None, Any]:
    """``given`` read by the strategy's parameter model (all its parameters, defaults
    filled) and that model; (None, None) when the strategy is not installed or the values
    do not validate."""
    from ..strategies import StrategyError, get

    try:
        model = get(name).params
        return model(**given).model_dump(), model
    except (StrategyError, ValueError, TypeError):
        return None, None


def strategy_matcher(spec: str | None, labels: Sequence[tuple[str, dict[str, Any]]]
                     ) -> Callable[[str, dict[str, Any]], bool]:
    """A test of (label, params) against ``spec``: exactly the same strategy when some
    trajectory of ``labels`` (their (label, params)) is, else every one of that name whose
    parameters include those ``spec`` gives."""
    if not spec:
        return lambda label, params: True
    name, given = _parse(spec)
    full, model = _typed(name, given)

    def params_of(params: dict[str, Any]) -> dict[str, Any] | None:
        if model is None:
            return None
        try:
            return model(**params).model_dump()
        except (ValueError, TypeError):
            return None

    def same(label: str, params: dict[str, Any]) -> bool:
        if label == spec:
            return True
        if label.partition(":")[0] != name or full is None:
            return False
        return params_of(params) == full

    def includes(label: str, params: dict[str, Any]) -> bool:
        if label.partition(":")[0] != name:
            return False
        if full is not None:
            have = params_of(params)
            return have is not None and all(have.get(k) == full.get(k) for k in given)
        return all(str(params.get(k)) == v for k, v in given.items())

    if any(same(label, params) for label, params in labels):
        return same
    return includes


def find_instance(ids: Sequence[str], wanted: str, where: str) -> str:
    """The id ``wanted`` names: itself, or the one id containing it (a leading ``…`` of a
    shortened id dropped); a :class:`NoMatch` naming a few ids otherwise."""
    if wanted in ids:
        return wanted
    part = wanted.lstrip("…")
    found = sorted({i for i in ids if part and part in i})
    if len(found) == 1:
        return found[0]
    unique = sorted(set(ids))
    if found:
        raise NoMatch(f"{wanted!r} is part of {len(found)} instances in {where} "
                      f"(e.g. {', '.join(found[:3])}): give more of the id")
    raise NoMatch(f"no instance {wanted!r} in {where} ({len(unique)} instances, e.g. "
                  f"{', '.join(unique[:3])})")


def narrow(records: list[Any], filters: Any, where: str, *,
           get: Callable[[Any, str], Any] = lambda r, k: r[k]) -> list[Any]:
    """The records (or heads: ``get`` reads a field) that pass ``filters``' strategy, model
    and sample; a :class:`NoMatch` listing what the run has when none does."""
    labels = {(get(r, "strategy"), _frozen(get(r, "params") or {})):
              (get(r, "strategy"), get(r, "params") or {}) for r in records}
    match = strategy_matcher(filters.strategy, list(labels.values()))
    chosen = [r for r in records
              if match(get(r, "strategy"), get(r, "params") or {})
              and (not filters.model or get(r, "model") == filters.model)
              and (filters.sample is None or get(r, "sample") == filters.sample)]
    if not chosen:
        raise NoMatch(
            f"no trajectory in {where} matches (models: "
            f"{', '.join(sorted({get(r, 'model') for r in records}))}; strategies: "
            f"{', '.join(sorted({get(r, 'strategy') for r in records}))}; samples: "
            f"{', '.join(str(s) for s in sorted({get(r, 'sample') for r in records}))})")
    return chosen


def _frozen(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


# --- steps: shown 1..n, as the paper numbers iterations (t = 1..T) ----------------------------


def step_number(step: StepRecord, default: int = 0) -> int:
    """The number a user sees for a journaled step: its 0-based ``index`` plus one."""
    return int(step.get("index", default)) + 1


def numbers_text(numbers: Sequence[int]) -> str:
    """``1-3``, ``1-3, 5``, or ``none``: runs of consecutive numbers folded."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs) or "none"


def with_step(records: list[TrajectoryRecord], step: int,
              what: str = "steps") -> list[TrajectoryRecord]:
    """The records that have step number ``step``; else a :class:`NoMatch` listing the
    numbers they have (``what`` names them: ``steps, one per turn``)."""
    chosen = [r for r in records
              if any(step_number(s) == step for s in r["steps"])]
    if not chosen:
        have = [step_number(s) for r in records for s in r["steps"]]
        which = ("this trajectory" if len(records) == 1
                 else f"the {len(records)} matching trajectories")
        raise NoMatch(f"no step {step} in {which} ({what}: {numbers_text(have)})")
    return chosen
