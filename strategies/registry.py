"""The strategy registry: ``@strategy("name")`` and the ``unseen.strategies`` entry points.

A strategy is a function from its parameters (a pydantic model) to an uncompiled LangGraph
``StateGraph``. The registry compiles each (strategy, parameters) once. A package (the
built-ins included, see pyproject.toml) lists its strategy modules under the entry-point
group ``unseen.strategies``; importing one runs its ``@strategy`` decorators
(``engine.plugins``: the idiom backends and simulator tasks share).

On the command line a strategy is ``name`` or ``name:key=value,key=value``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..engine.errors import UnseenError
from ..engine.graph import Iterates, StrategySpec
from ..engine.plugins import Registry
from ..engine.types import BOX_INSTANCES

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
    benchmark: str = BOX_INSTANCES
    asks: Callable[[Any], set[str]] = lambda p: {"box"}
    iterates: Iterates | None = None
    needs: Callable[[Any], set[str]] = lambda p: set()
    prompts: tuple[str, ...] = ()


STRATEGIES: Registry[Entry] = Registry(ENTRY_POINT_GROUP, "strategy")
_COMPILED: dict[tuple[str, str], StrategySpec] = {}


def strategy(
    name: str,
    params: type[BaseModel] = NoParams,
    summary: str = "",
    recursion_limit: Callable[[Any], int] = lambda p: 25,
    *,
    benchmark: str = BOX_INSTANCES,
    asks: Callable[[Any], set[str]] = lambda p: {"box"},
    iterates: Iterates | None = None,
    needs: Callable[[Any], set[str]] = lambda p: set(),
    prompts: tuple[str, ...] = (),
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register ``build(params) -> StateGraph`` under ``name``.

    ``benchmark`` names the kind of instance the strategy reads: by default
    ``BOX_INSTANCES``, what every box strategy reads and a benchmark of such instances
    ``accepts``, else a benchmark's name (``run.json``'s ``benchmark``) for a strategy made
    for its instances alone; ``asks(params)`` the kinds of answer its requests ask for (the
    ``task`` of their truth, ``Request.oracle``: ``box``, ``choice``, ``cells``, ...), so a
    respondent without a model that cannot give them is refused before the run;
    ``iterates`` says how its steps read as iterations when it narrows a region step by step
    (see ``engine.graph.Iterates``); ``needs(params)`` what it needs a backend to return
    beyond an answer (``Capabilities`` names: ``logprobs``), refused before the run where a
    backend lacks it; ``prompts`` the template files it renders (glob patterns in the
    ``prompts/`` folder of its module's package), whose digests, with its code's, make its
    fingerprint (:func:`fingerprint`): a run directory resumes only the same ones.
    """

    def deco(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
        STRATEGIES[name] = Entry(name, params, build, summary or (build.__doc__ or "").strip(),
                                recursion_limit, benchmark, asks, iterates, needs,
                                tuple(prompts))
        return build

    return deco


def available() -> list[Entry]:
    return [STRATEGIES[k] for k in sorted(STRATEGIES)]


def get(name: str) -> Entry:
    if name not in STRATEGIES:
        raise StrategyError(STRATEGIES.unknown(name))
    return STRATEGIES[name]


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name:key=value,...`` → (name, {key: value})."""
    name, _, rest = spec.partition(":")
    values: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise StrategyError(f"strategy parameters are key=value, got {item!r} in {spec!r}")
        if key.strip() in values:  # the last would win unseen
            raise StrategyError(f"parameter {key.strip()!r} is given twice in {spec!r}")
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
                                      entry.iterates, frozenset(entry.needs(params)))
    return _COMPILED[key]


def _home(module: str) -> str:
    """The package whose modules count as a strategy's code: inside unseen, the subpackage
    that holds it (``unseen.strategies``, or a benchmark's ``unseen.evals.director``); for
    an outside package, its top-level package."""
    parts = module.split(".")
    depth = 3 if parts[:2] == ["unseen", "evals"] else 2 if parts[0] == "unseen" else 1
    return ".".join(parts[:depth])


def _imported(module: str, tree: ast.Module) -> set[str]:
    """Every module name an import in ``tree`` may bring in (lazy imports included)."""
    package = module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _code_modules(module: str) -> dict[str, str]:
    """``module`` and the modules of its home package it imports, transitively, each with
    its code digest (``""`` where its source cannot be read); each file is read and parsed
    once. The registry itself is left out (it holds no strategy's behaviour)."""
    home, digests, todo = _home(module), {}, [module]
    while todo:
        name = todo.pop()
        if name in digests or name == __name__:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue  # a name imported from a module, not a module
        digests[name] = ""
        try:
            tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        found = _imported(name, tree)
        digests[name] = _tree_digest(tree)
        todo.extend(n for n in found if n == home or n.startswith(home + "."))
    return dict(sorted(digests.items()))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _code_digest(source: str) -> str:
    """A digest of a module's code that comments, docstrings and layout do not change."""
    return _tree_digest(ast.parse(source))


def _tree_digest(tree: ast.Module) -> str:
    """:func:`_code_digest` of a parsed module (its docstrings removed in place)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                isinstance(first.value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined,index]
    return _digest(ast.dump(tree, include_attributes=False).encode())


def fingerprint(name: str) -> dict[str, Any]:
    """What a strategy's trajectories depend on beyond its parameters: the digest of its
    code (``code``: its module and every module of its home package that it imports,
    transitively, each listed in ``modules``), and of each prompt template it declares
    (``prompts``: file → digest), recorded in run.json; a resume with another is refused
    (``unseen.api``). A shared helper that writes prompt text (``kit.box_format_text``)
    changes replies as surely as the strategy's own module does."""
    entry = get(name)
    module = sys.modules.get(entry.build.__module__)
    out: dict[str, Any] = {"code": "", "modules": {}, "prompts": {}}
    if module is None:
        return out
    out["modules"] = _code_modules(module.__name__)
    if any(out["modules"].values()):
        out["code"] = _digest(json.dumps(out["modules"], sort_keys=True).encode())
    if entry.prompts and module.__package__:
        folder = Path(str(resources.files(module.__package__).joinpath("prompts")))
        for pattern in entry.prompts:
            for path in sorted(folder.glob(pattern)):
                if path.is_file():
                    out["prompts"][path.relative_to(folder).as_posix()] = \
                        _digest(path.read_bytes())
    return out
