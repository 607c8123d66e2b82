"""What a study's run directory says about its replies: ``study.json`` (read and checked,
the design's name for each backend, which models were simulated) and where each journal
record belongs (:func:`reply_row`). Read by the measures' rows and by the coding of traces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ....engine.records import TrajectoryRecord
from ....engine.userfiles import read_json_object, validated
from .design import Design

STUDY_FILE = "study.json"


class _StudyBackend(BaseModel):
    model_config = ConfigDict(extra="allow")
    spec: str
    model: str


class _SceneSet(BaseModel):
    model_config = ConfigDict(extra="allow")
    path: str
    fingerprint: str
    n: int = 0


class _StudyFile(BaseModel):
    """What readers of ``study.json`` rely on (checked, so a damaged file is one line)."""

    model_config = ConfigDict(extra="allow")
    design: Design
    backends: list[_StudyBackend] = []
    scenes: dict[str, _SceneSet] = {}


def read_study(path: Path) -> dict[str, Any]:
    """``study.json`` as written (a dict), checked: a damaged file is one line naming it."""
    study = read_json_object(path)
    validated(path, _StudyFile, study)
    return study


def model_names(study: dict[str, Any]) -> dict[str, str]:
    """Backend spec → the model's name in the design (``study.json``'s backends)."""
    return {b["spec"]: b["model"] for b in study.get("backends", []) if "model" in b}


def run_model_names(run_dir: Path) -> dict[str, str]:
    """:func:`model_names` of a run directory's ``study.json`` (empty without one)."""
    path = run_dir / STUDY_FILE
    return model_names(read_study(path)) if path.is_file() else {}


def run_simulated(run_dir: Path) -> list[str]:
    """The design models a simulated backend answered for, by ``study.json`` (sorted)."""
    path = Path(run_dir) / STUDY_FILE
    study = read_study(path) if path.is_file() else {}
    return sorted({b.get("model", b.get("spec", "?")) for b in study.get("backends", [])
                   if b.get("simulated")})


def reply_row(rec: TrajectoryRecord, names: dict[str, str]) -> dict[str, Any]:
    """Where a journal record of a study belongs: model (its design name), backend, batch,
    condition, set, scene and sample."""
    params = rec.get("params") or {}
    return {"model": names.get(rec["backend"], rec["model"]), "backend": rec["backend"],
            "batch": params.get("batch", ""), "condition": params["condition"],
            "set": rec["instance_id"].rsplit("-", 1)[0], "scene": rec["instance_id"],
            "sample": rec["sample"]}
