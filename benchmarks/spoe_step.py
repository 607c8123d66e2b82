"""CPU per SPoE step at SceneFun3D's resolution (1920x1440), beside a `direct` call.

The 24-image test set is scaled to 1920x1440 and saved as JPEG (with a little grain, so the
files weigh what camera frames do), then ``unseen run`` runs, each as a fresh process
against a local fake OpenAI server that answers at once, at concurrency 32: ``spoe`` (every
step draws two labelled boxes on the full image and encodes it) and ``direct`` (the image
file as it is). A process's CPU is its user + system time (``os.wait4``), start-up
included, divided by the steps its journal holds (direct makes as many calls as SPoE made
steps); a 1-sample SPoE run in the same round gives the marginal CPU per step beyond
start-up. Prints each, the ratio spoe / direct, and spoe's against the 12 ms target.

With ``--fitted SIDE``, the same round also runs SPoE with ``max_image_side=SIDE`` (drawn
at full size, then fitted) and with ``draw_fitted=true`` too (drawn on the fitted image,
encoded once), and prints the ratio of the two.

    python benchmarks/spoe_step.py [--samples 8] [--rounds 2] [--concurrency 32] [--fitted 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

from cpu_per_call import UNSEEN, cpu_of, start_server
from PIL import Image, ImageFilter

TARGET_MS = 12.0
SIZE = (1920, 1440)


def hires_set(out: Path) -> Path:
    """The test set at 1920x1440 as JPEG, its boxes scaled with it."""
    from unseen.evals.scenefunri.data.sample import write_test_set

    small = write_test_set(out / "small")
    data = out / "hires"
    (data / "images").mkdir(parents=True)
    rng = random.Random(0)
    lines = []
    for line in (small / "instances.jsonl").read_text().splitlines():
        rec = json.loads(line)
        with Image.open(small / rec["image"]) as im:
            sx, sy = SIZE[0] / im.width, SIZE[1] / im.height
            big = im.convert("RGB").resize(SIZE, Image.Resampling.BICUBIC)
        grain = Image.effect_noise(SIZE, 24).filter(ImageFilter.GaussianBlur(0.6))
        big = Image.blend(big, Image.merge("RGB", [grain] * 3), 0.08)
        name = f"images/{rec['id']}.jpg"
        big.save(data / name, "JPEG", quality=rng.choice([90, 92, 95]))
        x1, y1, x2, y2 = rec["box"]
        rec.update(image=name, box=[round(x1 * sx), round(y1 * sy), round(x2 * sx),
                                    round(y2 * sy)])
        lines.append(json.dumps(rec))
    (data / "instances.jsonl").write_text("\n".join(lines) + "\n")
    return data


def steps_in(run: Path) -> int:
    with open(run / "trajectories.jsonl", encoding="utf-8") as fh:
        return sum(len(json.loads(line)["steps"]) for line in fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=8, help="samples per instance")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--strategy", default="spoe", help="the overlay strategy measured")
    ap.add_argument("--fitted", type=int, help="also max_image_side=N, with and without "
                    "draw_fitted")
    args = ap.parse_args()
    # each strategy gets a server whose reply it reads: SPoE a choice, direct a box
    servers = {"spoe": start_server(text='{"choice": "A"}'), "direct": start_server()}
    cpu: dict[str, list[float]] = {"spoe": [], "direct": [], "spoe marginal": []}
    if args.fitted:
        cpu.update({"spoe fitted": [], "spoe drawn fitted": []})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = hires_set(Path(tmp))
            env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key",
                   "COLUMNS": "100"}

            def run(name: str, strategy: str, samples: int, tag: str,
                    options: str = "") -> tuple[float, int]:
                out = Path(tmp) / tag
                argv = [UNSEEN, "run", "--data", str(data), "-s", strategy,
                        "-b", "openai:gpt-4o" + options, "--base-url", servers[name][1] + "/v1",
                        "--samples", str(samples), "--concurrency", str(args.concurrency),
                        "--fixed-concurrency", "--no-cache", "--out", str(out)]
                spent = cpu_of(argv, env, tmp)
                return spent, steps_in(out)

            for r in range(args.rounds):
                small = run("spoe", args.strategy, 1, f"small{r}")
                big = run("spoe", args.strategy, args.samples, f"spoe{r}")
                # direct makes as many calls as SPoE made steps, so start-up weighs alike
                calls = run("direct", "direct", max(1, round(big[1] / 24)), f"direct{r}")
                cpu["spoe"].append(big[0] / big[1] * 1000)
                cpu["direct"].append(calls[0] / calls[1] * 1000)
                cpu["spoe marginal"].append((big[0] - small[0]) / (big[1] - small[1]) * 1000)
                if args.fitted:
                    for key, extra in (("spoe fitted", ""), ("spoe drawn fitted",
                                                             ",draw_fitted=true")):
                        spent, steps = run("spoe", args.strategy, args.samples, f"{key}{r}",
                                           f",max_image_side={args.fitted}{extra}")
                        cpu[key].append(spent / steps * 1000)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=10)
    med = statistics.median
    for name, vals in cpu.items():
        what = ("beyond a 1-sample run's (its start-up)" if "marginal" in name
                else "start-up included")
        print(f"{name:13} CPU per step at {SIZE[0]}x{SIZE[1]}, c = {args.concurrency}, {what}: "
              f"median {med(vals):.2f} ms (rounds: {' '.join(f'{v:.2f}' for v in vals)})")
    s, d = med(cpu["spoe"]), med(cpu["direct"])
    print(f"spoe / direct: ratio {s / d:.2f}; spoe against the {TARGET_MS:g} ms target: "
          f"ratio {s / TARGET_MS:.2f} (marginal: {med(cpu['spoe marginal']) / TARGET_MS:.2f})")
    if args.fitted:
        f, df = med(cpu["spoe fitted"]), med(cpu["spoe drawn fitted"])
        print(f"at max_image_side={args.fitted}: draw_fitted / drawn then fitted: ratio "
              f"{df / f:.2f}; draw_fitted against the target: ratio {df / TARGET_MS:.2f}")


if __name__ == "__main__":
    sys.exit(main())
