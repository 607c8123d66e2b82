"""Every registered strategy survives an unparseable reply at every step position.

A respondent that answers well (``sim:oracle``, ``sim:director-oracle``) is made to reply
with text no parser can read at the k-th step, for every k the clean trajectory reaches. The
trajectory must end cleanly: unanswered with a ``parse`` error, the steps up to and including
the unreadable one kept in the journal, never an ``internal`` error (issue 13: SPoE's
``finish=direct`` ended in ``KeyError: '__end__'`` and lost its steps). One exception by
design (issue 23): an unreadable cot-sr revision keeps the first box, answered.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import read_journal

from unseen.backends import make_backend
from unseen.engine.runner import Runner
from unseen.engine.types import Instance, Reply, RunConfig
from unseen.evals.director.scenes.dataset import load_scenes
from unseen.evals.director.sim.traces import write_trace
from unseen.evals.director.task.codebook import Codes
from unseen.strategies import available, build

GARBLE = "Hmm, hard to say from this picture."

# per benchmark: parameter variants that give the graph another shape
VARIANTS = {
    "spoe": ["spoe:T=4", "spoe:T=3,finish=direct", "spoe:T=3,votes=3", "spoe:T=3,unsure=true",
             "spoe:T=3,tau=0.9", "spoe:T=3,min_area=0.2,finish=direct"],
    "spoe-grid": ["spoe-grid:T=3"],
    "spoe-search": ["spoe-search:T=3"],
    "cot": ["cot"],
    "cot-sr": ["cot-sr"],
    "direct": ["direct", "direct:prompt=both"],
    "director": ["director:condition=move", "director:condition=mean/twoturn"],
    "director-code": ["director-code"],
}
PROFILE = {"box": "sim:oracle", "director": "sim:director-oracle",
           "director-coding": "sim:default,dir_coder_error=0"}


class Garbled:
    """Delegates to a sim respondent, except that every call of step ``at`` (``per_step``
    calls per step: SPoE's votes) gets a reply no parser reads."""

    def __init__(self, inner, at: int | None, per_step: int):
        self.inner, self.at, self.per_step, self.calls = inner, at, per_step, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def complete(self, request):
        k, self.calls = self.calls, self.calls + 1
        if self.at is not None and k // self.per_step == self.at:
            return Reply(text=GARBLE, finish_reason="stop")
        return await self.inner.complete(request)


def builtin_names() -> set[str]:
    """The strategies unseen ships (entry points of this package included), not those the
    test modules register."""
    return {e.name for e in available() if e.build.__module__.startswith("unseen.")}


def test_every_builtin_strategy_has_variants():
    assert builtin_names() == set(VARIANTS)


@pytest.fixture(scope="module")
def instances(sample_data, director_scenes) -> dict[str, Instance]:
    scene = load_scenes(director_scenes / "main")[0][0]
    trace = write_trace(Codes(reading="director_view", sees="seen", works_out=True), 3, 7,
                        [1, 3], random.Random(0))
    coding = Instance(id="batch-0", image="", width=1, height=1, meta={
        "second_pass": False,
        "items": [{"id": "x1", "trace": trace, "reply": '{"visible": [1, 3], "block": 3}'}]})
    return {"box": scenefunri_instance(sample_data), "director": scene,
            "director-coding": coding}


def scenefunri_instance(folder: Path) -> Instance:
    import unseen

    return unseen.load_dataset(folder).instances[0]


def run_one(spec, instance: Instance, at: int | None, out: Path) -> dict:
    inner = make_backend(PROFILE[spec.benchmark])
    backend = Garbled(inner, at, getattr(spec.params, "votes", 1))
    config = RunConfig(run=out.name, benchmark=spec.benchmark, data=".",
                       dataset_fingerprint="-", instances=1, strategies=[], backends=[],
                       package_version="test",
                       created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    runner = Runner([instance], [spec], [backend], out, config, progress=False)
    asyncio.run(runner.run())
    (record,) = read_journal(out)
    return record


@pytest.mark.parametrize("label", [v for vs in VARIANTS.values() for v in vs])
def test_unparseable_reply_at_every_step(label, instances, tmp_path):
    spec = build(label)
    inst = instances[spec.benchmark]
    clean = run_one(spec, inst, None, tmp_path / "clean")
    assert clean["status"] == "answered", clean.get("error")
    n = len(clean["steps"])
    assert n >= 1
    for k in range(n):
        rec = run_one(spec, inst, k, tmp_path / f"at{k}")
        assert rec["error"] is None or rec["error"]["kind"] != "internal", (k, rec["error"])
        if spec.name == "cot-sr" and k == 1:  # an unreadable revision keeps the first box
            assert rec["status"] == "answered" and rec["prediction"] == clean["steps"][0][
                "parsed"], rec
            assert rec["notes"] == {"fallback": "first box kept"}
            assert rec["steps"][1]["info"]["unusable"] == "parse"
            assert rec["steps"][k]["parse_error"] and GARBLE in rec["steps"][k]["reply"]["text"]
            continue
        assert rec["status"] == "unanswered", (k, rec["status"])
        assert rec["error"]["kind"] == "parse", (k, rec["error"])
        # the steps so far and the unreadable one are all kept
        assert len(rec["steps"]) == k + 1, (k, len(rec["steps"]))
        assert rec["steps"][k]["parse_error"], k
        assert all(s["parse_error"] is None for s in rec["steps"][:k]), k
        assert GARBLE in rec["steps"][k]["reply"]["text"]
