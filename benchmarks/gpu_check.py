"""A check for the day a GPU is at hand: vllm-local and a `vllm serve` server on a tiny VLM.

Builds a Qwen2-VL-style vision-language model with random weights entirely on this machine
(a transformers config of a few layers, a BPE tokenizer trained on the spot on the project's
own prompts, the Qwen2-VL image processor), saved to a temporary folder: nothing is
downloaded. Then it runs `direct` and `spoe` over the bundled SceneFunRI sample and one
Director condition (`move`) through `vllm-local` (vLLM in this process) and through `vllm:`
against a `vllm serve` subprocess on the same folder, and prints, for each, the calls per
second and whether every reply parsed or failed as a typed error. Random weights answer
nonsense, so most replies fail to parse: the check is that each failure is typed (a parse
failure or a provider error), never a crash or an untyped error.

Without a GPU or without vLLM it says so in one line and exits 0.

    pip install -e '.[vllm]'        # on a machine with an NVIDIA GPU
    python benchmarks/gpu_check.py [--limit N] [--servers K] [--keep DIR]
"""

from __future__ import annotations

import argparse
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

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
            "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
            "<think>", "</think>"]
# Qwen2-VL's chat template, cut to what these requests use (text and images in user turns);
# enable_thinking=false writes an empty think block, as Qwen3's does
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif 'text' in content %}"
    "{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
SERVED = "tiny-qwen2-vl"


def unavailable() -> str | None:
    """Why this machine cannot run the check, or None."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'unseen[vllm]' on a machine with a GPU)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch"
    return None


def corpus() -> list[str]:
    """Text to train the tokenizer on: the project's prompt templates and JSON."""
    import unseen

    root = Path(unseen.__file__).resolve().parents[1]
    texts = [p.read_text(encoding="utf-8") for d in ("strategies/prompts", "evals/director/prompts")
             for p in sorted((root / d).rglob("*.txt"))]
    return texts + ['{"box": [12, 345, 678, 901]}', '{"choice": "A"}', "A B C 0123456789"]


def build_tiny_vlm(folder: Path, *, hidden: int = 128, layers: int = 2, vocab: int = 2000) -> Path:
    """A random-weight Qwen2-VL-style model, tokenizer and processor saved under ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,  # needs torchvision, which vLLM installs
    )

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:8])
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}

    heads = 4
    head_dim = hidden // heads
    half = head_dim // 2  # mrope splits the rotary half over time, height and width
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": 2,
            "max_position_embeddings": 4096, "max_window_layers": layers,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                "mrope_section": [half // 4, 3 * half // 8,
                                                  half - half // 4 - 3 * half // 8]},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
            "tie_word_embeddings": False,
        },
        vision_config={"depth": layers, "embed_dim": 64, "hidden_size": hidden, "num_heads": 4,
                       "mlp_ratio": 2, "patch_size": 14, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    config.architectures = ["Qwen2VLForConditionalGeneration"]
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    # small images: at most 64 merged patches each, well inside a 4,096-token context
    images = Qwen2VLImageProcessor(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)
    processor = Qwen2VLProcessor(image_processor=images, tokenizer=tokenizer,
                                 video_processor=Qwen2VLVideoProcessor(),
                                 chat_template=CHAT_TEMPLATE)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# the reasoning parser too: the tiny tokenizer has <think> and </think>
ENGINE = {"max_model_len": 4096, "gpu_memory_utilization": 0.25, "enforce_eager": True,
          "limit_mm_per_prompt": {"image": 1}, "reasoning_parser": "qwen3"}


def start_server(model: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(model),
           "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(ENGINE["max_model_len"]),
           "--gpu-memory-utilization", str(ENGINE["gpu_memory_utilization"]), "--enforce-eager",
           "--limit-mm-per-prompt", json.dumps(ENGINE["limit_mm_per_prompt"]),
           "--reasoning-parser", ENGINE["reasoning_parser"]]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
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
    """calls/s and the outcome counts of one run directory; ok when nothing failed untyped."""
    rows = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    calls = sum(len(r["steps"]) for r in rows)
    kinds: dict[str, int] = {}
    for r in rows:
        kind = "answered" if r["status"] == "answered" else (r.get("error") or {}).get("kind", "?")
        kinds[kind] = kinds.get(kind, 0) + 1
    ok = bool(rows) and not ({"internal", "?"} & set(kinds))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    return f"{len(rows)} trajectories, {calls / seconds:.1f} calls/s ({counts})", ok


def run_all(spec: str, out: Path, limit: int) -> list[tuple[str, str, bool]]:
    """direct and spoe on the sample set, and the Director condition `move`, through ``spec``."""
    import unseen
    from unseen.director import run_study
    from unseen.evals.director.study import Design

    results = []
    t0 = time.perf_counter()
    unseen.run(None, ["direct", "spoe:T=3"], [spec], out=out / "scenefunri", limit=limit,
               cache=False, progress=False, timeout_s=300, max_attempts=2)
    results.append(("direct + spoe", *verdict(out / "scenefunri", time.perf_counter() - t0)))
    design = Design.model_validate({"name": "gpu-check", "size": "512x384",
                                    "sets": {"main": {"n": max(2, limit // 2)}},
                                    "batch": [{"name": "b", "conditions": ["move"]}]})
    t0 = time.perf_counter()
    run_study(design, [spec], out / "director", progress=False, cache=False, timeout_s=300,
              max_attempts=2)
    results.append(("director move", *verdict(out / "director", time.perf_counter() - t0)))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=8, help="SceneFunRI instances")
    parser.add_argument("--servers", type=int, default=1, help="vllm serve processes")
    parser.add_argument("--keep", type=Path, default=None, help="work folder to keep")
    args = parser.parse_args(argv)
    why = unavailable()
    if why:
        print(f"gpu_check: skipped: {why}")
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="unseen-gpu-check-"))
    model = build_tiny_vlm(work / "tiny-qwen2-vl")
    print(f"tiny model: {model}")
    engine = ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                      for k, v in ENGINE.items())
    rows = [("vllm-local", *r) for r in run_all(f"vllm-local:{model},{engine}",
                                                 work / "local", args.limit)]
    servers = [start_server(model, work / f"serve-{i}.log") for i in range(args.servers)]
    try:
        urls = ",".join(url for _, url in servers)
        rows += [(f"vllm serve ×{args.servers}", *r)
                 for r in run_all(f"vllm:{SERVED}@{urls}", work / "served", args.limit)]
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=60)
    ok = True
    for backend, what, line, good in rows:
        ok &= good
        print(f"{backend:16} {what:14} {'ok' if good else 'UNTYPED FAILURES'}  {line}")
    if args.keep:
        print(f"work folder: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    sys.exit(main())
