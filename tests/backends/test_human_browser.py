"""The ``human`` page in a real browser: Playwright drives Debian's chromium (its own browser
download is not available here, so ``executable_path``; ``browser_harness``) against runs in this test's event
loop. A person draws boxes with the mouse, picks SPoE regions by click and by key, answers
a Director prompt's fields, reloads mid-run and answers in a second tab; the journal and
the tables hold what was done. tests/backends/test_human.py covers the same API without a browser.

``UNSEEN_SHOTS=DIR`` keeps the screenshots (1280 and 800 px wide) for a person to look at.
"""

from __future__ import annotations

import asyncio
import json
from io import BytesIO
from pathlib import Path

import browser_harness as harness
import pytest
from helpers import tiny_design
from human_driver import Announced, finish
from PIL import Image, ImageStat

from unseen.api import run_async
from unseen.engine.journal import JOURNAL, iter_records
from unseen.evals.scenefunri.report.formats import render
from unseen.evals.scenefunri.report.summary import summarize

# one browser for the module, so every test runs in the module's event loop
pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


async def _item(page, progress: str) -> None:
    """Wait until the page shows the item whose progress reads ``progress``."""
    await page.wait_for_function(
        "p => document.getElementById('progress').textContent === p && "
        "!document.getElementById('work').classList.contains('hidden')", arg=progress,
        timeout=30_000)


async def _image_ready(page) -> dict:
    await page.wait_for_function(
        "() => { const i = document.getElementById('img'); return i.complete && "
        "i.naturalWidth > 0 && i.clientWidth > 0 }", timeout=30_000)
    return await page.locator("[data-testid=image]").bounding_box()


async def _drag(page, frac: tuple[float, float, float, float]) -> None:
    r = await _image_ready(page)
    x1, y1, x2, y2 = frac
    await page.mouse.move(r["x"] + x1 * r["width"], r["y"] + y1 * r["height"])
    await page.mouse.down()
    await page.mouse.move(r["x"] + (x1 + x2) / 2 * r["width"], r["y"] + (y1 + y2) / 2 * r["height"])
    await page.mouse.move(r["x"] + x2 * r["width"], r["y"] + y2 * r["height"])
    await page.mouse.up()


def _records(run_dir: Path) -> list[dict]:
    return list(iter_records(run_dir / JOURNAL))


def _run(data, strategies, out, **kw) -> asyncio.Task:
    return asyncio.create_task(run_async(data, strategies, ["human:ann"], out=out, cache=False,
                                         progress=False, **kw))


# the harness's fixtures, by name in this module
shared_browser, browser = harness.shared_browser, harness.browser
_page, _shot = harness.open_page, harness.shot


async def test_boxes_drawn_with_the_mouse(browser, sample_data, instances, tmp_path, monkeypatch):
    said = Announced(monkeypatch)
    out = tmp_path / "r"
    task = _run(sample_data, ["direct"], out, limit=3)
    url = await said.url("ann", task=task)
    async with browser() as ctx:
        page = await _page(ctx, url)
        await _item(page, "1 of 3")
        assert await page.locator("[data-testid=submit]").is_disabled()  # nothing drawn yet
        await _drag(page, (0.25, 0.2, 0.75, 0.6))
        await _shot(page, "human-box-1280.png", tmp_path)
        await page.click("[data-testid=submit]")

        await _item(page, "2 of 3")
        await _drag(page, (0.9, 0.9, 0.6, 0.5))  # drawn from the bottom right corner up
        await page.keyboard.press("Escape")  # Esc clears it
        assert await page.locator("[data-testid=submit]").is_disabled()
        assert not await page.locator("#rect").is_visible()
        await _drag(page, (0.1, 0.5, 0.3, 0.95))
        await page.keyboard.press("Enter")

        await _item(page, "3 of 3")
        await _image_ready(page)
        await page.click("[data-testid=skip]")
        await page.wait_for_function(
            "() => document.getElementById('state').textContent.startsWith('All done')",
            timeout=30_000)
        # the "can't tell" scores unanswered: counted apart, never as an answer
        assert (await page.inner_text("#state")).startswith(
            "All done (2 answered, 1 can't tell).")
        await finish(task)
    recs = sorted(_records(out), key=lambda r: r["instance_id"])
    by_id = {i.id: i for i in instances}
    want = [(0.25, 0.2, 0.75, 0.6), (0.1, 0.5, 0.3, 0.95), None]
    # the run asks the instances in their order; each box in the original image's pixels
    for rec, frac, inst in zip(recs, want, instances[:3], strict=True):
        assert rec["instance_id"] == inst.id
        if frac is None:
            assert rec["status"] == "unanswered" and rec["error"]["kind"] == "skipped"
            continue
        w, h = by_id[rec["instance_id"]].width, by_id[rec["instance_id"]].height
        expect = [frac[0] * w, frac[1] * h, frac[2] * w, frac[3] * h]
        assert rec["prediction"] == pytest.approx(expect, abs=2.0)
        assert rec["steps"][0]["reply"]["latency_s"] > 0
    (row,) = summarize([out])
    assert row["kind"] == "human" and row["answered"] == pytest.approx(200 / 3)
    assert "ann (human)" in render([row], "md")


async def test_spoe_regions_picked_by_click_and_by_key(browser, sample_data, instances, tmp_path,
                                                      monkeypatch):
    said = Announced(monkeypatch)
    out = tmp_path / "r"
    task = _run(sample_data, ["spoe:T=2"], out, limit=1)
    url = await said.url("ann", task=task)
    async with browser() as ctx:
        page = await _page(ctx, url)
        await _item(page, "1 of 1")
        await _image_ready(page)
        assert await page.locator("[data-testid=choice-A]").is_visible()
        await page.click("[data-testid=choice-B]")
        await page.keyboard.press("Enter")  # the clicked choice has the focus: Enter submits
        await _item(page, "1 of 1 · question 2")
        await _image_ready(page)
        await page.keyboard.press("a")
        assert "on" in (await page.get_attribute("[data-testid=choice-A]", "class") or "")
        await page.keyboard.press("Enter")
        await finish(task)
    (rec,) = _records(out)
    assert [s["parsed"]["choice"] for s in rec["steps"]] == ["B", "A"]
    w, h = instances[0].width, instances[0].height
    # eliminate B (the right half), then A (the top of the left half)
    assert rec["prediction"] == pytest.approx([0, h / 2, w / 2, h])


async def test_a_director_prompt_answered_in_its_fields(browser, director_scenes, tmp_path, monkeypatch):
    from unseen.commands.director_run import run_study_async
    from unseen.evals.director.study.design import load_design

    design = tmp_path / "tiny.toml"
    design.write_text(tiny_design(n=1, batches={"q": ["move/twoturn"]}), encoding="utf-8")
    said = Announced(monkeypatch)
    out = tmp_path / "study"
    task = asyncio.create_task(run_study_async(load_design(design), ["human:ann"], out,
                                               scenes=director_scenes, cache=False,
                                               progress=False))
    url = await said.url("ann", task=task)
    async with browser() as ctx:
        page = await _page(ctx, url)
        await _item(page, "1 of 1")
        await _image_ready(page)
        first = page.locator("[data-testid^=field-]").first
        name = (await first.get_attribute("data-testid")).removeprefix("field-")
        await page.keyboard.type("2, 5")  # the first field has the focus
        assert await first.input_value() == "2, 5"
        await page.keyboard.press("Enter")
        await _item(page, "1 of 1 · question 2")
        assert await page.locator("#history").is_visible()  # the first turn, shown again
        block = page.locator("[data-testid=field-block]")
        await block.fill("x")
        assert await page.locator("[data-testid=submit]").is_disabled()  # not a number
        await block.fill("5")
        await _shot(page, "human-director-1280.png", tmp_path)
        await page.click("[data-testid=submit]")
        await finish(task)
    (rec,) = _records(out)
    assert rec["status"] == "answered"
    assert rec["prediction"] == {name: [2, 5], "block": 5}
    assert json.loads(rec["steps"][0]["reply"]["text"]) == {name: [2, 5]}


async def test_reload_and_a_second_tab_never_answer_twice(browser, sample_data, tmp_path, monkeypatch):
    said = Announced(monkeypatch)
    out = tmp_path / "r"
    task = _run(sample_data, ["spoe:T=3"], out, limit=1)
    url = await said.url("ann", task=task)
    async with browser() as ctx:
        tab1 = await _page(ctx, url)
        await _item(tab1, "1 of 1")
        await tab1.click("[data-testid=choice-A]")
        await tab1.click("[data-testid=submit]")
        await _item(tab1, "1 of 1 · question 2")
        await tab1.reload()  # the same request again, not a new one
        await _item(tab1, "1 of 1 · question 2")
        tab2 = await _page(ctx, url)
        await _item(tab2, "1 of 1 · question 2")
        await tab1.click("[data-testid=choice-A]")
        await tab1.click("[data-testid=submit]")
        await _item(tab1, "1 of 1 · question 3")
        await tab2.click("[data-testid=choice-B]")  # too late: tab1 answered it
        await tab2.click("[data-testid=submit]")
        await _item(tab2, "1 of 1 · question 3")
        assert "answered already" in await tab2.inner_text("#msg")
        await tab2.click("[data-testid=choice-A]")
        await tab2.click("[data-testid=submit]")
        await finish(task)
    (rec,) = _records(out)
    assert [s["reply"]["text"] for s in rec["steps"]] == ["A", "A", "A"]
    log = (out / "human" / "ann.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(log) == 3


async def test_the_page_shows_the_whole_image_edge_to_edge(browser, sample_data, tmp_path,
                                                           monkeypatch):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["spoe:T=1"], tmp_path / "r", limit=1)
    url = await said.url("ann", task=task)
    shots = {}
    async with browser() as ctx:
        page = await _page(ctx, url)
        for width in (1280, 800):
            await page.set_viewport_size({"width": width, "height": 800})
            await _item(page, "1 of 1")
            await _image_ready(page)
            await page.wait_for_timeout(100)  # the resize handler fits the image anew
            surface = await page.locator("[data-testid=image]").bounding_box()
            img = await page.locator("#img").bounding_box()
            assert img == surface  # the drawing surface is the image, no margin
            assert img["x"] >= 0 and img["x"] + img["width"] <= width
            assert img["y"] + img["height"] <= 800  # the whole image on screen
            assert img["width"] / img["height"] == pytest.approx(640 / 480, rel=0.01)
            assert img["width"] >= 0.55 * width  # as large as the window allows
            shots[width] = await _shot(page, f"human-page-{width}.png", tmp_path)
        await page.click("[data-testid=choice-A]")
        await page.click("[data-testid=submit]")
        await finish(task)
    for width, shot in shots.items():
        with Image.open(BytesIO(shot.read_bytes())) as im:
            assert im.size == (width, 800)
            assert ImageStat.Stat(im.convert("L")).stddev[0] > 20  # the picture, text: not blank


async def test_review_a_build(browser, sample_data, tmp_path):
    import shutil as sh

    from unseen.commands.data_review import serve_review
    from unseen.evals.scenefunri import load_dataset

    build = tmp_path / "build"
    sh.copytree(sample_data, build)
    lines = (build / "instances.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    (build / "instances.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids = [json.loads(x)["id"] for x in lines]
    said: list[str] = []
    task = asyncio.create_task(serve_review(build, who="ann", announce=said.append))
    while not said:
        await asyncio.sleep(0.02)
    url = said[0].rsplit(" ", 1)[1]
    async with browser() as ctx:
        page = await _page(ctx, url)
        await _item(page, "1 of 3")
        await _image_ready(page)
        assert not await page.locator("[data-testid=skip]").is_visible()  # decide, or stop
        await _shot(page, "human-review-1280.png", tmp_path)
        await page.click("[data-testid=choice-accept]")
        await page.click("[data-testid=submit]")
        await _item(page, "2 of 3")
        await _image_ready(page)
        await page.keyboard.press("d")  # duplicate
        await page.keyboard.press("Enter")
        await _item(page, "3 of 3")
        await _image_ready(page)
        await page.click("[data-testid=choice-other]")
        assert await page.locator("[data-testid=submit]").is_disabled()  # other needs a note
        await page.keyboard.type("the box is on a lamp")  # the note has the focus
        await page.keyboard.press("Enter")
        await page.wait_for_function(
            "() => document.getElementById('state').textContent.startsWith('All done')",
            timeout=30_000)
    review = await asyncio.wait_for(task, 30)
    assert review.decided == 3
    assert [i.id for i in load_dataset(build).instances] == [ids[0]]
    entries = {e["id"]: e for e in map(json.loads,
                                        (build / "review.jsonl").read_text().splitlines())}
    assert [entries[i]["decision"]["reason"] for i in ids] == [None, "duplicate", "other"]
    assert entries[ids[2]]["decision"]["note"] == "the box is on a lamp"
    assert {entries[i]["decision"]["by"] for i in ids} == {"ann"}
