"""A person in tests: runs with a ``human`` backend in the test's own event loop, and a
client that answers on the page's JSON API as the page's script does (no browser)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from unseen.backends import human

URL = re.compile(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/")


class Announced:
    """Collects the lines the human backends print (their addresses), by person."""

    def __init__(self, monkeypatch) -> None:
        self.lines: list[str] = []
        monkeypatch.setattr(human, "_to_stderr", self.lines.append)

    async def url(self, who: str = "", timeout: float = 60.0, task: asyncio.Task | None = None) -> str:
        """The address printed for ``who`` (any person when empty), once it is printed."""
        for _ in range(int(timeout / 0.02)):
            for line in self.lines:
                if line.startswith(who) and (m := URL.search(line)):
                    return m.group(0)
            if task is not None and task.done():
                task.result()  # the run failed before it printed: raise its error
                raise AssertionError(f"the run ended without an address; printed: {self.lines}")
            await asyncio.sleep(0.02)
        raise AssertionError(f"no address printed for {who!r}: {self.lines}")


class Person:
    """Answers on one page through its JSON API."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.AsyncClient(base_url=url, timeout=60.0)
        self.seen: list[dict[str, Any]] = []

    async def next(self, wait: float = 20.0) -> dict[str, Any]:
        """The next item (or done), waiting through "waiting" replies."""
        for _ in range(20):
            r = await self.client.get("api/next", params={"wait": wait})
            r.raise_for_status()
            j = r.json()
            if not j.get("waiting"):
                return j
        raise AssertionError("the page kept waiting")

    async def answer(self, item_id: str, body: Any) -> httpx.Response:
        return await self.client.post(f"api/answer/{item_id}", json=body)

    async def answer_all(self, policy: Callable[[dict[str, Any]], Any],
                         limit: int | None = None) -> list[dict[str, Any]]:
        """Answer items with ``policy(item) -> body`` until done (or ``limit`` answers)."""
        done = []
        while limit is None or len(done) < limit:
            item = await self.next()
            if item.get("done"):
                break
            self.seen.append(item)
            r = await self.answer(item["id"], policy(item))
            assert r.status_code == 200, r.text
            done.append(item)
        return done

    async def aclose(self) -> None:
        await self.client.aclose()


async def finish(task: asyncio.Task, person: Person | None = None) -> Any:
    """The run's result, once it ends (the person's client closed)."""
    try:
        return await asyncio.wait_for(task, 120)
    finally:
        if person is not None:
            await person.aclose()


async def stop(task: asyncio.Task) -> None:
    """Stop a run as Ctrl-C would (its task cancelled) and wait for it to wind down."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


Runner = Callable[[], Awaitable[Any]]
