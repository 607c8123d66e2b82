"""The engine runs without ``unseen.api``: a fresh interpreter builds every registered
strategy, connects the simulator and runs a ``Runner`` on one instance of the strategy's
benchmark, each image encoded as a real provider would; every trajectory is answered
(SPoE's overlays drawn by the renderer the engine finds itself, issue 27), and ``unseen.api`` (the CLI's wiring) is never imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import asyncio, json, random, sys
    from datetime import UTC, datetime
    from pathlib import Path

    from unseen.backends import connect
    from unseen.engine.images import part_bytes
    from unseen.engine.runner import Runner
    from unseen.engine.types import Instance, RunConfig
    from unseen.evals.director.task.codebook import Codes
    from unseen.evals.director.scenes.dataset import load_scenes
    from unseen.evals.director.sim.traces import write_trace
    from unseen.evals.scenefunri import load_dataset
    from unseen.strategies import available, build

    data, scenes, out = (Path(a) for a in sys.argv[1:4])
    trace = write_trace(Codes(reading="director_view", sees="seen", works_out=True), 3, 7,
                        [1, 3], random.Random(0))
    instances = {
        "box": load_dataset(data).instances[0],
        "director": load_scenes(scenes / "main")[0][0],
        "director-coding": Instance(id="batch-0", image="", width=1, height=1, meta={
            "second_pass": False,
            "items": [{"id": "x1", "trace": trace, "reply": '{"visible": [1, 3], "block": 3}'}]}),
    }
    profile = {"box": "sim:oracle", "director": "sim:director-oracle",
               "director-coding": "sim:default,dir_coder_error=0"}
    class Sending:
        """The simulator, encoding every image part first as a real provider does."""

        def __init__(self, inner):
            self.inner, self.overlays = inner, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        async def complete(self, request):
            for message in request.messages:
                for part in message.parts:
                    if getattr(part, "type", "") == "image" and part.path:
                        data, mime = part_bytes(part)
                        assert data and mime.startswith("image/"), mime
                        self.overlays += part.overlay is not None
            return await self.inner.complete(request)

    needs = {"director": "director:condition=move"}  # the one strategy without defaults
    result = {}
    for entry in available():
        spec = build(needs.get(entry.name, entry.name))
        backend = Sending(connect(profile[spec.benchmark]))
        config = RunConfig(run=entry.name, benchmark=spec.benchmark, data=".",
                           dataset_fingerprint="-", instances=1, strategies=[], backends=[],
                           package_version="test",
                           created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        run = Runner([instances[spec.benchmark]], [spec], [backend], out / entry.name, config,
                     progress=False)
        asyncio.run(run.run())
        lines = (out / entry.name / "trajectories.jsonl").read_text().splitlines()
        result[entry.name] = [json.loads(line)["status"] for line in lines]
        result[entry.name + ":errors"] = [(json.loads(line).get("error") or {}).get("kind")
                                          for line in lines]
        result[entry.name + ":overlays"] = backend.overlays
    result["api imported"] = "unseen.api" in sys.modules
    print(json.dumps(result))
''')


def test_every_strategy_runs_through_the_engine_alone(sample_data, director_scenes, tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(sample_data), str(director_scenes),
                           str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result.pop("api imported") is False
    names = {k for k in result if ":" not in k}
    # the built-ins of every benchmark, SPoE's overlay strategies among them
    assert {"direct", "cot", "cot-sr", "spoe", "spoe-grid", "spoe-search", "director",
            "director-code"} <= names
    for name in names:
        assert result[name] == ["answered"], (name, result[name + ":errors"])
    # the SPoE family sent its overlays, drawn without unseen.api having registered anything
    assert all(result[f"{n}:overlays"] > 0 for n in ("spoe", "spoe-grid", "spoe-search"))
