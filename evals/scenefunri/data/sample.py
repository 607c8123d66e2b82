"""The data sets the project ships or makes on the spot.

- The bundled sample set (``sample_set/``, in the package): built by ``unseen data build``
  from the procedural rooms of ``unseen data rooms --n 8 --seed 0`` at 640x480; 65 instances
  from 8 rooms, each target inside the frame and fully hidden, the targets spread over the
  image (``unseen data stats`` shows where, and what a fixed box earns). ``unseen run``
  uses it by default. Remade with::

      unseen data rooms --out scans --n 8 --seed 0
      unseen data build --scenefun3d scans --out evals/scenefunri/data/sample_set   # an empty folder
- The test set: 24 flat synthetic rooms drawn in milliseconds (``synthetic.py``), for tests.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from .dataset import INSTANCES_FILE

TEST_SET_SIZE = 24
TEST_SET_SEED = 0
SAMPLE_ROOMS = {"n_rooms": 8, "seed": 0, "size": (640, 480)}


def bundled_sample() -> Path:
    """The folder of the bundled sample set, inside the installed package."""
    path = Path(str(resources.files(__package__).joinpath("sample_set")))
    if not (path / INSTANCES_FILE).is_file():
        raise FileNotFoundError(f"the bundled sample set is missing from {path}; "
                                "reinstall unseen, or rebuild it with 'unseen data rooms' and "
                                "'unseen data build'")
    return path


def copy_sample(out: str | Path) -> Path:
    """Copy the bundled sample set into ``out``."""
    out = Path(out)
    shutil.copytree(bundled_sample(), out, dirs_exist_ok=True)
    return out


def write_test_set(out: str | Path) -> Path:
    """Write the 24-instance synthetic test set into ``out``; returns the folder."""
    from .synthetic import write_synthetic_set  # the drawing (Pillow) only when it draws

    out = Path(out)
    write_synthetic_set(out, n=TEST_SET_SIZE, seed=TEST_SET_SEED)
    return out
