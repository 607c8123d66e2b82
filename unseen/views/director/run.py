"""A Director Task study run as its views read it (``RunDir`` and ``study.json``), and the
trajectories ``show``'s filters pick.

Models are named as the study names them (``study.json``'s aliases: ``gpt-x=sim:strong``
shows as ``gpt-x``); ``--model`` takes that name, the provider's model or the backend spec.
``--strategy`` takes a label (``director:batch=q,condition=move``, the ``director:`` may be
left out) or a condition name (``move/twoturn``); a condition asked in several batches keeps
the first batch of the design, and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ...engine.journal import checked
from ...engine.records import TrajectoryRecord
from ...engine.rundir import Head, RunDir, kind_of
from ...engine.types import Instance
from ...evals.director.scenes.dataset import SceneSetError, load_scenes
from ...evals.director.study.study_file import STUDY_FILE, model_names, read_study
from ..select import NoMatch


@dataclass
class DirectorRun:
    """A study run: its ``RunDir``, design, model names and (lazily) its scenes."""

    run: RunDir
    study: dict[str, Any]
    _sets: dict[str, tuple[dict[str, Instance], str]] = field(default_factory=dict)
    _orders: dict[tuple[Any, Any], tuple] = field(default_factory=dict)

    @classmethod
    def open(cls, run_dir: str | Path | RunDir) -> DirectorRun:
        run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
        RunDir.open(run.path, benchmark="director")  # RunDirError: another benchmark's run
        path = run.file(STUDY_FILE)
        return cls(run, read_study(path) if path.is_file() else {})

    @property
    def path(self) -> Path:
        return self.run.path

    @cached_property
    def aliases(self) -> dict[str, str]:
        return model_names(self.study)

    def model(self, rec: TrajectoryRecord | Head) -> str:
        """The model's name in the study (its alias), else the provider's."""
        backend = rec.backend if isinstance(rec, Head) else rec["backend"]
        model = rec.model if isinstance(rec, Head) else rec["model"]
        return self.aliases.get(backend, model)

    @property
    def design(self) -> dict[str, Any]:
        return self.study.get("design") or {}

    def order(self, params: dict[str, Any]) -> tuple:
        """Design order of a trajectory's parameters: batch, then the batch's conditions."""
        pair = (params.get("batch", ""), params.get("condition", ""))
        if pair not in self._orders:  # a study has few pairs and 170,000 replies
            design = self.design.get("batch", [])
            names = [b["name"] for b in design]
            bi = names.index(pair[0]) if pair[0] in names else len(names)
            conds = design[bi]["conditions"] if bi < len(design) else []
            ci = conds.index(pair[1]) if pair[1] in conds else len(conds)
            self._orders[pair] = (bi, pair[0], ci, pair[1])
        return self._orders[pair]

    def records(self, steps: Callable[[dict[str, Any]], bool] | None = None
                ) -> list[TrajectoryRecord]:
        """The study's current records; with ``steps``, their steps parsed only where
        ``steps(head)`` says so (``RunDir.records_with_steps``), the others without."""
        recs = self.run.records() if steps is None else self.run.records_with_steps(steps)
        return [r for r in recs if "condition" in r["params"]]  # type: ignore[misc]  # heads

    def _folder_candidates(self, name: str) -> list[Path]:
        out = []
        entry = (self.study.get("scenes") or {}).get(name) or {}
        if entry.get("path"):
            out.append(Path(entry["path"]))
        if self.run.config is not None and self.run.config.data:
            out.append(Path(self.run.config.data) / name)
        out.append(self.path / "scenes" / name)
        return out

    def scene_set(self, name: str) -> tuple[dict[str, Instance], str]:
        """The scenes of set ``name`` by id, or ({}, why not)."""
        if name not in self._sets:
            why = f"no folder for scene set {name!r}"
            for folder in self._folder_candidates(name):
                try:
                    insts, _ = load_scenes(folder)
                except (SceneSetError, OSError) as exc:
                    why = str(exc)
                    continue
                self._sets[name] = ({i.id: i for i in insts}, "")
                break
            else:
                self._sets[name] = ({}, why)
        return self._sets[name]

    def scene(self, scene_id: str) -> tuple[Instance | None, str]:
        scenes, why = self.scene_set(scene_id.rsplit("-", 1)[0])
        inst = scenes.get(scene_id)
        return inst, ("" if inst else why or f"scene {scene_id!r} is not in its set's folder")

    def scenes(self) -> tuple[dict[str, Instance], str]:
        """Every scene set the study names (a note on the ones that could not be read)."""
        out: dict[str, Instance] = {}
        notes = []
        for name in (self.study.get("scenes") or {}):
            got, why = self.scene_set(name)
            out.update(got)
            if why:
                notes.append(why)
        return out, "; ".join(notes)


def condition(rec: TrajectoryRecord) -> str:
    return rec["params"].get("condition", "?")


def batch(rec: TrajectoryRecord) -> str:
    return rec["params"].get("batch", "")


def select(run: DirectorRun, scene: str | None, *, strategy: str | None = None,
           model: str | None = None, sample: int | None = None,
           first_batch: bool = True) -> tuple[list[TrajectoryRecord], str]:
    """The current records of ``scene`` (all when None) that pass the filters, in design order,
    and a note (the batch kept when a condition is asked in several); a one-line error when
    nothing matches. The steps are read of the scene's records, and of real models' (their
    token counts, for costs); the others have none."""
    records = run.records(lambda h: h["instance_id"] == scene if scene is not None
                          else kind_of(h["backend"], h["simulated"]) == "model")
    if not records:
        raise NoMatch(f"{run.path}: no Director trajectories journaled yet")
    if scene is not None:
        ids = sorted({r["instance_id"] for r in records})
        if scene not in ids:
            raise NoMatch(f"no scene {scene!r} in {run.path} ({len(ids)} scenes, e.g. "
                          f"{', '.join(ids[:3])})")
        # their steps are shown: checked in full
        records = [checked(r, run.run.journal) for r in records if r["instance_id"] == scene]
    if model:
        names = sorted({run.model(r) for r in records})
        records = [r for r in records if model in (run.model(r), r["model"], r["backend"])]
        if not records:
            raise NoMatch(f"no model {model!r} in {run.path} (models: {', '.join(names)})")
    note = ""
    if strategy:
        records, note = _by_strategy(run, records, strategy, first_batch)
    if sample is not None:
        have = sorted({r["sample"] for r in records})
        records = [r for r in records if r["sample"] == sample]
        if not records:
            raise NoMatch(f"no sample {sample} among the matching trajectories (samples: "
                          f"{', '.join(map(str, have))})")
    records.sort(key=lambda r: (run.model(r), run.order(r["params"]), r["sample"],
                                r["instance_id"]))
    return records, note


def _by_strategy(run: DirectorRun, records: list[TrajectoryRecord], strategy: str,
                 first_batch: bool) -> tuple[list[TrajectoryRecord], str]:
    from ..select import strategy_matcher

    labels = {r["strategy"]: r["params"] for r in records}
    if "=" in strategy:  # a label, with or without its default parameters
        label = strategy if strategy.startswith("director:") else f"director:{strategy}"
        match = strategy_matcher(label, list(labels.items()))
        by_label = [r for r in records if match(r["strategy"], r["params"])]
        if by_label:
            return by_label, ""
    by_cond = [r for r in records if condition(r) == strategy]
    if not by_cond:
        conds = sorted({condition(r) for r in records})
        raise NoMatch(f"no condition or strategy {strategy!r} in {run.path} (conditions: "
                      f"{', '.join(conds)}; or a label such as {min(labels)})")
    batches = sorted({batch(r) for r in by_cond}, key=lambda b: run.order({"batch": b})[0])
    note = ""
    if first_batch and len(batches) > 1:
        note = (f"condition {strategy} is asked in batches {', '.join(batches)}: showing "
                f"batch {batches[0]}; for another, --strategy "
                f"director:batch={batches[1]},condition={strategy}")
        by_cond = [r for r in by_cond if batch(r) == batches[0]]
    return by_cond, note
