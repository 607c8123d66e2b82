"""What the views that read a whole run cost, before and after, on runs of the paper's size.

Builds once, under ``--dir`` (kept between calls):

- a SceneFunRI run of 10,000 trajectories: the small simulated run of ``tui_open`` (direct and
  spoe:T=3 over six test-set instances) repeated as further samples;
- a Director study of the paper's size, 174,600 replies (~400 MB journal): the paper design run
  with the simulator at one sample a scene (34,920 replies), its records repeated as samples
  0..4 under new keys.

Both journals are written through the journal's own writer (``JournalWriter.append_line``, which
scrubs each line as a run does and records what it wrote scrubbed). Then it runs, each in a
fresh process and both sides taken in turn:

- ``unseen export RUN --html DIR`` of the SceneFunRI run (target: under 5 s);
- ``unseen show RUN`` of it, and of the study;
- ``unseen director analyze STUDY --format json`` (targets: under 15 s and 400 MB);

with the code of ``--before`` (a git commit, extracted with ``git archive`` and imported in
place of the working tree's) and with the working tree's, and prints for each: wall time
(start-up included, what the user waits for), CPU, peak RSS, how many times the command opened
the journal and how many passes over it it made (opens that read from its start past its
middle; the other opens read a line or a few bytes: a record, a torn end), the ratio
after/before and the ratio to the target. With ``--profile`` it prints, for the working tree's
code, the functions that take the most time (cProfile) instead.

    python benchmarks/read_once.py [--dir /tmp/read_once] [--before 37183c8] [--repeats 1]

The figures are simulated runs' (the simulator answered); they measure the reading and the
analysis, not a model. Wall times follow the machine's load, printed with them.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: the commit before the reading was reworked (issue 30): the code path the figures start from
BEFORE = "37183c8"
TARGETS = {"export": (5.0, None), "show": (None, None), "show study": (None, None),
           "director analyze": (15.0, 400.0)}

# the child: runs the CLI, counting its opens of the journal and how far each one read
CHILD = r"""
import builtins, io, json, os, sys
journal = sys.argv[1]
opens = []  # per open of the journal: [how far it read, whether it sought]
real = builtins.open
class Counted(io.BufferedReader):
    def seek(self, *a):
        opens[self.i][1] = True
        return super().seek(*a)
    def close(self):
        if not self.closed:
            opens[self.i][0] = max(opens[self.i][0], self.tell())
        super().close()
def counting(file, mode="r", *a, **k):
    if str(file).endswith("trajectories.jsonl") and mode == "rb" and not a and not k:
        fh = Counted(io.FileIO(file, "rb"))
        fh.i = len(opens)
        opens.append([0, False])
        return fh
    return real(file, mode, *a, **k)
builtins.open = counting
sys.argv = ["unseen", *sys.argv[2:]]
from unseen.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
size = os.path.getsize(journal)
with real("/proc/self/status") as fh:  # this process's peak (wait4's counts the parent's too)
    hwm = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:"))
with real(os.environ["READ_ONCE_OUT"], "w") as fh:
    json.dump({"code": code, "opens": len(opens), "rss": hwm / 1024,
               "passes": sum(1 for at, sought in opens if at > size / 2 and not sought)}, fh)
"""


def journaled(lines, path: Path) -> None:
    """Write ``lines`` (serialized records) through the journal's writer, as a run does."""
    from unseen.engine.journal import JournalWriter

    writer = JournalWriter(path)
    try:
        for line in lines:
            writer.append_line(line)
    finally:
        writer.close()


def _copy_files(src: Path, dst: Path, names: tuple[str, ...]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (src / name).is_file():
            (dst / name).write_bytes((src / name).read_bytes())


def scenefunri_run(root: Path, n: int) -> Path:
    """``root/sfr{n}``: the small run's records repeated as further samples up to ``n``."""
    sys.path.insert(0, str(HERE))
    from tui_open import small_run

    out = root / f"sfr{n}"
    if (out / "trajectories.jsonl").is_file():
        return out
    small = small_run(root)
    recs = [json.loads(x) for x in (small / "trajectories.jsonl").read_text().splitlines()]
    _copy_files(small, out, ("run.json",))

    def lines():
        for i in range(n):
            rec = dict(recs[i % len(recs)], key=f"k{i:07d}", sample=i // len(recs))
            yield json.dumps(rec, separators=(",", ":")).encode()

    journaled(lines(), out / "trajectories.jsonl.part")
    (out / "trajectories.jsonl.part").rename(out / "trajectories.jsonl")
    _rename_marks(out)
    return out


def _rename_marks(out: Path) -> None:
    """The writer's record of what it wrote scrubbed, renamed with the journal."""
    from unseen.engine.scrubbed import marks_file

    part = marks_file(out / "trajectories.jsonl.part")
    if part.is_file():
        part.rename(marks_file(out / "trajectories.jsonl"))


def paper_study(root: Path, samples: int = 5) -> Path:
    """``root/paper``: the paper design at one sample a scene, repeated as ``samples``."""
    out = root / "paper"
    if (out / "trajectories.jsonl").is_file():
        return out
    one = root / "paper-s1"
    if not (one / "trajectories.jsonl").is_file():
        print("running the paper design with the simulator at one sample a scene (minutes)…",
              flush=True)
        subprocess.run([sys.executable, "-c", "from unseen.cli import main; main()", "director",
                        "run", "paper", "--backend", "sim", "--samples", "1", "--out", str(one)],
                       check=True, stdout=subprocess.DEVNULL, cwd=root)
    out.mkdir(exist_ok=True)
    study = json.loads((one / "study.json").read_text())
    study["design"]["samples"] = samples
    (out / "study.json").write_text(json.dumps(study, indent=2))
    config = json.loads((one / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**config, "samples": samples, "run": "paper"},
                                             indent=2))
    recs = (one / "trajectories.jsonl").read_bytes().splitlines()

    def lines():
        for s in range(samples):
            for raw in recs:
                rec = json.loads(raw)
                rec["key"] = hashlib.sha256(f"{rec['key']}/{s}".encode()).hexdigest()[:20]
                rec["sample"], rec["run"] = s, "paper"
                yield json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode()

    journaled(lines(), out / "trajectories.jsonl.part")
    (out / "trajectories.jsonl.part").rename(out / "trajectories.jsonl")
    _rename_marks(out)
    return out


def run_child(argv: list[str], journal: Path, pythonpath: str | None, cwd: Path) -> dict:
    """One command in a fresh interpreter: wall seconds, CPU seconds, peak RSS in MB, the
    journal's opens and passes."""
    out = cwd / "child.json"
    env = {**os.environ, "READ_ONCE_OUT": str(out), "COLUMNS": "120"}
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(journal), *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    got = json.loads(out.read_text()) if out.is_file() else {}
    out.unlink(missing_ok=True)
    if proc.returncode or got.get("code"):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, **got}


def profile(argv: list[str], top: int = 20) -> None:
    """The working tree's code on ``argv`` under cProfile: where the time goes."""
    import contextlib
    import cProfile
    import pstats

    from unseen import cli

    prof = cProfile.Profile()
    sys.argv = ["unseen", *argv]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        prof.runcall(cli.main)
    print(f"--- unseen {' '.join(argv[:2])}: the {top} functions with the most own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def _line(name: str, side: str, r: dict) -> str:
    return (f"{name:23} {side:6} {r['wall']:6.2f} s wall  {r['cpu']:6.2f} s CPU  "
            f"{r['rss']:6.0f} MB peak RSS  journal opened {r['opens']}x, read whole "
            f"{r['passes']}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/read_once"))
    ap.add_argument("--before", default=BEFORE, help="the commit to compare with")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each command and side")
    ap.add_argument("--n", type=int, default=10_000, help="trajectories of the SceneFunRI run")
    ap.add_argument("--profile", action="store_true", help="cProfile the working tree's code")
    ap.add_argument("--only", nargs="*", help="these commands only (export, show, 'show study', "
                                              "'director analyze')")
    args = ap.parse_args()
    root = args.dir.resolve()
    root.mkdir(parents=True, exist_ok=True)
    sfr, study = scenefunri_run(root, args.n), paper_study(root)
    commands = {"export": (["export", str(sfr), "--html", str(root / "html")], sfr),
                "show": (["show", str(sfr)], sfr),
                "show study": (["show", str(study)], study),
                "director analyze": (["director", "analyze", str(study), "--format", "json"],
                                     study)}
    if args.only:
        commands = {k: v for k, v in commands.items() if k in args.only}
    if args.profile:
        for argv, _ in commands.values():
            profile(argv)
        return
    from before import tree  # the commit's code laid out as installed (before.py)

    sides = {"before": tree(args.before), "after": None}
    lines = {p.name: (p / "trajectories.jsonl").read_bytes().count(b"\n") for p in (sfr, study)}
    print(f"SceneFunRI run {sfr}: {lines[sfr.name]} trajectories, "
          f"{(sfr / 'trajectories.jsonl').stat().st_size / 2**20:.0f} MiB; Director study "
          f"{study}: {lines[study.name]} replies, "
          f"{(study / 'trajectories.jsonl').stat().st_size / 2**20:.0f} MiB; simulated. "
          f"before: {args.before}, after: the working tree")
    for name, (argv, run) in commands.items():
        got: dict[str, list[dict]] = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side, path in sides.items():  # in turn, so the machine's drift reaches both
                got[side].append(run_child(argv, run / "trajectories.jsonl", path, root))
        best = {side: min(rs, key=lambda r: r["wall"]) for side, rs in got.items()}
        for side in sides:
            print(_line(f"unseen {name}", side, best[side]))
        b, a = best["before"], best["after"]
        wall_t, rss_t = TARGETS[name]
        targets = "".join([f"; target {wall_t:g} s: ratio {a['wall'] / wall_t:.2f}"
                           if wall_t else "",
                           f", {rss_t:g} MB: ratio {a['rss'] / rss_t:.2f}" if rss_t else ""])
        print(f"{'':23} after/before: wall {a['wall'] / b['wall']:.2f}, CPU "
              f"{a['cpu'] / b['cpu']:.2f}, RSS {a['rss'] / b['rss']:.2f}{targets} "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
