"""The strategy registry: ``@strategy("name")`` and the ``unseen.strategies`` entry points.

A strategy is a function from its parameters (a pydantic model) to an uncompiled LangGraph
``StateGraph``. The registry compiles each (strategy, parameters) once. Third-party packages
register by exposing a module under the entry-point group ``unseen.strategies``; importing
it runs its ``@strategy`` decorators.

On the command line a strategy is ``name`` or ``name:key=value,key=value``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..engine.errors import UnseenError
from ..engine.graph import Iterates, StrategySpec

ENTRY_POINT_GROUP = "unseen.strategies"


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StrategyError(UnseenError, ValueError):
    """Unknown strategy or bad parameters."""


@dataclass(frozen=True)
class Entry:
    name: str
    params: type[BaseModel]
    build: Callable[[Any], Any]
    summary: str
    recursion_limit: Callable[[Any], int]
    benchmark: str = "scenefunri"
    asks: Callable[[Any], set[str]] = lambda p: {"box"}
    iterates: Iterates | None = None


_REGISTRY: dict[str, Entry] = {}
_COMPILED: dict[tuple[str, str], StrategySpec] = {}
_loaded_entry_points = False


def strategy(
    name: str,
    params: type[BaseModel] = NoParams,
    summary: str = "",
    recursion_limit: Callable[[Any], int] = lambda p: 25,
    *,
    benchmark: str = "scenefunri",
    asks: Callable[[Any], set[str]] = lambda p: {"box"},
    iterates: Iterates | None = None,
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register ``build(params) -> StateGraph`` under ``name``.

    ``benchmark`` names the benchmark whose instances the strategy reads (``run.json``'s
    ``benchmark``); ``asks(params)`` the kinds of answer its requests ask for (the
    ``oracle`` task: ``box``, ``choice``, ``cells``, ...), so a respondent without a model
    that cannot give them is refused before the run; ``iterates`` says how its steps read as
    iterations when it narrows a region step by step (see ``engine.graph.Iterates``).
    """

    def deco(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
        _REGISTRY[name] = Entry(name, params, build, summary or (build.__doc__ or "").strip(),
                                recursion_limit, benchmark, asks, iterates)
        return build

    return deco


def _load() -> None:
    global _loaded_entry_points
    from . import cot, direct, spoe, spoe_grid, spoe_search  # noqa: F401 - they register

    if not _loaded_entry_points:
        _loaded_entry_points = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()


def available() -> list[Entry]:
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(name: str) -> Entry:
    _load()
    if name not in _REGISTRY:
        raise StrategyError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name:key=value,...`` → (name, {key: value})."""
    name, _, rest = spec.partition(":")
    values: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise StrategyError(f"strategy parameters are key=value, got {item!r} in {spec!r}")
        values[key.strip()] = value.strip()
    return name.strip(), values


def build(spec: str | tuple[str, dict[str, Any]]) -> StrategySpec:
    """A compiled strategy from ``name[:k=v,...]`` or ``(name, params)``."""
    name, raw = parse_spec(spec) if isinstance(spec, str) else spec
    entry = get(name)
    try:
        params = entry.params(**raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or name
        raise StrategyError(f"bad parameter {where!r} for strategy {name!r}: {first['msg']}") from None
    key = (name, json.dumps(params.model_dump(), sort_keys=True))
    if key not in _COMPILED:
        graph = entry.build(params).compile()
        _COMPILED[key] = StrategySpec(name, params, graph, entry.recursion_limit(params),
                                      entry.benchmark, frozenset(entry.asks(params)),
                                      entry.iterates)
    return _COMPILED[key]
