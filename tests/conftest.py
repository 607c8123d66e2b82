"""Fixtures shared by the test modules: the sample data set, the fake provider server, the
module's shared backends, and ``unseen.cli.main`` run in-process.

The test modules live in folders that mirror the package's (``tests/engine/`` for
``engine/``, ...); this file and the helper modules (fake_providers, helpers, ...) stay here,
so the fixtures apply to every folder. No folder has an ``__init__.py``: pyproject's
``pythonpath = ["tests"]`` makes the helpers top-level modules, and test file names are unique.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_asyncio
from fake_providers import FakeProvider

import unseen
from unseen import cli
from unseen.evals.scenefunri.data.sample import write_test_set

# the default reply cache (platformdirs' user cache dir) in a folder of this session's own:
# a test never reads a reply an earlier session or the user's own runs cached
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="unseen-tests-cache-")
# a help or listing replayed from its record (unseen.cli_replay) keys on what a fresh
# process reads, not on what a test registers in this one: tests see every run afresh,
# except those of the replay itself, which turn it on
os.environ["UNSEEN_CLI_CACHE"] = "0"

# conftest runs before any test module imports helpers: its asserts report like a test's own
pytest.register_assert_rewrite("helpers")


def pytest_addoption(parser, pluginmanager):
    """With ``-p no:xdist`` (one process, e.g. for a debugger), accept the xdist options of
    pyproject's ``addopts`` and ignore them, instead of refusing to start."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist (off)", "pytest-xdist is not loaded: these are ignored")
    for name in ("--numprocesses", "--maxprocesses", "--dist"):
        group.addoption(name, dest=f"ignored_{name[2:]}", help="ignored without pytest-xdist")


@pytest.fixture(scope="module")
def sample_data(tmp_path_factory) -> Path:
    """The sample data set, written once per module."""
    return write_test_set(tmp_path_factory.mktemp("sample") / "data")


@pytest.fixture(scope="module")
def instances(sample_data):
    """The sample data set's instances."""
    return unseen.load_dataset(sample_data).instances


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """A reply cache shared within the module."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def fake_server():
    """One fake provider server for the whole module; tests use ``fp``."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def fp(fake_server) -> FakeProvider:
    """The module's fake server, with a fresh script, log and default reply."""
    fake_server.reset()
    return fake_server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_backends():
    """Bare backends a module keeps by its own key, closed when the module ends."""
    inners: dict = {}
    yield inners
    for inner in inners.values():
        await inner.aclose()


@pytest.fixture(scope="session")
def director_scenes(tmp_path_factory) -> Path:
    """A scene-set root with six main-set scenes at 512x384 (seed 0), rendered once for the
    session: tiny study designs of up to six scenes pass it as ``scenes=``."""
    from unseen.evals.director.study.design import Design
    from unseen.evals.director.study.runner import scene_sets

    design = Design.model_validate({"name": "scenes", "size": "512x384",
                                    "sets": {"main": {"n": 6}},
                                    "batch": [{"name": "b", "conditions": ["move"]}]})
    root = tmp_path_factory.mktemp("director-scenes")
    scene_sets(design, ["main"], root, progress=False)
    return root


@pytest.fixture
def run_main(capsys, monkeypatch) -> Callable[[list[str]], tuple[int, str, str]]:
    """``run_main(argv)``: ``unseen.cli.main`` in-process, as ``unseen ARGV``:
    (exit status, stdout, stderr)."""

    def call(argv: list[str]) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["unseen", *argv])
        capsys.readouterr()
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call
