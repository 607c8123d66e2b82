"""While a run goes on, what existed before it is left out of the garbage collector's passes
and the youngest generation is collected less often; both are given back when it ends
(``engine.collector.lighter_gc``)."""

from __future__ import annotations

import asyncio
import gc
from datetime import UTC, datetime

from unseen.backends.base import BaseBackend
from unseen.engine import collector
from unseen.engine.runner import Runner
from unseen.engine.types import Reply, RunConfig
from unseen.strategies import build


class Recording(BaseBackend):
    provider = "recording"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.frozen: list[int] = []
        self.thresholds: list[tuple[int, int, int]] = []

    async def complete(self, request):
        self.frozen.append(gc.get_freeze_count())
        self.thresholds.append(gc.get_threshold())
        return Reply(text='{"box": [1, 1, 5, 5]}')


def run(instances, backend, tmp_path, name="r"):
    config = RunConfig(run=name, benchmark="scenefunri", data=".", dataset_fingerprint="-",
                       instances=len(instances), strategies=[], backends=[],
                       package_version="test",
                       created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    runner = Runner(instances, [build("direct")], [backend], tmp_path / name, config,
                    progress=False)
    return asyncio.run(runner.run())


def test_the_collector_is_lighter_while_a_run_goes_on_and_as_before_after(instances,
                                                                          tmp_path):
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    backend = Recording("m", box_format="pixel")
    result = run(instances[:3], backend, tmp_path)
    assert result.answered == 3
    assert len(backend.frozen) == 3 and all(n > 0 for n in backend.frozen)
    assert all(t[0] >= collector.RUN_GC_THRESHOLD and t[1:] == before[1:]
               for t in backend.thresholds)
    # nothing stays out of the collector's reach, and its thresholds are the process's again
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    gc.freeze()  # a process that froze its own heap keeps it frozen
    try:
        frozen = gc.get_freeze_count()
        run(instances[:2], Recording("m", box_format="pixel"), tmp_path, "r2")
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()


def test_a_command_runs_with_fewer_collections_and_gives_them_back(monkeypatch):
    """The CLI collects the youngest generation less often while a command imports and
    runs (``unseen.cli.main``), and leaves the process's thresholds as they were."""
    import sys

    from unseen import cli

    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(cli, "_run", lambda: seen.append(gc.get_threshold()))
    monkeypatch.setattr(sys, "argv", ["unseen", "strategies"])
    monkeypatch.setenv("UNSEEN_CLI_CACHE", "0")
    before = gc.get_threshold()
    cli.main()
    assert seen[0][0] >= collector.RUN_GC_THRESHOLD and gc.get_threshold() == before
