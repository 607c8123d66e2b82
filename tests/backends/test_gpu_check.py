"""benchmarks/gpu_check.py: without vLLM (or a GPU) it says so in one line and exits 0; with
vLLM (the stand-in, and a fake ``vllm serve``) it starts one engine per path, in the
environment it sets, with its outputs capped."""

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import vllm_standin
from fake_providers import FakeProvider

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


@pytest.fixture
def gpu_check():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    return gpu_check


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                    reason="vLLM is installed here: the check may run for real (minutes, a GPU)")
def test_without_vllm_one_line_and_exit_0():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("gpu_check: skipped: vLLM is not installed (pip install "
                           "'unseen[vllm]' on a machine with a GPU)\n")
    assert proc.stderr == ""


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                    reason="vLLM is installed here: the check may run for real (minutes, a GPU)")
def test_skipped_under_require_exits_1():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--require"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout.startswith("gpu_check: skipped:")


def _journal(tmp_path, rows):
    import json

    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def _row(status="unanswered", kind="parse", tokens=5, message="no box"):
    return {"status": status, "error": None if status == "answered" else
            {"kind": kind, "message": message},
            "steps": [{"reply": {"usage": {"output_tokens": tokens}}}]}


def test_verdict_fails_on_config_errors_and_on_no_output_tokens(tmp_path, gpu_check):
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(), _row("answered")]), 2.0)
    assert ok and line == "2 trajectories, 1.0 calls/s (answered 1, parse 1)"
    # the old verdict said ok here: nothing answered, every call a set-up failure
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(kind="config", tokens=0,
                                                          message="vLLM could not start")]), 1.0)
    assert not ok and line.endswith("no output tokens; first error: vLLM could not start")
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(kind="empty", tokens=0)]), 1.0)
    assert not ok and "no output tokens" in line
    assert not gpu_check.verdict(_journal(tmp_path, [_row(kind="internal")]), 1.0)[1]


def test_the_gpu_probe_runs_in_a_subprocess(monkeypatch, gpu_check):
    """CUDA initialised in this process makes vLLM fork its engine into a bad state
    (vllm-project/vllm#9469): the check asks a child process whether a GPU is there."""
    import torch

    vllm_standin.install(monkeypatch)  # vLLM "installed": the probe comes next

    def touched(*args, **kwargs):
        raise AssertionError("the parent touched CUDA")

    monkeypatch.setattr(torch.cuda, "is_available", touched)
    monkeypatch.setattr(torch.cuda, "init", touched)
    probes = []

    def run(cmd, **kwargs):
        probes.append((cmd, subprocess.run(cmd, **kwargs)))
        return probes[-1][1]

    monkeypatch.setattr(gpu_check, "subprocess", types.SimpleNamespace(run=run))
    verdict = gpu_check.unavailable()
    ((probe, child),) = probes
    # the child's answer decides (a GPU machine: None; here: no GPU)
    gpu = child.stdout.strip() == "True"
    assert verdict == (None if gpu else "no CUDA GPU is visible to torch")
    assert probe[0] == sys.executable and "torch.cuda.is_available()" in probe[-1]
    assert not torch.cuda.is_initialized()


def test_one_engine_per_path_in_the_environment_the_check_sets(monkeypatch, tmp_path,
                                                               gpu_check, capsys):
    """vllm-local: one engine serves both studies; vllm serve: one server. Both start with
    spawned workers and FlashInfer's sampler off (a variable the user set is kept), their
    outputs capped at 32 new tokens; this process's environment is left as it was."""
    world = vllm_standin.install(monkeypatch)
    monkeypatch.setattr(gpu_check, "unavailable", lambda: None)
    monkeypatch.setattr(gpu_check, "build_tiny_vlm",
                        lambda folder: (folder.mkdir(parents=True), folder)[1])
    monkeypatch.delenv("VLLM_USE_FLASHINFER_SAMPLER", raising=False)
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")  # the user's: kept
    launched = []

    class Serve:  # a `vllm serve` child: a fake OpenAI-compatible server on its --port
        def __init__(self, cmd, stdout=None, stderr=None, env=None):
            self.server = FakeProvider(port=int(cmd[cmd.index("--port") + 1]))
            self.server.serve(gpu_check.SERVED).start()
            launched.append((cmd, env, self.server))

        def poll(self):
            return None

        def terminate(self):
            self.server.stop()

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(gpu_check, "subprocess", types.SimpleNamespace(
        Popen=Serve, STDOUT=subprocess.STDOUT))
    assert gpu_check.main(["--limit", "2", "--keep", str(tmp_path)]) == 0, capsys.readouterr()
    calls = {path: sum(len(json.loads(line)["steps"]) for study in ("scenefunri", "director")
                       for line in (tmp_path / path / study / "trajectories.jsonl").open())
             for path in ("local", "served")}
    (engine,) = world.engines  # one engine, both studies
    assert len(engine.requests) == calls["local"] and engine.stopped
    assert engine.env["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
    assert engine.env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert engine.env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert engine.engine_args.override_generation_config == {"max_new_tokens": 32}
    assert {r["params"].max_tokens for r in engine.requests} == {32}
    (cmd, env, server), = launched  # one server, both studies
    assert len(server.requests) == calls["served"]
    flag = cmd.index("--override-generation-config")
    assert json.loads(cmd[flag + 1]) == {"max_new_tokens": 32} and "--enforce-eager" in cmd
    assert env["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert "VLLM_USE_FLASHINFER_SAMPLER" not in os.environ
