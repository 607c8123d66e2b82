"""A SceneFunRI run's dataset as the views read it: one instance (its image opened, for a
step view), or every instance's instruction and box straight from ``instances.jsonl`` (no
image opened or hashed: a list of 10,000 trajectories must not wait for it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...engine.errors import UserFileError
from ...engine.rundir import RunDir
from ...engine.sanitize import shown_now
from ...engine.types import Instance
from ...engine.userfiles import iter_lines
from ...evals.scenefunri.data.dataset import INSTANCES_FILE, DatasetError, find_instance


def data_of(run: RunDir) -> str:
    return run.config.data if run.config is not None else ""


def instance_of(run: RunDir, instance_id: str) -> tuple[Instance | None, str]:
    """The dataset's instance, or None with the reason (a moved or missing dataset)."""
    data = data_of(run)
    if not data:
        return None, "run.json names no dataset"
    try:
        return find_instance(data, instance_id), ""
    except (DatasetError, OSError, ValueError) as exc:
        return None, str(exc)


def light_instances(run: RunDir) -> tuple[dict[str, dict[str, Any]], str]:
    """id → {"instruction", "box", "image"} of the run's dataset (the instruction made
    terminal-safe), and a note when the dataset cannot be read."""
    data = data_of(run)
    if not data:
        return {}, "run.json names no dataset"
    path = Path(data)
    file = path / INSTANCES_FILE if path.is_dir() else path
    safe = shown_now()
    out: dict[str, dict[str, Any]] = {}
    try:
        for _, raw in iter_lines(file):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
                out[obj["id"]] = {"instruction": safe(obj.get("instruction", "")),
                                  "box": obj.get("box"),
                                  "image": str((file.parent / obj["image"]).resolve())}
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue
    except (OSError, UserFileError) as exc:
        return {}, f"dataset unavailable: {exc}"
    return out, ""
