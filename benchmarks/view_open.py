"""How fast ``unseen view`` shows a run of 10,000 trajectories.

The run is ``tui_open.py``'s (a small simulated run's records repeated under new keys and
instance ids); ``unseen view`` serves it in its own process, as a user starts it, and
Chromium (Playwright, where it is installed) opens it. Prints the median of three, each
from a fresh server process (its index built from ``RunDir.heads()`` as it starts):

- the command's start-up: from ``unseen view RUN`` to its address line (imports, and the
  index built from the heads before the address is printed);
- the runs list (``api/runs``) and the run's table (``api/run/0``) over HTTP, and its size;
- the first screen in the browser: the runs list shown, and the run's table drawn (target:
  within 1 s on 2 cores), from ``goto`` to the first row;
- an instance opened from the table (its records read by seeking).

    python benchmarks/view_open.py [--n 10000] [--dir /tmp/tui_bench]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tui_open import make_run  # noqa: E402 - the same generated run as the TUI's figures

STARTS: list[float] = []  # seconds from the command to its address line (index built)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]


@contextlib.asynccontextmanager
async def served(run_dir: Path):
    """``unseen view RUN`` in a fresh process; its address, read from the line it prints."""
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "unseen.cli", "view", str(run_dir),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        STARTS.append(time.perf_counter() - t)
        yield re.search(r"http://\S+/", line).group(0)
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def once(run_dir: Path, browser) -> dict[str, float]:
    import httpx

    out: dict[str, float] = {}
    async with served(run_dir) as url, httpx.AsyncClient(timeout=60) as c:
        t = time.perf_counter()
        await c.get(url + "api/runs")
        out["api/runs"] = time.perf_counter() - t
        t = time.perf_counter()
        r = await c.get(url + "api/run/0")
        out["api/run/0 (table)"] = time.perf_counter() - t
        out["table MiB"] = len(r.content) / 2**20
    if browser is None:
        return out
    async with served(run_dir) as url:  # a fresh server for the browser too
        ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await ctx.new_page()
        t = time.perf_counter()
        await page.goto(url)
        await page.wait_for_selector("#runs tbody tr")
        out["browser: runs list shown"] = time.perf_counter() - t
        t = time.perf_counter()
        await page.goto(url + "#/run/0")
        await page.wait_for_selector("#table tbody tr")
        out["browser: run's table drawn"] = time.perf_counter() - t
        t = time.perf_counter()
        await page.click("#table tbody tr")
        await page.wait_for_selector(".step")
        out["browser: an instance opened"] = time.perf_counter() - t
        await ctx.close()
    return out


async def measure(run_dir: Path) -> None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    results = []
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        async_playwright = None
    if exe and async_playwright:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
            results = [await once(run_dir, browser) for _ in range(3)]
            await browser.close()
    else:
        print("no chromium or playwright here: the HTTP figures only")
        results = [await once(run_dir, None) for _ in range(3)]
    size = (run_dir / "trajectories.jsonl").stat().st_size / 2**20
    print(f"journal {size:.1f} MiB; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; median of {len(results)}, each a fresh server process")
    print(f"unseen view RUN: its address printed after {statistics.median(STARTS):.2f} s "
          "(start-up, imports and the index from the heads)")
    for key in results[0]:
        value = statistics.median(r[key] for r in results)
        print(f"{key}: {value:.2f}" + ("" if "MiB" in key else " s"))
    if "browser: runs list shown" in results[0]:
        first = statistics.median(r["browser: runs list shown"] + r["browser: run's table drawn"]
                                  for r in results)
        print(f"runs list, then the run's table: {first:.2f} s = {first:.2f} × the 1 s target")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/tui_bench"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    run_dir = make_run(args.dir, args.n)
    asyncio.run(measure(run_dir))


if __name__ == "__main__":
    main()
