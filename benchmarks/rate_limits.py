"""Concurrency against a rate-limited provider: fixed limits beside the adaptive one.

A local fake OpenAI server (tests/fake_providers.py, the real SDK against it) keeps two
token buckets, as OpenAI does: requests per second and tokens per minute, each starting
full and refilling continuously. A call that finds a bucket short gets a 429 with
Retry-After; every reply carries OpenAI's headers (x-ratelimit-limit-, -remaining- and
-reset-, requests and tokens) unless the provider says none. Each reply takes
``--latency`` seconds. The same run (``direct`` over the bundled sample set) goes at
``--concurrency 4`` and ``32`` fixed, then with the adaptive limit under a ceiling of 32,
against three providers, each in its own process, side by side:

- **default**: 5 requests/s, 400,000 tokens/min, headers; the request bucket binds.
- **no headers**: the same buckets, but a 429's Retry-After is all the provider says (as
  Gemini answers).
- **tokens bound**: 40,000 tokens/min (43 calls of 920 tokens a minute), headers; after
  the first minute's fill the token bucket binds.

For each it prints the throughput as a share of the ideal: the ideal's span over the run's,
a span being the time from the first request to the last answer (a reply or a 429), the
ideal a client that starts each call the moment both buckets hold it, so whichever bucket
binds sets it (and a run's failing retries after its last reply count against it); the share
of requests that got a 429, and the trajectories that failed; each adaptive row says
whether it meets the targets (at least 0.9 of the ideal, under 5 % 429s, none failed).
The span is printed too; a run's start-up (imports, the plan) is no part of it.

    python benchmarks/rate_limits.py             # all three, about 75 s
    python benchmarks/rate_limits.py --only no-headers --samples 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_providers import Error, FakeProvider, Reply  # noqa: E402

import unseen  # noqa: E402

PROMPT_TOKENS, COMPLETION_TOKENS = 900, 20  # what each fake reply says it used
COST = PROMPT_TOKENS + COMPLETION_TOKENS  # what the token bucket charges a call
MODES = (("fixed", 4), ("fixed", 32), ("adaptive", 32))
#: the providers: (trajectories a sample of the 65 instances, tokens a minute, headers)
CONFIGS = {"default": (2, 400_000.0, True), "no-headers": (2, 400_000.0, False),
           "tokens-bound": (1, 40_000.0, True)}
TARGET_RATE, TARGET_429S = 0.9, 0.05


class Buckets:
    """Requests per second and tokens per minute, both full at first and refilling
    continuously; it notes the first request and the last answer (a reply or a 429)."""

    def __init__(self, rate: float, tokens_per_min: float, latency: float,
                 headers: bool = True):
        self.rate, self.tpm, self.latency = rate, tokens_per_min, latency
        self.say = headers  # False: only Retry-After on a 429 (as Gemini answers)
        self.req, self.tok = rate, tokens_per_min  # full: one second's, one minute's
        self.t = time.monotonic()
        self.lock = threading.Lock()
        self.ok = self.limited = 0
        self.first: float | None = None
        self.last = 0.0

    def _refill(self, now: float) -> None:
        self.req = min(self.rate, self.req + (now - self.t) * self.rate)
        self.tok = min(self.tpm, self.tok + (now - self.t) * self.tpm / 60)
        self.t = now

    def headers(self) -> dict[str, str]:
        if not self.say:
            return {}
        return {"x-ratelimit-limit-requests": f"{self.rate:g}",
                "x-ratelimit-remaining-requests": str(int(self.req)),
                "x-ratelimit-reset-requests": f"{(self.rate - self.req) / self.rate * 1000:.0f}ms",
                "x-ratelimit-limit-tokens": f"{self.tpm:g}",
                "x-ratelimit-remaining-tokens": str(int(self.tok)),
                "x-ratelimit-reset-tokens":
                    f"{(self.tpm - self.tok) / (self.tpm / 60) * 1000:.0f}ms"}

    def __call__(self, rec) -> Reply | Error:
        with self.lock:
            now = time.monotonic()
            self._refill(now)
            self.first = now if self.first is None else self.first
            if self.req < 1 or self.tok < COST:
                self.limited += 1
                self.last = max(self.last, now)
                wait = max((1 - self.req) / self.rate, (COST - self.tok) / (self.tpm / 60), 0.0)
                return Error(429, headers={**self.headers(), "Retry-After": f"{wait:.3f}"})
            self.req -= 1
            self.tok -= COST
            self.ok += 1
            self.last = max(self.last, now + self.latency)
            headers = self.headers()
        return Reply('{"box": [100, 200, 300, 400]}', prompt_tokens=PROMPT_TOKENS,
                     completion_tokens=COMPLETION_TOKENS, delay=self.latency, headers=headers)


def ideal(calls: int, rate: float, tpm: float, latency: float) -> tuple[float, str]:
    """The span of a client that starts each call the moment both (full at first) buckets
    hold it, from the first request to the last reply; and the bucket that held it back
    most (``requests`` or ``tokens``)."""
    t, req, tok = 0.0, rate, tpm
    held = {"requests": 0.0, "tokens": 0.0}
    for _ in range(calls):
        by_req, by_tok = max(0.0, (1 - req) / rate), max(0.0, (COST - tok) / (tpm / 60))
        dt = max(by_req, by_tok)
        if dt:
            held["requests" if by_req >= by_tok else "tokens"] += dt
        t += dt
        req = min(rate, req + dt * rate) - 1
        tok = min(tpm, tok + dt * tpm / 60) - COST
    return t + latency, max(held, key=lambda k: held[k])


def one(mode: str, ceiling: int, samples: int, tpm: float, headers: bool, args,
        tmp: Path) -> dict:
    buckets = Buckets(args.rate, tpm, args.latency, headers)
    with FakeProvider(buckets) as fp:
        res = unseen.run(None, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                         out=tmp / f"{mode}-{ceiling}", samples=samples, cache=False,
                         progress=False, concurrency=ceiling, adaptive=mode == "adaptive",
                         max_attempts=6, backoff_base_s=0.5)
    span = buckets.last - (buckets.first or 0.0)
    best, _ = ideal(buckets.ok, args.rate, tpm, args.latency)
    requests = buckets.ok + buckets.limited
    return {"mode": f"{mode} {ceiling}", "span": span, "calls": buckets.ok,
            "of_ideal": best / span if span > 0 else 0.0,
            "429s": buckets.limited / max(requests, 1), "failed": res.errors}


def run_config(name: str, args) -> list[dict]:
    samples, tpm, headers = CONFIGS[name]
    samples = args.samples or samples
    tpm = args.tokens_per_min or tpm
    with tempfile.TemporaryDirectory() as tmp:
        return [{"config": name, **one(mode, ceiling, samples, tpm, headers, args, Path(tmp))}
                for mode, ceiling in MODES]


def in_process(name: str, args) -> list[dict]:
    """One provider's three rows, in a process of its own (so the three run side by side)."""
    argv = [sys.executable, __file__, "--only", name, "--json", "--rate", str(args.rate),
            "--latency", str(args.latency)]
    if args.samples:
        argv += ["--samples", str(args.samples)]
    if args.tokens_per_min:
        argv += ["--tokens-per-min", str(args.tokens_per_min)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def verdict(row: dict) -> str:
    checks = [("throughput", row["of_ideal"] >= TARGET_RATE), ("429s", row["429s"] < TARGET_429S),
              ("failed", row["failed"] == 0)]
    return " · ".join(f"{what} {'met' if ok else 'NOT met'}" for what, ok in checks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=5.0, help="requests per second the bucket allows")
    ap.add_argument("--tokens-per-min", type=float, default=None,
                    help="tokens a minute (default: each provider's own)")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds each reply takes")
    ap.add_argument("--samples", type=int, default=None,
                    help="samples of the 65 instances (default: each provider's own)")
    ap.add_argument("--only", choices=sorted(CONFIGS), action="append",
                    help="this provider only (repeatable)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")
    names = args.only or list(CONFIGS)
    if args.json:
        print(json.dumps([r for n in names for r in run_config(n, args)]))
        return
    with ThreadPoolExecutor(len(names)) as pool:
        rows = [r for rs in pool.map(lambda n: in_process(n, args), names) for r in rs]
    print(f"{args.rate:g} requests/s; {args.latency:g} s a reply; {COST} tokens a call; "
          f"targets for adaptive: ≥ {TARGET_RATE} of the ideal, < {100 * TARGET_429S:g} % "
          "429s, none failed")
    print(f"{'provider':<13} {'mode':<12} {'calls':>5} {'of ideal':>8} {'429s':>8} "
          f"{'failed':>6} {'span':>7}")
    for r in rows:
        tpm = CONFIGS[r["config"]][1]
        _, binds = ideal(r["calls"], args.rate, args.tokens_per_min or tpm, args.latency)
        line = (f"{r['config']:<13} {r['mode']:<12} {r['calls']:>5} {r['of_ideal']:>8.2f} "
                f"{100 * r['429s']:>6.1f} % {r['failed']:>6} {r['span']:>5.1f} s")
        if r["mode"].startswith("adaptive"):
            line += f"   ({binds} bind) {verdict(r)}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
