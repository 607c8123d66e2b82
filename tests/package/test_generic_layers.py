"""The generic layers name no benchmark (issue 27): ``engine/`` and ``strategies/`` hold no
benchmark's name in their code (strings, names, attributes; comments and docstrings may
speak of them). What a benchmark needs from them it supplies itself: the kind of instance
it accepts, the default benchmark by entry point, its wiring beside its command."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("engine", "strategies")


def benchmark_names() -> set[str]:
    """The built-in benchmarks' names (pyproject's ``unseen.benchmarks`` entry points) and
    their family names (SceneFunRI, the Director)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = set(config["project"]["entry-points"]["unseen.benchmarks"])
    return names | {n.split("-")[0] for n in names}


def named_in_code(path: Path, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """(line, text) for every string, name or attribute of ``path``'s code that ``pattern``
    finds, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings.add(id(body[0].value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value if id(node) not in docstrings else ""
        else:
            text = getattr(node, "id", None) or getattr(node, "attr", None) or ""
        if isinstance(text, str) and pattern.search(text):
            found.append((node.lineno, text))
    return found


def test_the_engine_and_the_strategies_name_no_benchmark():
    names = benchmark_names()
    assert {"scenefunri", "director", "director-coding"} <= names
    pattern = re.compile(r"(?<![a-z])(" + "|".join(sorted(map(re.escape, names))) +
                         r")(?![a-z])", re.IGNORECASE)
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for folder in GENERIC for path in sorted((ROOT / folder).rglob("*.py"))
             for line, text in named_in_code(path, pattern)]
    assert not found, "benchmark names in the generic layers' code: " + "; ".join(found)


def test_the_search_sees_code_and_not_prose(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""SceneFunRI, in a docstring."""\n# the director, in a comment\n'
                    'A = "scenefunri"\nB = directory = 1\nC = x.director_eye\n')
    pattern = re.compile(r"(?<![a-z])(director|scenefunri)(?![a-z])", re.IGNORECASE)
    assert named_in_code(path, pattern) == [(3, "scenefunri"), (5, "director_eye")]
