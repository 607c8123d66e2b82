"""Director power simulation: coverage of the 95% intervals per comparison (target 93-97% with
G = 160 scenes and 5 samples per scene), the power, and the run time.

Runs ``evals.director.analysis.power`` on a benchmark design that touches every kind of comparison:
large and null effects, the digit strata, the reply-level ``report-excludes-hidden`` filter,
``ldv_other`` (a filter on the choice itself), a margin test on accuracy, and rates near zero
(the combined constraint, where the paired estimator takes over).

    python benchmarks/director_power.py [--reps 2000] [--workers 2] [--scenes resample|fixed]
                                        [--design paper|quick|FILE] [--n 160] [--samples 5]
                                        [--effect knob=value ...]
"""

from __future__ import annotations

import argparse
import math
import time
import tomllib

from rich.console import Console

from unseen.evals.director.analysis.power import parse_effects
from unseen.evals.director.analysis.power_report import power_report, render
from unseen.evals.director.study.design import Design, load_design

DESIGN = """
name = "power-benchmark"
samples = 5
seed = 0
scene_seed = 0
[sets.main]
n = 160

[[batch]]
name = "question"
conditions = ["move", "move/novis", "move/count", "mean", "mean/novis", "move/know",
              "move/twoturn"]
[[batch]]
name = "constraint"
conditions = ["move", "move+combined", "move+padding", "move+knowledge"]

[[comparison]]
batch = "question"
base = "move/novis"
variant = "move"
family = "s4"
label = "vis question, move: hidden"
[[comparison]]
batch = "question"
base = "move/novis"
variant = "move"
where = "hidden-top-digit"
family = "s4"
label = "vis question, move: hidden [hidden top digit]"
[[comparison]]
batch = "question"
base = "move/novis"
variant = "move"
where = "hidden-not-top-digit"
family = "s4"
label = "vis question, move: hidden [not top digit]"
[[comparison]]
batch = "question"
base = "move/novis"
variant = "move/count"
family = "s4"
label = "count question, move: hidden"
[[comparison]]
batch = "question"
base = "mean/novis"
variant = "mean"
family = "s4"
label = "vis question, mean: hidden"
[[comparison]]
batch = "question"
base = "move/novis"
variant = "move"
measure = "dv"
family = "s4"
label = "vis question, move: director-view"
[[comparison]]
batch = "question"
base = "move/novis"
variant = "move"
measure = "ldv"
family = "s4"
label = "vis question, move: largest digit"
[[comparison]]
batch = "question"
base = "move"
variant = "mean"
measure = "accuracy"
margin = true
label = "accuracy, mean - move (margin)"
[[comparison]]
batch = "question"
base = "move"
variant = "move/twoturn"
measure = "accuracy"
margin = true
label = "accuracy, twoturn - move (margin)"
[[comparison]]
batch = "question"
base = "move"
variant = "move/know"
family = "s5"
label = "know - vis question: hidden"
[[comparison]]
batch = "question"
base = "move"
variant = "move/know"
where = "report-excludes-hidden"
family = "s5"
label = "know - vis: hidden [report excludes hidden]"
[[comparison]]
batch = "constraint"
base = "move"
variant = "move+combined"
measure = "joint"
family = "s6"
label = "combined: joint"
[[comparison]]
batch = "constraint"
base = "move"
variant = "move+combined"
family = "s6"
label = "combined: hidden"
[[comparison]]
batch = "constraint"
base = "move"
variant = "move+padding"
measure = "joint"
family = "s6"
label = "padding: joint (null)"
[[comparison]]
batch = "constraint"
base = "move"
variant = "move+knowledge"
measure = "ldv_other"
family = "s6"
label = "knowledge clause: ldv among non-DV choices"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenes", choices=("resample", "fixed"), default="resample")
    ap.add_argument("--design", default=None, help="a design name or file (default: built in)")
    ap.add_argument("--n", type=int, default=None, help="scenes per set (default: the design's)")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--effect", action="append", default=[], metavar="KNOB=VALUE")
    ap.add_argument("--exact", action="store_true", help="fit with stats.compare (slow)")
    args = ap.parse_args()
    design = (load_design(args.design) if args.design
              else Design.model_validate(tomllib.loads(DESIGN)))
    update: dict = {}
    if args.samples:
        update["samples"] = args.samples
    if args.n:
        update["sets"] = {k: v.model_copy(update={"n": args.n}) for k, v in design.sets.items()}
    design = design.model_copy(update=update)
    t0 = time.perf_counter()
    report = power_report(design, effects=parse_effects(args.effect), reps=args.reps,
                          seed=args.seed, scenes=args.scenes, workers=args.workers,
                          exact=args.exact)
    seconds = time.perf_counter() - t0
    console = Console(width=180)
    console.print(render(report, title=f"{design.name}: {args.reps} simulated studies, "
                                       f"scenes {args.scenes}"))
    covs = [r["coverage"] for r in report if not math.isnan(r["coverage"])]
    inside = sum(0.93 <= c <= 0.97 for c in covs)
    fits = args.reps * len(report)
    print(f"coverage: min {min(covs):.3f}, max {max(covs):.3f}, mean {sum(covs) / len(covs):.3f}; "
          f"{inside} of {len(covs)} comparisons within 93-97% "
          f"(Monte Carlo SE at 95%: {math.sqrt(0.95 * 0.05 / args.reps):.3f})")
    print(f"time: {seconds:.1f} s for {args.reps} studies x {len(report)} comparisons "
          f"({1000 * seconds / max(fits, 1):.1f} ms per estimate, {args.workers} workers)")


if __name__ == "__main__":
    main()
