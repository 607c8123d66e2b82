"""The code of an earlier commit, importable as ``unseen``, for "before" figures in the same
run as "after" ones (``--before REF`` of the benchmarks).

``tree(ref)`` checks ``ref`` out into a temporary git worktree and lays it out as the
installed package (``unseen/`` with ``engine/``, ``backends/``, ... linked inside, as
pyproject's ``package-dir`` maps them); putting the returned folder first on ``PYTHONPATH``
makes a fresh interpreter import that commit's ``unseen`` (entry points stay those of the
installed distribution). Run the commands from a folder other than the checkout, whose own
``unseen/`` would come first on ``sys.path``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("engine", "backends", "evals", "renderers", "strategies")


def tree(ref: str) -> str:
    """A folder to put first on ``PYTHONPATH`` to import ``unseen`` as of ``ref``; removed
    (with its worktree) when this process exits."""
    tmp = Path(tempfile.mkdtemp(prefix="unseen-before-"))
    checkout = tmp / "checkout"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                    str(checkout), ref], check=True)
    site = tmp / "site" / "unseen"
    site.mkdir(parents=True)
    for entry in (checkout / "unseen").iterdir():
        (site / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        (site / name).symlink_to(checkout / name)

    def remove() -> None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                        str(checkout)], check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(remove)
    return str(tmp / "site")


def env_with(path: str | None, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with ``path`` first on ``PYTHONPATH``; unchanged
    for None (the current code)."""
    env = dict(os.environ if env is None else env)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)
    return env
