"""Concurrency against a rate-limited provider: fixed limits beside the adaptive one.

A local fake OpenAI server (tests/fake_providers.py, the real SDK against it) keeps two
token buckets, as OpenAI does: requests per second and tokens per minute, each refilling
continuously. A call that finds a bucket empty gets a 429 with Retry-After; every reply
carries OpenAI's headers (x-ratelimit-limit-, -remaining- and -reset-, requests and
tokens). Each reply takes ``--latency`` seconds. The same run (``direct`` over the bundled
sample set, ``--samples`` each) goes at ``--concurrency 4`` and ``32`` fixed, then with the
adaptive limit under a ceiling of 32, one after another in this one process, and prints for
each: the answered calls per second as a share of the bucket's rate, the share of requests
that got a 429, and the trajectories that failed.

    python benchmarks/rate_limits.py            # 5 requests/s, 130 trajectories a mode
    python benchmarks/rate_limits.py --rate 10 --samples 4
    python benchmarks/rate_limits.py --no-headers   # Retry-After alone: AIMD
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_providers import Error, FakeProvider, Reply  # noqa: E402

import unseen  # noqa: E402

PROMPT_TOKENS, COMPLETION_TOKENS = 900, 20  # what each fake reply says it used


class Buckets:
    """Requests per second and tokens per minute, both refilling continuously."""

    def __init__(self, rate: float, tokens_per_min: float, latency: float,
                 headers: bool = True):
        self.rate, self.tpm, self.latency = rate, tokens_per_min, latency
        self.say = headers  # False: only Retry-After on a 429 (as Gemini answers)
        self.req, self.tok = rate, tokens_per_min  # full: one second's, one minute's
        self.t = time.monotonic()
        self.lock = threading.Lock()
        self.ok = self.limited = 0

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
        cost = PROMPT_TOKENS + COMPLETION_TOKENS
        with self.lock:
            self._refill(time.monotonic())
            if self.req < 1 or self.tok < cost:
                self.limited += 1
                wait = max((1 - self.req) / self.rate, (cost - self.tok) / (self.tpm / 60), 0.0)
                return Error(429, headers={**self.headers(), "Retry-After": f"{wait:.3f}"})
            self.req -= 1
            self.tok -= cost
            self.ok += 1
            headers = self.headers()
        return Reply('{"box": [100, 200, 300, 400]}', prompt_tokens=PROMPT_TOKENS,
                     completion_tokens=COMPLETION_TOKENS, delay=self.latency, headers=headers)


def one(mode: str, ceiling: int, args, tmp: Path) -> dict:
    buckets = Buckets(args.rate, args.tokens_per_min, args.latency, not args.no_headers)
    with FakeProvider(buckets) as fp:
        t0 = time.perf_counter()
        res = unseen.run(None, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                         out=tmp / f"{mode}-{ceiling}", samples=args.samples, cache=False, progress=False,
                         concurrency=ceiling, adaptive=mode == "adaptive", max_attempts=6,
                         backoff_base_s=0.5)
        seconds = time.perf_counter() - t0
    requests = buckets.ok + buckets.limited
    return {"mode": f"{mode} {ceiling}", "seconds": seconds, "rate": buckets.ok / seconds,
            "of_bucket": buckets.ok / seconds / args.rate,
            "429s": buckets.limited / max(requests, 1), "failed": res.errors,
            "trajectories": res.done}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=5.0, help="requests per second the bucket allows")
    ap.add_argument("--tokens-per-min", type=float, default=400_000.0)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds each reply takes")
    ap.add_argument("--samples", type=int, default=2, help="samples of the 65 instances")
    ap.add_argument("--no-headers", action="store_true",
                    help="no x-ratelimit headers: only Retry-After on a 429 (as Gemini)")
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode, ceiling in (("fixed", 4), ("fixed", 32), ("adaptive", 32)):
            rows.append(one(mode, ceiling, args, Path(tmp)))
            r = rows[-1]
            print(f"{r['mode']:<12} {r['trajectories']:>4} trajectories in {r['seconds']:6.1f} s"
                  f"  {r['rate']:5.2f} calls/s = {r['of_bucket']:.2f} of the bucket's rate"
                  f"  429s {100 * r['429s']:5.1f} % of requests  failed {r['failed']}",
                  flush=True)
    adaptive = rows[-1]
    target = adaptive["of_bucket"] >= 0.9 and adaptive["429s"] < 0.05 and not adaptive["failed"]
    print(f"adaptive: {adaptive['of_bucket']:.2f} of the rate (target 0.9), "
          f"{100 * adaptive['429s']:.1f} % 429s (target under 5), {adaptive['failed']} failed "
          f"(target 0): {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
