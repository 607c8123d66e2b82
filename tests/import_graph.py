"""The package's import graph, read from the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` counts, wherever it stands (module level, inside a
function, under ``if TYPE_CHECKING``), and so do lazy imports: the string values of a
``lazy_exports`` table (``_EXPORTS``) and ``importlib.import_module("literal")`` calls. Module
names follow pyproject.toml's ``package-dir`` mapping (``engine/`` is ``unseen.engine``).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package: dotted name → file (``pkg/__init__.py`` is ``pkg``)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    out: dict[str, Path] = {}
    for package, folder in mapping.items():
        if "." in package and package.rsplit(".", 1)[0] in mapping and \
                folder.startswith(mapping[package.rsplit(".", 1)[0]] + "/"):
            continue  # a subfolder of a mapped folder: walked with it
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join((package, *rel))] = path
    return out


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import ``from .{level}target``."""
    if level == 0:
        return target or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([target] if target else [])])


def _imports(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in ``path`` that names a module of ours."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"

    def ours(name: str) -> str | None:
        # the longest prefix that is one of our modules (``a.b.c`` where ``c`` is a name in
        # module ``a.b``)
        while name:
            if name in known:
                return name
            name = name.rpartition(".")[0]
        return None

    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            # ``from pkg import sub`` imports the module ``pkg.sub`` where there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                     for a in node.names]
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            names = [_resolve(module, is_package, len(v.value) - len(v.value.lstrip(".")),
                              v.value.lstrip(".") or None)
                     for v in node.value.values
                     if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" \
                and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        for name in names:
            target = ours(name)
            if target is not None and target != module:
                yield target, node.lineno


def graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module → {imported module → first line that imports it}."""
    mods = modules(root)
    known = set(mods)
    out: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        edges: dict[str, int] = {}
        for target, line in _imports(name, path, known):
            edges.setdefault(target, line)
        out[name] = edges
    return out


def cycles(g: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted:
    every import cycle lies inside one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # recursion depth: the longest import chain, a few dozen
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(found)


def layer(module: str) -> str:
    """The folder a module belongs to: ``engine``, ``strategies``, ``backends``,
    ``renderers``, ``evals``, or ``unseen`` (the package root: CLI, API, views)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "unseen"


#: What each folder may import (itself included): unseen → evals → strategies → engine;
#: evals draw scenes with the renderers; backends and renderers stand on the engine alone.
LAYERS: dict[str, frozenset[str]] = {
    "engine": frozenset({"engine"}),
    "strategies": frozenset({"strategies", "engine"}),
    "backends": frozenset({"backends", "engine"}),
    "renderers": frozenset({"renderers", "engine"}),
    "evals": frozenset({"evals", "strategies", "engine", "renderers"}),
}


def upward(g: dict[str, dict[str, int]]) -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import that points against the layers."""
    bad = []
    for src, edges in sorted(g.items()):
        allowed = LAYERS.get(layer(src))
        if allowed is None:  # the package root may import anything
            continue
        for dst, line in sorted(edges.items()):
            if layer(dst) not in allowed:
                bad.append((src, dst, line))
    return bad


def private_imports(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """(importer, line, module, name) for every private name (``_name``, not a dunder) that
    a module takes from another module of ours: ``from module import _name`` or
    ``module._name`` on a name bound to one of our modules."""
    mods = modules(root)
    known = set(mods)
    found = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        bound: dict[str, str] = {}  # local name -> module of ours it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                for a in node.names:
                    if f"{base}.{a.name}" in known:
                        bound[a.asname or a.name] = f"{base}.{a.name}"
                    elif base in known and base != name and _private(a.name):
                        found.append((name, node.lineno, base, a.name))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in known:
                        bound[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and \
                    isinstance(node.value, ast.Name) and node.value.id in bound and \
                    bound[node.value.id] != name:
                found.append((name, node.lineno, bound[node.value.id], node.attr))
    return sorted(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")
