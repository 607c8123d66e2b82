"""The browser checks' harness, shared by the ``human`` page's and ``unseen view``'s tests:
Playwright drives Debian's chromium (its own browser download is not available here, so
``executable_path``), one browser per test module in the module's event loop; each test
opens its own context. Skipped, saying why, where chromium or playwright is missing.

``UNSEEN_SHOTS=DIR`` keeps the screenshots a test takes (:func:`shot`) for a person to look at.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import pytest_asyncio
from helpers import chromium

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_browser():
    exe = chromium()
    playwright = pytest.importorskip("playwright.async_api",
                                     reason="playwright is in the dev extra: pip install -e '.[dev]'")
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture
def browser(shared_browser):
    """The module's browser; each test opens its own context and closes it."""
    @contextlib.asynccontextmanager
    async def context():
        ctx = await shared_browser.new_context()
        try:
            yield ctx
        finally:
            await ctx.close()

    return context


async def open_page(ctx, url: str, width: int = 1280, height: int = 900):
    page = await ctx.new_page()
    await page.set_viewport_size({"width": width, "height": height})
    await page.goto(url)
    return page


async def shot(page, name: str, tmp_path: Path, full_page: bool = False) -> Path:
    folder = Path(os.environ.get("UNSEEN_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    await page.screenshot(path=str(path), full_page=full_page)
    return path
