"""A check for the day a GPU is at hand: vllm-local and a `vllm serve` server on a tiny VLM.

Builds a Qwen2-VL-style vision-language model with random weights entirely on this machine
(a transformers config of a few layers, a BPE tokenizer trained on the spot on the project's
own prompts, the Qwen2-VL image processor), saved to a temporary folder: nothing is
downloaded. Then it runs `direct` and `spoe` over the bundled SceneFunRI sample and one
Director condition (`move`) through `vllm-local` (vLLM in this process: one engine serves
both studies) and through `vllm:` against one `vllm serve` subprocess on the same folder, and
prints, for each, the calls per second and whether every reply parsed or failed as a typed
error. Random weights answer nonsense, so most replies fail to parse: the check is that each
failure is typed (a parse failure or a provider error), never a crash or an untyped error.
Both engines start with spawned workers and without FlashInfer's sampler (:data:`ENV`).

Without a GPU or without vLLM it says so in one line and exits 0.

    pip install -e '.[vllm]'        # on a machine with an NVIDIA GPU
    python benchmarks/gpu_check.py [--limit N] [--servers K] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SERVED = "tiny-qwen2-vl"


def unavailable() -> str | None:
    """Why this machine cannot run the check, or None."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'unseen[vllm]' on a machine with a GPU)"
    # in a subprocess: CUDA initialised in this process makes vLLM fork its engine into a
    # bad state ("Cannot re-initialize CUDA in forked subprocess", vllm-project/vllm#9469)
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
    if probe.stdout.strip() != "True":
        return "no CUDA GPU is visible to torch"
    return None


def build_tiny_vlm(folder: Path) -> Path:
    """The shared tiny model (backends/tiny_vlm.py): Qwen2-VL, its outputs capped at 32 new
    tokens by its generation config (random weights almost never emit EOS)."""
    from unseen.backends.tiny_vlm import build_tiny_vlm as build

    return build(folder, dtype="bfloat16")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the environment both engines start in, where the user set none of these: spawned workers (a
#: parent that touched CUDA cannot fork, vllm-project/vllm#9469), no FlashInfer sampler (the
#: wheel ships it as source, compiled at start-up: minutes), fewer log lines
ENV = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", "VLLM_USE_FLASHINFER_SAMPLER": "0",
       "VLLM_LOGGING_LEVEL": "WARNING"}


def engine_env() -> dict[str, str]:
    """This process's environment with :data:`ENV` where it sets none of those."""
    return {**ENV, **os.environ}


@contextlib.contextmanager
def check_environment():
    """:data:`ENV` in this process's environment where it sets none of those, for the
    engine vLLM starts here (its workers inherit them); taken out again afterwards."""
    added = [k for k in ENV if k not in os.environ]
    os.environ.update({k: ENV[k] for k in added})
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


# the reasoning parser too: the tiny tokenizer has <think> and </think>
CAP = {"max_new_tokens": 32}
ENGINE = {"max_model_len": 4096, "gpu_memory_utilization": 0.25, "enforce_eager": True,
          "limit_mm_per_prompt": {"image": 1}, "reasoning_parser": "qwen3",
          "override_generation_config": CAP}


def start_server(model: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(model),
           "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(ENGINE["max_model_len"]),
           "--gpu-memory-utilization", str(ENGINE["gpu_memory_utilization"]), "--enforce-eager",
           "--limit-mm-per-prompt", json.dumps(ENGINE["limit_mm_per_prompt"]),
           "--reasoning-parser", ENGINE["reasoning_parser"],
           "--override-generation-config", json.dumps(CAP)]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=engine_env())
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vllm serve exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(2)
    proc.kill()
    raise SystemExit(f"vllm serve did not answer /health within 600 s; see {log}")


def verdict(run_dir: Path, seconds: float) -> tuple[str, bool]:
    """calls/s and the outcome counts of one run directory. ok when something ran, nothing
    failed untyped (internal) or on the set-up (config), and some reply carried output
    tokens; otherwise the line ends with the first error's message."""
    rows = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    steps = [s for r in rows for s in r["steps"]]
    kinds: dict[str, int] = {}
    for r in rows:
        kind = "answered" if r["status"] == "answered" else (r.get("error") or {}).get("kind", "?")
        kinds[kind] = kinds.get(kind, 0) + 1
    tokens = sum((s.get("reply") or {}).get("usage", {}).get("output_tokens", 0) for s in steps)
    ok = bool(rows) and tokens > 0 and not ({"internal", "config", "?"} & set(kinds))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    line = f"{len(rows)} trajectories, {len(steps) / seconds:.1f} calls/s ({counts})"
    if not ok:
        first = next((r["error"]["message"] for r in rows if r.get("error")), None)
        line += "; no output tokens" if tokens == 0 else ""
        line += f"; first error: {first}" if first else ""
    return line, ok


def run_all(spec: str, out: Path, limit: int, *, hold: bool = False
            ) -> list[tuple[str, str, bool]]:
    """direct and spoe on the sample set, and the Director condition `move`, through ``spec``,
    in one event loop; ``hold``: one backend held open across both, so vllm-local starts one
    engine and both studies' backends use it."""
    return asyncio.run(run_all_async(spec, out, limit, hold=hold))


async def run_all_async(spec: str, out: Path, limit: int, *, hold: bool = False
                        ) -> list[tuple[str, str, bool]]:
    from unseen import run_study_async
    from unseen.api import run_async
    from unseen.backends import make_backend
    from unseen.engine.backend import ProviderError
    from unseen.evals.director.study.design import Design

    held = make_backend(spec) if hold else None
    try:
        if held is not None:
            try:
                await held.ready()
            except ProviderError as exc:  # each study would start it again: minutes each
                return [(what, f"the engine did not start: {exc}", False)
                        for what in ("direct + spoe", "director move")]
        results = []
        t0 = time.perf_counter()
        await run_async(None, ["direct", "spoe:T=3"], [spec], out=out / "scenefunri",
                        limit=limit, cache=False, progress=False, timeout_s=300,
                        max_attempts=2)
        results.append(("direct + spoe", *verdict(out / "scenefunri", time.perf_counter() - t0)))
        design = Design.model_validate({"name": "gpu-check", "size": "512x384",
                                        "sets": {"main": {"n": max(2, limit // 2)}},
                                        "batch": [{"name": "b", "conditions": ["move"]}]})
        t0 = time.perf_counter()
        await run_study_async(design, [spec], out / "director", progress=False, cache=False,
                              timeout_s=300, max_attempts=2)
        results.append(("director move", *verdict(out / "director", time.perf_counter() - t0)))
        return results
    finally:
        if held is not None:
            await held.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4, help="SceneFunRI instances")
    parser.add_argument("--require", action="store_true",
                        help="exit 1 when the check cannot run here (no vLLM or no GPU)")
    parser.add_argument("--servers", type=int, default=1, help="vllm serve processes")
    parser.add_argument("--keep", type=Path, default=None, help="work folder to keep")
    args = parser.parse_args(argv)
    why = unavailable()
    if why:
        print(f"gpu_check: skipped: {why}")
        return 1 if args.require else 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="unseen-gpu-check-"))
    model = build_tiny_vlm(work / "tiny-qwen2-vl")
    print(f"tiny model: {model}")
    engine = ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                      for k, v in ENGINE.items())
    with check_environment():
        # the tiny model does not think: an empty think block, so qwen3's parser keeps the
        # answer and the grammar applies from the first token
        rows = [("vllm-local", *r) for r in run_all(
            f"vllm-local:{model},{engine},enable_thinking=false", work / "local", args.limit,
            hold=True)]
    servers = [start_server(model, work / f"serve-{i}.log") for i in range(args.servers)]
    try:
        urls = ",".join(url for _, url in servers)
        rows += [(f"vllm serve ×{args.servers}", *r)
                 for r in run_all(f"vllm:{SERVED}@{urls},enable_thinking=false",
                                  work / "served", args.limit)]
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=60)
    ok = True
    for backend, what, line, good in rows:
        ok &= good
        print(f"{backend:16} {what:14} {'ok' if good else 'FAILED'}  {line}")
    if args.keep:
        print(f"work folder: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
