"""``.ci/typecheck`` lays the package out as installed, so mypy sees ``unseen.engine`` where
the checkout has ``engine/`` (issue 27: ``mypy unseen/api.py`` in the checkout was blind)."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TC = runpy.run_path(str(ROOT / ".ci" / "typecheck"))


def test_checkout_paths_name_the_installed_modules():
    dirs = TC["package_dirs"]()
    assert dirs["unseen.engine"] == "engine" and dirs["unseen.evals"] == "evals"
    assert TC["module_of"](str(ROOT / "engine" / "images.py"), dirs) == "unseen.engine.images"
    assert TC["module_of"](str(ROOT / "unseen" / "api.py"), dirs) == "unseen.api"
    assert TC["module_of"](str(ROOT / "evals" / "director" / "coding" / "__init__.py"),
                           dirs) == "unseen.evals.director.coding"


def test_the_layout_is_the_installed_package(tmp_path):
    dirs = TC["package_dirs"]()
    TC["lay_out"](tmp_path, dirs)
    pkg = tmp_path / "unseen"
    assert (pkg / "api.py").resolve() == ROOT / "unseen" / "api.py"
    assert (pkg / "engine" / "images.py").resolve() == ROOT / "engine" / "images.py"
    assert (pkg / "evals" / "director" / "coding").resolve().is_dir()
    assert (pkg / "py.typed").is_file()  # shipped: installed, the package says it is typed
