"""Running a Director study: every batch's calls, in one seeded random order per model.

A call is (model, batch, condition, scene, sample); its trajectory key names all five, so a
rerun into the same directory skips what is done. Each batch's calls for one model are
shuffled with a generator seeded by (design seed, model, batch): the conditions a comparison
sets against each other are sampled together, as in the paper (§3 "Batches"). Models run
side by side (their calls interleaved), each at its backend's own concurrency.

The run directory holds ``run.json`` (engine config), ``study.json`` (the design, the
backends with the model names the design uses, the scene sets and their fingerprints),
``trajectories.jsonl`` and, unless ``--scenes`` points elsewhere, ``scenes/<set>/``.
"""

from __future__ import annotations

import hashlib
import json
import random
from array import array
from collections.abc import Iterator, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

from ....engine.decoded import check_decodes
from ....engine.errors import UnseenError
from ....engine.images import ImageError, file_digest
from ....engine.runner import WorkItem, trajectory_key
from ....engine.types import Instance
from ..scenes.dataset import load_scenes
from ..scenes.files import SCENES_FILE
from ..scenes.sets import build_set
from .design import Design
from .study_file import STUDY_FILE, read_study


class StudyError(UnseenError, ValueError):
    """A study that cannot start: no batch for a model, a run directory of another study."""


def scene_sets(design: Design, names: Sequence[str], root: Path,
               progress: bool = True) -> dict[str, tuple[list[Instance], str]]:
    """Each named set from ``root/<set>``, rendered there first when it is not."""
    out = {}
    for name in names:
        folder = root / name
        if not (folder / SCENES_FILE).is_file():
            build_set(name, folder, n=design.set_size(name), seed=design.scene_seed,
                      size=design.pixels, progress=progress)
        instances, fingerprint = load_scenes(folder)
        want = design.set_size(name)
        if len(instances) < want:
            raise StudyError(f"{folder} holds {len(instances)} scenes; the design asks {want}")
        if (got := {(i.width, i.height) for i in instances[:want]}) != {design.pixels}:
            sizes = ", ".join(f"{w}x{h}" for w, h in sorted(got))
            raise StudyError(f"{folder} holds scenes of {sizes}; the design asks {design.size} "
                             "(set size in the design, or render the scenes at its size)")
        for inst in instances[:want]:
            decodes(folder, inst)
        out[name] = (instances[:want], fingerprint)
    return out


def decodes(folder: Path, inst: Instance) -> None:
    """Refuse a scene whose image does not decode whole (a truncated or empty file would go
    to the provider as it is); once per image, as SceneFunRI's data: a digest that decoded
    is remembered (``engine.decoded``)."""
    try:
        check_decodes(inst.image, file_digest(inst.image))
    except ImageError as exc:
        raise StudyError(f"{folder / SCENES_FILE}: scene {inst.id}: image {exc.path}: "
                         f"{exc.reason}") from None


def plan_calls(design: Design, backends: list, names: list[str], specs: dict,
               sets: dict[str, tuple[list[Instance], str]]) -> Iterator[WorkItem]:
    """Every call of the study, each model's batches shuffled, models interleaved; each
    call made as it is asked for (a batch holds only its order: a shuffled array of
    positions, 4 bytes a call)."""
    per_model = [_model_calls(design, b_index, backend, model, specs, sets)
                 for b_index, (backend, model) in enumerate(zip(backends, names, strict=True))]
    for group in zip_longest(*per_model):
        yield from (item for item in group if item is not None)


def _model_calls(design: Design, b_index: int, backend: Any, model: str, specs: dict,
                 sets: dict[str, tuple[list[Instance], str]]) -> Iterator[WorkItem]:
    """One model's calls, batch by batch, each batch in its seeded order (§3 "Batches").

    A batch's calls, listed condition by condition, set by set, scene by scene, sample by
    sample, are put in the order ``random.Random(seed).shuffle`` gives a list of them: the
    permutation depends only on the length, so shuffling their positions gives it."""
    for batch in design.batches:
        conds = batch.conditions_for(model)
        scenes = [(inst, i) for set_name in batch.sets for i, inst in enumerate(sets[set_name][0])]
        per_cond = len(scenes) * design.samples
        n = per_cond * len(conds)
        order = array("I" if n < 2**32 else "Q", range(n))
        random.Random(f"{design.seed}/{model}/{batch.name}").shuffle(order)
        labels = [specs[(batch.name, c)].label for c in conds]
        for pos in order:
            s_index, rest = divmod(pos, per_cond)
            scene, sample = divmod(rest, design.samples)
            (inst, i), spec = scenes[scene], specs[(batch.name, conds[s_index])]
            key = trajectory_key(inst.id, labels[s_index], backend.spec, sample)
            yield WorkItem(key, inst, spec, backend, sample, (b_index, s_index, i))


def fingerprint(sets: dict[str, tuple[list[Instance], str]]) -> str:
    blob = json.dumps({k: v[1] for k, v in sorted(sets.items())})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def check_same_design(out: Path, design: Design) -> dict | None:
    """The study record already in ``out`` (None if none); StudyError if it is of another
    design (checked before any scene is rendered)."""
    path = out / STUDY_FILE
    if not path.is_file():
        return None
    old = read_study(path)
    if old["design"] != design.model_dump(by_alias=True):
        raise StudyError(f"{out} holds a run of another design ({old['design']['name']!r} "
                         "or an edited one); choose another --out")
    return old


def study_record(out: Path, design: Design, source: str, described: list[dict],
                 sets: dict, scenes_root: Path) -> dict:
    """``study.json``: the design, the backends with the design's model names (those of
    earlier invocations kept), the scene sets with their fingerprints."""
    record: dict[str, Any] = {
        "design": design.model_dump(by_alias=True), "design_source": source,
        "backends": described,
        "scenes": {k: {"path": str((scenes_root / k).resolve()), "fingerprint": v[1],
                       "n": len(v[0])} for k, v in sets.items()},
    }
    old = check_same_design(out, design)
    if old is not None:
        for k, v in old.get("scenes", {}).items():
            if k in record["scenes"] and v["fingerprint"] != record["scenes"][k]["fingerprint"]:
                raise StudyError(f"{out} was run on other {k!r} scenes; choose another --out")
        known = {b["spec"] for b in record["backends"]}
        record["backends"] = [b for b in old["backends"] if b["spec"] not in known] + record["backends"]
        record["scenes"] = {**old.get("scenes", {}), **record["scenes"]}
    return record
