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
