"""The floor under any harness: a bare ``openai`` SDK client making N chat calls, each with
one of the data set's images as a base64 data URL and a short text, at a concurrency.

Run as its own process by ``throughput.py`` (its CPU time, start-up included, is read from
the child's rusage), never imported by unseen.

    python benchmarks/bare_client.py URL DATA_DIR N CONCURRENCY
"""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path

import openai


async def main(url: str, data: Path, n: int, concurrency: int) -> int:
    images = sorted((data / "images").glob("*.png"))
    urls = [f"data:image/png;base64,{base64.b64encode(p.read_bytes()).decode('ascii')}"
            for p in images]
    client = openai.AsyncOpenAI(api_key="sk-bench-not-a-real-key", base_url=url,
                                max_retries=0, timeout=30)
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(i: int) -> None:
        nonlocal done
        async with gate:
            reply = await client.chat.completions.create(
                model="gpt-4o", temperature=0.0, max_tokens=512, messages=[{
                    "role": "user", "content": [
                        {"type": "image_url", "image_url": {"url": urls[i % len(urls)]}},
                        {"type": "text", "text": f"Find the hidden object (call {i}); "
                                                 'answer {"box": [x1, y1, x2, y2]}.'}]}])
            done += bool(reply.choices[0].message.content)

    await asyncio.gather(*(one(i) for i in range(n)))
    await client.close()
    return done


if __name__ == "__main__":
    url, data, n, c = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    got = asyncio.run(main(url, data, n, c))
    print(got)
    sys.exit(0 if got == n else 1)
