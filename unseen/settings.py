"""Defaults a user may override by flag or environment."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

DEFAULT_STRATEGY = "direct"  # unseen.run's, without strategies (what `unseen run` does
# without -s is its benchmark's: engine.benchmark.RunDefaults)
DEFAULT_BACKEND = "sim"
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0


_SLUG = str.maketrans({c: "-" for c in ":/@,=?&"})


def runs_root() -> Path:
    """Where new run directories go: ``$UNSEEN_RUNS`` or ``./runs``."""
    return Path(os.environ.get("UNSEEN_RUNS", "runs"))


def new_run_dir(strategies: list[str], backends: list[str]) -> Path:
    """``runs/<timestamp>-<strategy>-<backend>``, readable and unique per second."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    def slug(xs: list[str], what: str) -> str:
        if len(xs) > 2:
            return f"{len(xs)}{what}"
        s = "+".join(x.translate(_SLUG) for x in xs)
        return s[:40]
    return runs_root() / f"{stamp}-{slug(strategies, 'strategies')}-{slug(backends, 'backends')}"


def package_version() -> str:
    """The installed version of unseen, for run records."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("unseen")
    except PackageNotFoundError:
        return "0+unknown"


def git_commit() -> str | None:
    """The git commit of the checkout unseen runs from (``+dirty`` with uncommitted changes),
    or None for an installed package; for run records."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if head and dirty else head or None
