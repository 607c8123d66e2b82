"""The bundled sample set: generated deterministically on first use into the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

from .dataset import INSTANCES_FILE
from .synthetic import write_synthetic_set

SAMPLE_VERSION = "synthetic-v1"
SAMPLE_SIZE = 24
SAMPLE_SEED = 0


def write_sample(out: str | Path) -> Path:
    """Write the sample set into ``out`` (a folder); returns the folder."""
    out = Path(out)
    write_synthetic_set(out, n=SAMPLE_SIZE, seed=SAMPLE_SEED)
    return out


def ensure_sample(cache_dir: str | Path | None = None) -> Path:
    """The sample set's folder, generated once into the cache directory."""
    from ...engine.cache import default_cache_dir

    root = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = root / "datasets" / SAMPLE_VERSION
    if not (folder / INSTANCES_FILE).is_file():
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        write_sample(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)  # atomic: a half-written sample is never used
    return folder
