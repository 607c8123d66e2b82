"""How often a command reads a 10,000-trajectory journal, and what the reading costs.

Makes two simulated runs: a SceneFunRI run (direct and spoe:T=3 over the test set, its
records repeated as further samples up to N, so every instance id stays in the data set)
and a Director study (the quick design at 63 samples a scene: 10,080 replies). Then, in a
fresh process each, it runs ``unseen export RUN --html DIR``, ``unseen show RUN`` and
``unseen director analyze RUN`` and prints, per command: how many times the journal was
opened, the CPU seconds (``process_time``), the share of them spent reading records
(``engine.journal``: JSON, the heads' check, scrubbing) and the peak RSS.

    python benchmarks/read_once.py [--n 10000] [--dir /tmp/read_once]

The figures are simulated runs' (the simulator answered); they measure the reading, not a
model.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import cProfile
import io
import os
import pstats
import resource
import subprocess
import sys
import time
from pathlib import Path

READERS = ("engine/journal.py", "engine/rundir.py", "engine/redact.py")


def make_runs(root: Path, n: int) -> tuple[Path, Path]:
    from tui_open import make_run  # the same small run, repeated here as samples

    big = make_run(root, n, as_samples=True)
    study = root / "director"
    if not (study / "trajectories.jsonl").is_file():
        from importlib import resources

        text = (resources.files("unseen.evals.director.study") / "designs" / "quick.toml").read_text()
        design = root / "quick63.toml"
        design.write_text(text.replace("samples = 5", "samples = 63"))
        subprocess.run([sys.executable, "-m", "unseen.cli", "director", "run", str(design),
                        "--backend", "sim", "--out", str(study)], check=True,
                       stdout=subprocess.DEVNULL)
    return big, study


def measure(argv: list[str]) -> None:
    """One command in this process: journal opens, CPU, reading's share, peak RSS."""
    opened: list[str] = []
    real_open = builtins.open

    def counting(file, *a, **k):
        if str(file).endswith("trajectories.jsonl"):
            opened.append(str(file))
        return real_open(file, *a, **k)

    builtins.open = counting
    from unseen import cli

    prof = cProfile.Profile()
    sys.argv = ["unseen", *argv]
    c0 = time.process_time()
    prof.enable()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main()
    prof.disable()
    cpu = time.process_time() - c0
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    reading = sum(tt for (file, _, _), (_, _, tt, _, _) in stats.items()
                  if file.endswith(READERS)) + sum(
        tt for (file, _, name), (_, _, tt, _, _) in stats.items()
        if "orjson" in name or name == "<method 'validate_python' of "
        "'pydantic_core._pydantic_core.SchemaValidator' objects>")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{argv[0] if argv[0] != 'director' else 'director analyze':17} journal opened "
          f"{len(opened)}x · {cpu:5.2f} s CPU, reading {reading / cpu:4.0%} of it · "
          f"peak RSS {rss:.0f} MB")


def _lines(run: Path) -> int:
    return (run / "trajectories.jsonl").read_bytes().count(b"\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/read_once"))
    ap.add_argument("--measure", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        measure(args.measure)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    sfr, study = make_runs(args.dir, args.n)
    print(f"SceneFunRI run {sfr} ({_lines(sfr)} "
          f"trajectories), Director study {study} "
          f"({_lines(study)} replies); simulated; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for argv in (["export", str(sfr), "--html", str(args.dir / "html")], ["show", str(sfr)],
                 ["director", "analyze", str(study)]):
        subprocess.run([sys.executable, __file__, "--measure", *argv], check=True)


if __name__ == "__main__":
    main()
