"""The Backend protocol's optional members (engine.backend.BackendDefaults): declared with
their defaults, read by the runner directly, and a backend that lacks them refused when it
is made, in one line, not mid-run (issue 27)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from unseen.backends import Reliable, make_backend
from unseen.backends.base import PROVIDERS, BackendConfigError, BaseBackend, provider
from unseen.engine.backend import OPTIONAL_MEMBERS, Backend, BackendDefaults
from unseen.engine.runner import Runner
from unseen.engine.types import Instance, Reply, RunConfig
from unseen.strategies import build


class Attached(BaseBackend):
    provider = "attached"
    serial = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.attached: list[tuple[str, int]] = []
        self.in_flight = self.most_in_flight = 0

    async def attach(self, run_dir, todo):
        self.attached.append((run_dir.name, todo))

    async def complete(self, request):
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        return Reply(text='{"box": [1, 1, 5, 5]}')


def test_the_defaults_are_declared_and_a_base_backend_is_a_backend():
    b = Attached("m", box_format="pixel")
    assert isinstance(b, Backend) and all(hasattr(b, m) for m in OPTIONAL_MEMBERS)
    plain = BackendDefaults()
    assert (plain.concurrency, plain.serial, plain.interactive, plain.batched,
            plain.in_process) == (8, False, False, False, False)
    assert asyncio.run(plain.identify()) == {} and plain.server_counts() is None
    # Reliable skips the default ready() and runs a backend's own
    assert Reliable(b)._ready is None


def test_the_backends_that_load_a_model_here_say_so():
    """hf and vllm-local load their model in this process (one process by default)."""
    from unseen.backends.hf_local import HFLocal
    from unseen.backends.vllm_local import VLLMLocal

    assert HFLocal.in_process and VLLMLocal.in_process


def test_a_backend_without_the_optional_members_is_refused_when_made():
    class Bare:
        spec = provider = model = "bare"

    provider("bare", "bare")(lambda target, *, spec, **_: Bare())
    try:
        with pytest.raises(BackendConfigError, match=r"lacks concurrency, serial.*BaseBackend"):
            make_backend("bare")
    finally:
        del PROVIDERS["bare"]


def test_the_runner_attaches_once_and_runs_a_serial_backend_one_at_a_time(sample_data,
                                                                         tmp_path):
    import unseen

    instances: list[Instance] = unseen.load_dataset(sample_data).instances[:3]
    backend = Attached("m", box_format="pixel")
    config = RunConfig(run="r", benchmark="scenefunri", data=".", dataset_fingerprint="-",
                       instances=3, strategies=[], backends=[], package_version="test",
                       created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    runner = Runner(instances, [build("direct")], [backend], tmp_path / "r", config,
                    samples=2, progress=False)
    result = asyncio.run(runner.run())
    assert result.answered == 6
    assert backend.attached == [("r", 6)]  # once, with what it is to answer
    assert backend.most_in_flight == 1  # serial: never two of its trajectories at once
