"""The device check's run: the tiny model through ``hf`` on this machine's GPU (or its CPU),
then vllm-local and ``vllm serve`` through gpu_check.py where vLLM is installed.

Prints, per study (direct + spoe over the SceneFunRI sample, the Director condition `move`),
the calls per second and the outcome counts; random weights answer nonsense, so the check
is that every failure is typed and some reply carried output tokens. Exit 1 otherwise.

    python benchmarks/device_check.py [--limit N] [--device cuda|cpu]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4, help="SceneFunRI instances")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if seen)")
    args = parser.parse_args(argv)
    import torch

    from unseen.backends.hf_local import has_torchvision
    from unseen.backends.tiny_vlm import build_tiny_vlm

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = "bfloat16" if device == "cuda" else "float32"
    work = Path(tempfile.mkdtemp(prefix="unseen-device-check-"))
    t0 = time.perf_counter()
    model = build_tiny_vlm(work / "tiny-qwen2-vl", dtype=dtype)
    processor = "" if has_torchvision() else ", image-only processor: no torchvision"
    print(f"tiny model (qwen2-vl, {dtype}{processor}) built in {time.perf_counter() - t0:.1f} s; "
          f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(0)})" if device == "cuda" else ""))
    spec = f"hf:{model},device_map={device},dtype={dtype},box_format=norm1000,batch_size=16"
    ok = True
    for what, line, good in gpu_check.run_all(spec, work / "hf", args.limit):
        ok &= good
        print(f"{'hf ' + device:16} {what:14} {'ok' if good else 'FAILED'}  {line}")
    if importlib.util.find_spec("vllm") is not None and device == "cuda":
        ok &= gpu_check.main(["--limit", str(args.limit), "--require"]) == 0
    else:
        print("vllm-local / vllm serve: skipped: vLLM is not installed here")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
