"""The package's imports: no cycle (lazy imports included) and every import points one way.

unseen (CLI, API, views) → evals → strategies → engine; evals also draw with the renderers;
backends and renderers import the engine only (``import_graph.LAYERS``). The graph is read
from the source (``import_graph``), so a function-level import counts like any other.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import import_graph as G

#: Cycles still in the tree, each with who removes it (issue 17). Remove an entry with its
#: cycle: the test fails on an entry whose cycle is gone, so the list cannot go stale.
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}  # none: keep it so

#: Imports allowed against the layers, each with its reason (none today).
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def test_the_package_has_no_import_cycle_but_the_known_ones():
    found = {tuple(c) for c in G.cycles(G.graph())}
    new = sorted(found - set(KNOWN_CYCLES))
    assert not new, "import cycles (lazy imports included): " + "; ".join(
        " <-> ".join(c) for c in new)
    gone = sorted(set(KNOWN_CYCLES) - found)
    assert not gone, f"no longer a cycle, remove it from KNOWN_CYCLES: {gone}"


def test_imports_point_one_way():
    bad = [(src, dst, line) for src, dst, line in G.upward(G.graph())
           if (src, dst) not in ALLOWED_UPWARD]
    assert not bad, "imports against unseen → evals → strategies → engine (backends and " \
        "renderers: engine only): " + "; ".join(f"{s} imports {d} (line {n})" for s, d, n in bad)


def test_no_module_imports_a_private_name_of_another():
    """A name another module needs is public where it is defined (or the two belong in one
    module): ``from x import _name`` and ``x._name`` across modules are refused."""
    found = G.private_imports()
    assert not found, "private names imported across modules: " + "; ".join(
        f"{src} (line {line}) takes {mod}.{name}" for src, line, mod, name in found)


#: Each benchmark package's parts (a subpackage, or a module at its root), in the order they
#: may import one another: a part imports only itself and the parts before it, so no arrow
#: runs back up (the package's ``__init__``, lazy public names, stands apart).
PARTS: dict[str, list[str]] = {
    "unseen.evals.director": ["scenes", "task", "sim", "study", "coding", "analysis", "paper",
                              "sim_tasks", "benchmark"],
    "unseen.evals.scenefunri": ["data", "metrics", "scoring", "fixed", "report", "benchmark"],
}


def _part(module: str, package: str) -> str | None:
    """The part of ``package`` that ``module`` lies in (None: outside it)."""
    return module[len(package) + 1:].split(".")[0] if module.startswith(package + ".") else None


def back_up(g: dict[str, dict[str, int]]) -> list[str]:
    """Every import from a part of a benchmark package to a later part (``PARTS``)."""
    bad = []
    for package, order in PARTS.items():
        inside = [m for m in g if m.startswith(package + ".")]
        assert {_part(m, package) for m in inside} == set(order), f"{package}: PARTS is stale"
        for src in inside:
            here = order.index(_part(src, package))  # type: ignore[arg-type]
            for dst, line in g[src].items():
                there = _part(dst, package)
                if there is not None and order.index(there) > here:
                    bad.append(f"{src} imports {dst} (line {line})")
    return bad


def test_each_benchmark_package_imports_its_parts_one_way():
    bad = back_up(G.graph())
    assert not bad, "imports that run back up a benchmark package: " + "; ".join(bad)


def test_the_graph_sees_what_the_package_imports():
    g = G.graph()
    assert len(g) > 100  # every module of the six folders
    # relative, module-level: strategies/spoe.py → strategies/kit.py
    assert "unseen.strategies.kit" in g["unseen.strategies.spoe"]
    # ``from . import kit`` names the module, not the package
    assert "unseen.strategies.kit" in g["unseen.strategies"]
    # lazy: the public names of unseen/__init__.py (``_EXPORTS`` of lazy_exports)
    assert "unseen.api" in g["unseen"] and "unseen.engine.box" in g["unseen"]
    # the registries name no plug-in: they find them by entry point
    assert not any(m.startswith("unseen.strategies.") and m != "unseen.strategies.registry"
                   for m in g["unseen.strategies.registry"] if "engine" not in m)
    assert not [m for m in g["unseen.backends.base"] if m.startswith("unseen.backends.")
                and m != "unseen.backends.profiles"]


def _tree(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text(textwrap.dedent('''
        [tool.setuptools]
        package-dir = { "unseen" = "unseen", "unseen.engine" = "engine", "unseen.evals" = "evals", "unseen.evals.sub" = "evals/sub" }
    '''))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    _tree(tmp_path, {
        "unseen/__init__.py": "",
        "engine/__init__.py": "",
        "engine/a.py": "from .b import x\n",
        "engine/b.py": "def f():\n    from . import a  # lazy: still an edge\n    return a\n",
        "engine/c.py": "import unseen.engine.a\n",
        "evals/__init__.py": "",
        "evals/sub/__init__.py": "",
        "evals/sub/d.py": "from ...engine import c\nfrom .. import e\n",
        "evals/e.py": "import importlib\nM = importlib.import_module('unseen.evals.sub.d')\n",
    })
    g = G.graph(tmp_path)
    assert set(g) == {"unseen", "unseen.engine", "unseen.engine.a", "unseen.engine.b",
                      "unseen.engine.c", "unseen.evals", "unseen.evals.sub",
                      "unseen.evals.sub.d", "unseen.evals.e"}
    assert g["unseen.engine.a"] == {"unseen.engine.b": 1}
    assert g["unseen.engine.b"] == {"unseen.engine.a": 2}
    assert set(g["unseen.evals.sub.d"]) == {"unseen.engine.c", "unseen.evals.e"}
    assert G.cycles(g) == [["unseen.engine.a", "unseen.engine.b"],
                           ["unseen.evals.e", "unseen.evals.sub.d"]]


def test_a_private_name_taken_from_another_module_is_found(tmp_path):
    _tree(tmp_path, {
        "unseen/__init__.py": "",
        "engine/__init__.py": "",
        "engine/a.py": "_x = 1\ndef _f(): return _x\n",
        "engine/b.py": "from .a import _f, __doc__\nfrom . import a\nY = a._x + a.__name__\n",
        "engine/c.py": "import unseen.engine.a as m\nfrom .a import _f as f\nZ = m._x\n",
    })
    assert G.private_imports(tmp_path) == [
        ("unseen.engine.b", 1, "unseen.engine.a", "_f"),
        ("unseen.engine.b", 3, "unseen.engine.a", "_x"),
        ("unseen.engine.c", 2, "unseen.engine.a", "_f"),
        ("unseen.engine.c", 3, "unseen.engine.a", "_x")]


def test_an_import_against_the_layers_is_found(tmp_path):
    _tree(tmp_path, {
        "unseen/__init__.py": "_EXPORTS = {'run': '.evals.x'}\n",
        "engine/__init__.py": "",
        "engine/core.py": "def f():\n    from ..evals import x\n",
        "evals/__init__.py": "",
        "evals/x.py": "from ..engine import core\n",
    })
    g = G.graph(tmp_path)
    assert g["unseen"] == {"unseen.evals.x": 1}  # a lazy public name is an import
    # the engine reaching up to evals is flagged; evals → engine and the root are fine
    assert G.upward(g) == [("unseen.engine.core", "unseen.evals.x", 2)]
