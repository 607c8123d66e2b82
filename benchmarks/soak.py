"""Soak: 10,000 trajectories against the local fake server, faulted and killed, must all end
answered once and scored right.

The fake OpenAI server (tests/fake_providers.py, in this process) answers each request with
a box that is a function of the image it was sent (so a reply given to the wrong request
shows), and faults 5 % of the calls, drawn evenly from: a 429 with Retry-After, a 500, a
503, a reply slower than the timeout, a body that is not JSON, an empty reply, a 401 whose
body echoes the key, a 429 with an exhausted quota, and a good box whose text carries
terminal escapes (ESC ]52, ESC [2J) and key-shaped strings. Meanwhile the runner (`unseen
run` in a child process) is SIGKILLed at random moments and resumed; once during the soak a
second run is started on the same directory (it must be refused, exit 2), and once the reply
cache is damaged between two segments (it must be set aside, not fail the run). Runs are
resumed until a segment ends with nothing left to do.

It prints the trajectories lost (a key without an answered record), duplicated (a key
answered twice) and mis-scored (a prediction other than the server's box for that image, or
metrics other than those of that box), which must all be 0; files holding the key; and the
throughput of the faulted soak (kills, restarts and retries included) over that of an
unfaulted run of the same trajectories, measured in the same invocation.

    python benchmarks/soak.py [--n 10000] [--kills 12] [--fault-rate 0.05] [--seed 0]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_providers import Error, FakeProvider, Raw, Reply, echo_key  # noqa: E402

from unseen.evals.scenefunri import load_dataset  # noqa: E402
from unseen.evals.scenefunri.data.sample import bundled_sample  # noqa: E402
from unseen.evals.scenefunri.metrics import score  # noqa: E402

KEY = "sk-soak-" + "Q7x" * 14
TIMEOUT_S = 1.0
CONCURRENCY = 16
HOSTILE = " \x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J sk-proj-EchoedKeyShaped0123456789 "
QUOTA = Error(429, body={"error": {"message": "You exceeded your current quota, please check "
                                   "your plan and billing details.",
                                   "type": "insufficient_quota", "code": "insufficient_quota"}})


def expected_box(image_b64: str) -> list[int]:
    """The server's answer for an image (0-1000, x1 y1 x2 y2): a function of its bytes."""
    h = hashlib.sha256(image_b64.encode()).digest()
    x1, y1 = h[0] % 400, h[1] % 400
    return [x1, y1, x1 + 100 + h[2] % 400, y1 + 100 + h[3] % 400]


def _image_of(body: dict) -> str:
    for m in body.get("messages", []):
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            url = (part.get("image_url") or {}).get("url", "")
            if url.startswith("data:"):
                return url.split(",", 1)[1]
    return ""


class Server:
    """The fake server's behaviour: the image's box, or with ``rate`` a fault."""

    FAULTS = ("rate_limit", "server_500", "server_503", "timeout", "malformed", "empty",
              "echoed_key_401", "quota", "hostile_text")

    def __init__(self, rate: float, seed: int):
        self.rate = rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.faults: Counter[str] = Counter()
        self.calls = 0

    def __call__(self, rec):
        with self.lock:
            self.calls += 1
            fault = self.rng.choice(self.FAULTS) if self.rng.random() < self.rate else None
            if fault:
                self.faults[fault] += 1
        text = json.dumps({"box": expected_box(_image_of(rec.body))})
        if fault is None:
            return Reply(text)
        return {
            "rate_limit": Error(429, headers={"Retry-After": "0"}),
            "server_500": Error(500), "server_503": Error(503),
            "timeout": Reply(text, delay=TIMEOUT_S + 1.0),
            "malformed": Raw(b'{"choices": [ not json'),
            "empty": Reply(""),
            "echoed_key_401": echo_key(401)(rec),
            "quota": QUOTA,
            "hostile_text": Reply(text + HOSTILE),
        }[fault]


def command(data: Path, url: str, out: Path, cache: Path, n_inst: int, samples: int) -> list[str]:
    return [sys.executable, "-m", "unseen.cli", "run", "--data", str(data), "-s", "direct",
            "-b", "openai:fake-model,box_format=norm1000", "--base-url", url, "--limit", str(n_inst), "--samples",
            str(samples), "--out", str(out), "--cache-dir", str(cache), "--concurrency",
            str(CONCURRENCY), "--timeout", str(TIMEOUT_S), "-q"]


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**e, "OPENAI_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}


def journal_lines(run_dir: Path) -> int:
    path = run_dir / "trajectories.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def damage_cache(cache: Path) -> bool:
    """Overwrite the cache's header, and its WAL's (a killed writer leaves one, and SQLite
    would otherwise restore page 1 from it): "file is not a database"."""
    path = cache / "replies.sqlite"
    if not path.exists() or path.stat().st_size < 8192:
        return False
    for p in (path, cache / "replies.sqlite-wal"):
        if p.exists() and p.stat().st_size >= 100:
            data = bytearray(p.read_bytes())
            data[:100] = b"overwritten by a disk fault " * 3 + b"." * 16
            p.write_bytes(bytes(data))
    return True


def soak(data: Path, url: str, work: Path, n_inst: int, samples: int, kills: int,
         rng: random.Random) -> dict:
    run_dir, cache = work / "faulted", work / "cache-faulted"
    cmd = command(data, url, run_dir, cache, n_inst, samples)
    total = n_inst * samples
    notes: Counter[str] = Counter()
    twin_at = rng.randrange(kills) if kills else -1
    damage_at = rng.randrange(kills) if kills else -1
    t0 = time.perf_counter()
    for segment in itertools.count():
        killing = segment < kills
        proc = subprocess.Popen(cmd, env=env(), cwd=work, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if killing:
            # a random moment: some way into this segment's share of the work
            start = journal_lines(run_dir)
            target = start + rng.randint(1, max(2, (total - start) // max(1, kills - segment)))
            while proc.poll() is None and journal_lines(run_dir) < target:
                time.sleep(0.02)
            if segment == twin_at and proc.poll() is None:
                twin = subprocess.run(cmd, env=env(), cwd=work, capture_output=True, text=True)
                if twin.returncode == 2 and "in use by" in twin.stderr:
                    notes["twin runs refused"] += 1
                elif proc.poll() is None:  # the first still ran: the twin should not have
                    notes["twin runs not refused"] += 1
            if proc.poll() is None:
                time.sleep(rng.uniform(0, 0.5))
                os.kill(proc.pid, signal.SIGKILL)
                notes["SIGKILLs"] += 1
        _, err = proc.communicate()
        notes[f"exit {proc.returncode}"] += 1
        if "Traceback" in err:
            notes["tracebacks"] += 1
            print(err, file=sys.stderr)
        if "damaged" in err and "reply cache" in err:
            notes["damaged caches set aside"] += 1
        if segment == damage_at:
            notes["caches damaged"] += damage_cache(cache)
        if not killing and proc.returncode == 0 and "failed" not in err:
            break  # a segment that ran to its end with nothing failing: done
        if segment > kills + 50:
            notes["gave up"] += 1
            break
    seconds = time.perf_counter() - t0
    return {"run_dir": run_dir, "cache": cache, "seconds": seconds, "notes": notes}


def unfaulted(data: Path, url: str, work: Path, n_inst: int, samples: int) -> float:
    cmd = command(data, url, work / "clean", work / "cache-clean", n_inst, samples)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env(), cwd=work, check=True, capture_output=True)
    return time.perf_counter() - t0


def check(run_dir: Path, data: Path, n_inst: int, samples: int) -> dict:
    """Lost, duplicated and mis-scored trajectories, from the journal alone."""
    ds = load_dataset(data)
    insts = {i.id: i for i in ds.instances[:n_inst]}
    boxes = {iid: expected_box(base64.b64encode(Path(i.image).read_bytes()).decode())
             for iid, i in insts.items()}
    answered: Counter[tuple[str, int]] = Counter()
    latest: dict[str, dict] = {}
    for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        latest[rec["key"]] = rec
        if rec["status"] == "answered":
            answered[(rec["instance_id"], rec["sample"])] += 1
    want = {(iid, s) for iid in insts for s in range(samples)}
    done = {(r["instance_id"], r["sample"]) for r in latest.values() if r["status"] == "answered"}
    misscored = 0
    for r in latest.values():
        if r["status"] != "answered":
            continue
        inst = insts[r["instance_id"]]
        x1, y1, x2, y2 = boxes[r["instance_id"]]
        w, h = inst.width, inst.height
        box = [x1 * w / 1000, y1 * h / 1000, x2 * w / 1000, y2 * h / 1000]
        metrics = score(box, inst.truth["box"], w, h)
        if any(not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
               for a, b in zip(r["prediction"], box, strict=True)) or any(
                not math.isclose(r["metrics"][k], v, rel_tol=1e-9, abs_tol=1e-12)
                for k, v in metrics.items()):
            misscored += 1
    return {"trajectories": len(want), "lost": len(want - done),
            "duplicated": sum(n > 1 for n in answered.values()), "misscored": misscored,
            "records": sum(1 for _ in (run_dir / "trajectories.jsonl").open())}


def show_hostile(run_dir: Path) -> str:
    """What `unseen show` prints for the summary and for a trajectory whose reply carried
    terminal escapes (piped, as a script or a log would read it)."""
    hostile = next((r for r in map(json.loads, (run_dir / "trajectories.jsonl").open())
                    if "\x1b" in json.dumps(r, ensure_ascii=False)), None)
    argv = [[sys.executable, "-m", "unseen.cli", "show", str(run_dir)]]
    if hostile is not None:
        argv.append([*argv[0], hostile["instance_id"], "--sample", str(hostile["sample"]),
                     "--full", "--no-images"])
    return "".join(subprocess.run(a, env=env(), capture_output=True, text=True).stdout
                   for a in argv)


def key_leaks(*folders: Path) -> list[str]:
    return [str(p) for d in folders for p in d.rglob("*") if p.is_file()
            and (KEY.encode() in p.read_bytes() or b"EchoedKeyShaped" in p.read_bytes())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="trajectories (at least)")
    ap.add_argument("--kills", type=int, default=12, help="SIGKILLs of the runner")
    ap.add_argument("--fault-rate", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    data = bundled_sample()
    n_inst = min(args.n, len(load_dataset(data)))
    samples = math.ceil(args.n / n_inst)
    total = n_inst * samples
    rng = random.Random(args.seed)
    behaviour = Server(args.fault_rate, args.seed)
    with tempfile.TemporaryDirectory(prefix="unseen-soak-") as tmp, \
            FakeProvider(behaviour) as fp:
        work = Path(tmp)
        print(f"soak: {total} trajectories ({n_inst} instances x {samples} samples), "
              f"{args.fault_rate:.0%} of calls faulted, {args.kills} SIGKILLs", flush=True)
        clean_s = unfaulted(data, fp.openai_base_url, work, n_inst, samples)
        behaviour.calls, behaviour.faults = 0, Counter()
        print(f"unfaulted run: {total / clean_s:.1f} trajectories/s ({clean_s:.1f} s)",
              flush=True)
        res = soak(data, fp.openai_base_url, work, n_inst, samples, args.kills, rng)
        found = check(res["run_dir"], data, n_inst, samples)
        shown = show_hostile(res["run_dir"])
        leaks = key_leaks(res["run_dir"], res["cache"])
    rate = total / res["seconds"]
    print(f"faulted soak: {rate:.1f} trajectories/s ({res['seconds']:.1f} s, "
          f"{behaviour.calls} calls)")
    print("faults injected: " + ", ".join(f"{k} {v}" for k, v in sorted(behaviour.faults.items())))
    print("events: " + ", ".join(f"{k} {v}" for k, v in sorted(res["notes"].items())))
    print(f"journal records: {found['records']} for {found['trajectories']} trajectories")
    print(f"lost {found['lost']}  duplicated {found['duplicated']}  "
          f"mis-scored {found['misscored']}")
    escapes = sum(c in shown for c in ("\x1b", "\x07"))
    print(f"files holding the key: {len(leaks)}  control bytes in `show`: {escapes}")
    print(f"throughput ratio (faulted / unfaulted): {rate / (total / clean_s):.2f}")
    bad = (found["lost"] or found["duplicated"] or found["misscored"] or leaks or escapes
           or res["notes"]["tracebacks"] or res["notes"]["twin runs not refused"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
