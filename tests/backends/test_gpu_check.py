"""benchmarks/gpu_check.py: without vLLM (or a GPU) it says so in one line and exits 0."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


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


def test_verdict_fails_on_config_errors_and_on_no_output_tokens(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(), _row("answered")]), 2.0)
    assert ok and line == "2 trajectories, 1.0 calls/s (answered 1, parse 1)"
    # the old verdict said ok here: nothing answered, every call a set-up failure
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(kind="config", tokens=0,
                                                          message="vLLM could not start")]), 1.0)
    assert not ok and line.endswith("no output tokens; first error: vLLM could not start")
    line, ok = gpu_check.verdict(_journal(tmp_path, [_row(kind="empty", tokens=0)]), 1.0)
    assert not ok and "no output tokens" in line
    assert not gpu_check.verdict(_journal(tmp_path, [_row(kind="internal")]), 1.0)[1]
