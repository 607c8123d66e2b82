"""Coding a Director study's reasoning traces, as a benchmark (``engine.benchmark``).

Its instances are batches of items (a neutral id, a trace and a reply), picked from a study
run (``data``: the study's run directory) by :func:`.items.select`, with test traces and
repeated real items mixed in (:func:`.items.with_tests`); its one strategy is
``director-code``. The run directory is ``STUDY/coding/<pass>/``, which ``items.jsonl`` ties to
the items it coded. Registered under the entry-point group ``unseen.benchmarks`` as
``director-coding``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ....engine.benchmark import Plan, RunRequest
from ....engine.journal import JOURNAL, RUN_FILE, iter_records, read_run_json
from ....engine.types import RunConfig
from ....strategies import build


class DirectorCoding:
    name = "director-coding"
    accepts = frozenset({"director-coding"})
    summary = ("code a Director study's reasoning traces against the Appendix E codebook "
               "(run by `unseen director code`)")

    def claims(self, data: Path) -> bool:
        return False  # a coding run is asked for by name (unseen director code)

    def strategies(self, request: RunRequest) -> list:
        # the coder and the item selection load when a coding run is asked for, not when
        # every benchmark is asked whether it reads a folder
        from .coder import MAX_EFFORT

        o = request.options
        return [build(("director-code", {"reasoning_effort": o.get("reasoning_effort", MAX_EFFORT),
                                         "structured": o.get("structured", True)}))]

    def scorer(self, request: RunRequest):
        return None  # the codes are the answer; `director codes` reports on them

    def plan(self, request: RunRequest, strategies: list, backends: list,
             run_dir: Path) -> Plan:
        from .items import CodingError, add_retry_round, all_batches, save_items, select, with_tests

        o = request.options
        if request.data is None:  # the run pipeline always names the study's run directory
            raise CodingError("a coding run reads a study's run directory: give its path")
        pass_, seed, size = o.get("pass", "main"), o.get("seed", 0), o.get("batch_size", 20)
        items, untraced = select(request.data, pass_=pass_, models=o.get("models", ()),
                                 conditions=o.get("conditions", ()),
                                 batches=o.get("batches", ()), sets=o.get("sets", ()), seed=seed)
        if not items:
            raise CodingError(f"no reasoning traces to code in {request.data} for this "
                              f"selection ({untraced} selected replies carry none)")
        repeats = o.get("repeats", 30) if pass_ == "main" else 0
        tests = o.get("tests", 30)
        ordered = with_tests(items, tests, pass_=pass_, seed=seed, repeats=repeats)
        _check_earlier(run_dir, request.backends[0], size)
        save_items(run_dir, ordered)
        retried = None
        if o.get("retry_uncoded"):
            finished = {rec["instance_id"] for rec in iter_records(run_dir / JOURNAL)}
            planned = [b.id for b in all_batches(run_dir, ordered, size, pass_)]
            retried = len(add_retry_round(run_dir, ordered, finished, planned))
        instances = all_batches(run_dir, ordered, size, pass_)
        config = RunConfig(
            run=Path(run_dir).name, benchmark=self.name, data=str(Path(request.data).resolve()),
            dataset_fingerprint="", instances=len(instances),
            strategies=[{"name": s.name, "label": s.label, "params": s.params.model_dump()}
                        for s in strategies],
            backends=[{**b.describe(), "spec": b.spec} for b in backends],
            concurrency=o.get("concurrency", 4), cache=bool(o.get("cache", True)),
            scoring={"items": len(items), "tests": tests, "repeats": repeats,
                     "batch_size": size, "seed": seed, "pass": pass_, "untraced": untraced,
                     "retried": retried},
            package_version=o.get("package_version", ""),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        return Plan(instances=instances, strategies=strategies, config=config, samples=1)

    def resume(self, old: RunConfig, new: RunConfig, run_dir: Path) -> RunConfig:
        return new.model_copy(update={"run": old.run, "created_at": old.created_at})



def _check_earlier(folder: Path, coder: str, batch_size: int) -> None:
    """An earlier call into ``folder`` had the same coder and batch size (a batch's id must
    keep naming the same items)."""
    from .items import CodingError

    if not (folder / RUN_FILE).is_file():
        return
    old = RunConfig.model_validate(read_run_json(folder))
    if old.backends and old.backends[0].get("spec") != coder:
        raise CodingError(f"{folder} was coded by {old.backends[0].get('spec')}; remove that "
                          "folder to code again with another coder")
    size = old.scoring.get("batch_size")
    if size is not None and size != batch_size:
        raise CodingError(f"{folder} was coded in batches of {size}: resume with "
                          f"--batch-size {size}, or remove that folder to start again")


BENCHMARK = DirectorCoding()
