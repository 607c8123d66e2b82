"""The Director Task as a benchmark (``engine.benchmark.Benchmark``).

A run is a study design (``options["design"]``, a :class:`.study.Design`): its batches name
the models and conditions, and the plan is the study's own order, every batch's calls for a
model shuffled with a generator seeded by (design seed, model, batch) (§3 "Batches";
:func:`.study.runner.plan_calls`). Scene sets missing from the run's scene folder are rendered
first; ``study.json`` records the design, the backends under the design's model names and
the scene sets. Registered under the entry-point group ``unseen.benchmarks`` as ``director``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...engine.benchmark import Plan, RunRequest
from ...engine.types import RunConfig
from ...strategies import build
from .scenes.files import SCENES_FILE

if TYPE_CHECKING:
    from .study.design import Design


class DirectorTask:
    name = "director"
    accepts = frozenset({"director"})
    summary = ("a partition hides one block from a director: what the model says the director "
               "sees, and which block it picks (Director Task studies)")
    # who answers a dry run's turns (unseen.dryrun): a reply always read, so every two-turn
    # condition asks its second turn
    dry_run_respondent = "sim:director-oracle"

    def claims(self, data: Path) -> bool:
        return (data / SCENES_FILE).is_file() if data.is_dir() else data.suffix == ".toml"

    def _design(self, request: RunRequest) -> Design:
        """The study design: given as a model, or as a file (``--data DESIGN``)."""
        # the study's modules (numpy, the scene renderer) load when a study is run, not
        # when every benchmark is asked whether it reads a folder (``claims``)
        from .study.design import Design, load_design
        from .study.runner import StudyError

        design = request.options.get("design")
        if design is None and request.data is not None and Path(request.data).is_file():
            design = request.options["design"] = load_design(request.data)
            request.options.setdefault("source", str(request.data))
        if not isinstance(design, Design):
            raise StudyError("a Director run needs a study design (unseen director run DESIGN)")
        return design

    def _specs(self, request: RunRequest) -> dict[tuple[str, str], Any]:
        design = self._design(request)
        decoding = {k: request.options.get(k) for k in ("temperature", "max_tokens")}
        decoding["reasoning_effort"] = request.options.get("reasoning_effort", "medium")
        return {(b.name, c): build(("director", {"condition": c, "batch": b.name, **decoding}))
                for b in design.batches for c in b.conditions}

    def strategies(self, request: RunRequest) -> list:
        """The design's (batch, condition) pairs as ``director`` strategies."""
        from .study.runner import StudyError

        if request.strategies:
            raise StudyError("a Director study takes its strategies from the design's "
                             "batches; give no --strategy")
        if not request.backends:
            raise StudyError("name at least one --backend")
        return list(self._specs(request).values())

    def scorer(self, request: RunRequest):
        from .task.measures import score

        return score

    def plan(self, request: RunRequest, strategies: list, backends: list,
             run_dir: Path) -> Plan:
        from .study.design import MAX_CALLS
        from .study.runner import (
            StudyError,
            check_same_design,
            fingerprint,
            plan_calls,
            scene_sets,
            study_record,
        )
        from .study.study_file import STUDY_FILE
        from .task.measures import score

        design = self._design(request)
        names = [alias or b.model for alias, b in zip(request.names, backends, strict=True)]
        for name, b in zip(names, backends, strict=True):
            if not any(batch.asks(name) for batch in design.batches):
                asked = sorted({m for batch in design.batches for m in batch.models})
                raise StudyError(
                    f"no batch of design {design.name!r} asks model {name!r} ({b.spec}); the "
                    f"design names {', '.join(asked)}: run it in one's place with "
                    f"--backend NAME={b.spec}")
        shares: dict[str, int] = {}
        for b, name in zip(backends, names, strict=True):
            shares[b.spec] = shares.get(b.spec, 0) + design.calls(name)
        total = sum(shares.values())
        if total > MAX_CALLS:  # refused before any scene is rendered
            raise StudyError(
                f"design {design.name!r} plans {total:,} calls ({design.samples:,} samples per "
                f"scene and condition); one invocation runs at most {MAX_CALLS:,}: ask fewer "
                "samples or scenes, or split the batches over designs")
        earlier = check_same_design(run_dir, design)
        needed = [s for s in design.sets if any(
            s in batch.sets and any(batch.asks(n) for n in names) for batch in design.batches)]
        scenes = request.options.get("scenes")
        root = Path(scenes) if scenes else recorded_scenes(earlier) or run_dir / "scenes"
        if request.options.get("dry_run") and not all(
                (root / s / SCENES_FILE).is_file() for s in needed):
            root = run_dir / "scenes"  # a dry run renders what is missing where it may write
        sets = scene_sets(design, needed, root, progress=request.progress)
        specs = self._specs(request)
        described = [{**b.describe(), "spec": b.spec, "model": n}
                     for b, n in zip(backends, names, strict=True)]
        study = study_record(run_dir, design, request.options.get("source", ""), described,
                             sets, root)
        config = RunConfig(
            run=Path(run_dir).name, benchmark=self.name, data=str(root.resolve()),
            dataset_fingerprint=fingerprint(sets),
            instances=sum(len(v[0]) for v in sets.values()),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in strategies],
            backends=study["backends"], samples=design.samples,
            concurrency=request.options.get("concurrency", 8),
            cache=bool(request.options.get("cache", True)),
            scoring={"measures": "evals.director.task.measures"},
            package_version=request.options.get("package_version", ""),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        return Plan(instances=[], strategies=strategies, config=config, score=score,
                    samples=design.samples, total=total, shares=shares,
                    order=lambda done: (it for it in plan_calls(design, backends, names, specs,
                                                                sets) if it.key not in done),
                    files={STUDY_FILE: json.dumps(study, indent=2) + "\n"})

    def resume(self, old: RunConfig, new: RunConfig, run_dir: Path) -> RunConfig:
        """The design and scenes were checked by the plan (``check_same_design``,
        ``study_record``); the run keeps its name and first date."""
        return new.model_copy(update={"run": old.run, "created_at": old.created_at})



def recorded_scenes(study: dict | None) -> Path | None:
    """The scene folder an earlier invocation used, so a resume without ``--scenes`` reads
    the same scenes instead of rendering new ones into the run directory."""
    parents = {str(Path(v["path"]).parent) for v in ((study or {}).get("scenes") or {}).values()}
    return Path(parents.pop()) if len(parents) == 1 else None


BENCHMARK = DirectorTask()
