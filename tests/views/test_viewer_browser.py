"""``unseen view`` in a real browser (``browser_harness``, as the ``human`` page's checks):
the runs list, a run's table sorted by a click and filtered by model, strategy and
outcome, an instance opened and stepped through with keys, deep links, a hostile reply
shown as text, a running sim run's counts rising without a reload, and a benchmark without
views of its own (``examples/pointing``) on the generic page.

``UNSEEN_SHOTS=DIR`` keeps the screenshots (1280 and 390 px wide) for a person to look at.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import browser_harness as harness
import pytest
from helpers import first_records, hostile_first_step, slow_sim_run

from unseen.api import run_async
from unseen.engine.rundir import RunDir
from unseen.viewer import Catalog, ViewServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]
shared_browser, browser = harness.shared_browser, harness.browser

HOSTILE = '<img src=x onerror="window.pwned=1"><b id=injected>bold</b>'
WAIT = 30_000  # ms a page gets to show what a step expects


@pytest.fixture(scope="module")
def run_dir(sample_data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "r"
    asyncio.run(run_async(sample_data, ["direct", "spoe"], ["sim"], out=out, limit=4,
                          cache=False, progress=False))
    hostile_first_step(out, HOSTILE)
    return out


async def _serve(paths):
    server = ViewServer(Catalog(paths))
    return server, await server.start()


async def _rises(page, value: str, done: str) -> None:
    """While the running mark shows, ``value`` (a JS expression) changes without a reload,
    then reaches ``done`` (``value + done`` is true) and the mark goes."""
    assert await page.locator("#live").is_visible()
    first = await page.evaluate(value)
    await page.wait_for_function(f"v => ({value}) !== v", arg=first, timeout=WAIT)
    await page.wait_for_function(
        f"() => ({value}){done} && "
        "document.getElementById('live').classList.contains('hidden')", timeout=WAIT)


async def _rows(page) -> list[str]:
    return await page.locator("#table tbody tr").evaluate_all(
        "rs => rs.map(r => r.children[5].textContent)")


async def test_open_a_run_sort_filter_and_step_through_an_instance(browser, run_dir, tmp_path):
    server, url = await _serve([run_dir])
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, url)
            await page.wait_for_selector("#runs tbody tr", timeout=WAIT)
            assert "SIMULATED" in await page.locator("#runs").inner_text()
            assert await page.locator("#sim").is_visible()
            await harness.shot(page, "view-runs-1280.png", tmp_path)
            await page.click("#runs tbody tr a")
            await page.wait_for_selector("#table tbody tr", timeout=WAIT)
            assert await page.locator("#sim").is_visible()  # every page says SIMULATED
            assert len(await _rows(page)) == 8
            await harness.shot(page, "view-run-1280.png", tmp_path)

            # sort by outcome with a click, then the other way with a second
            await page.click("th[data-col=outcome]")
            outcomes = await _rows(page)
            assert outcomes == sorted(outcomes)
            await page.click("th[data-col=outcome]")
            assert await _rows(page) == sorted(outcomes, reverse=True)
            await page.click("th[data-col=dist]")
            dists = await page.locator("#table tbody tr").evaluate_all(
                "rs => rs.map(r => r.children[10].textContent)")
            nums = [float(d) for d in dists if d != "—"]
            assert nums == sorted(nums)

            # filter by strategy, then by outcome
            await page.select_option("#f-strategy", "spoe")
            strategies = await page.locator("#table tbody tr").evaluate_all(
                "rs => rs.map(r => r.children[3].textContent)")
            assert strategies and set(strategies) == {"spoe"}
            first = (await _rows(page))[0]
            await page.select_option("#f-outcome", first)
            assert set(await _rows(page)) == {first}
            assert (await page.locator("#count").inner_text()).startswith(
                f"{len(await _rows(page))} of 8")
            await page.select_option("#f-model", "sim-default (sim)")
            assert await _rows(page)

            # one instance: its spoe trajectory, chosen and opened with keys, stepped through
            await page.keyboard.press("j")
            key = await page.locator("#table tbody tr.current").get_attribute("data-key")
            await page.keyboard.press("Enter")
            await page.wait_for_selector(".traj", timeout=WAIT)
            assert page.url.endswith(f"/t/{key}")  # a deep link to the trajectory
            assert await page.locator(f"#t-{key}.current").count() == 1
            current = page.locator(".step.current")
            assert await current.count() == 1
            first_step = await current.get_attribute("data-step")
            await page.keyboard.press("j")
            assert await page.locator(".step.current").get_attribute("data-step") != first_step
            await page.keyboard.press("k")
            assert await page.locator(".step.current").get_attribute("data-step") == first_step
            await page.keyboard.press("ArrowDown")
            assert await page.locator(".step.current").get_attribute("data-step") != first_step
            await page.wait_for_function(
                "() => [...document.querySelectorAll('.step.current img')].every("
                "i => i.complete && i.naturalWidth > 0)", timeout=WAIT)
            await harness.shot(page, "view-instance-1280.png", tmp_path)
            await page.set_viewport_size({"width": 390, "height": 844})
            await harness.shot(page, "view-instance-390.png", tmp_path)
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390  # no sideways scrolling on a phone
            await page.set_viewport_size({"width": 1280, "height": 900})
            # next instance with the arrow key, back to the table with u
            before = page.url
            await page.keyboard.press("ArrowRight")
            await page.wait_for_function("u => location.href !== u", arg=before, timeout=WAIT)
            await page.keyboard.press("u")
            await page.wait_for_selector("#table", timeout=WAIT)
    finally:
        await server.stop()


async def test_the_runs_list_on_a_phone(browser, sample_data, director_scenes, tmp_path):
    """A SceneFunRI run and a Director study at 390 px: cards, no sideways scrolling, each
    finished run's progress complete (not "of" every strategy × every backend)."""
    from helpers import tiny_design

    from unseen import run_study
    from unseen.evals.director.study.design import load_design

    runs = tmp_path / "runs"  # under the names `unseen run` gives
    await run_async(sample_data, ["direct", "spoe"], ["sim", "sim:director-strong"],
                    out=runs / "20261205-153909-direct+spoe-sim+sim-director-strong",
                    limit=2, cache=False, progress=False)
    (tmp_path / "tiny.toml").write_text(tiny_design(batches={"b1": ["move", "move/novis"]}))
    await asyncio.to_thread(run_study, load_design(tmp_path / "tiny.toml"), ["sim"],
                            runs / "20261205-160211-director-tiny-sim", scenes=director_scenes,
                            progress=False)
    server, url = await _serve([runs])
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, url, width=390, height=844)
            await page.wait_for_selector("#runs tbody tr", timeout=WAIT)
            await harness.shot(page, "view-runs-390.png", tmp_path)
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390
            assert not await page.locator("#runs thead").is_visible()  # cards, not a table
            progress = await page.locator("#runs td.progress").all_inner_texts()
            assert progress == ["8 of 8 trajectories", "4 of 4 trajectories"], progress
    finally:
        await server.stop()


async def test_deep_links_and_a_hostile_reply(browser, run_dir, tmp_path):
    server, url = await _serve([run_dir])
    head = RunDir(run_dir).heads()[0]  # its first step's reply is HTML
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, f"{url}#/run/0/i/{head.instance_id}/t/{head.key}")
            await page.wait_for_selector(f"#t-{head.key}.current", timeout=WAIT)
            reply = page.locator(f"#t-{head.key} pre.reply").first
            assert await reply.inner_text() == HOSTILE
            assert await page.locator("#injected").count() == 0
            assert await page.evaluate("window.pwned === undefined")
            assert await page.locator("#sim").is_visible()
            await page.set_viewport_size({"width": 390, "height": 844})
            await page.goto(url + "#/run/0")
            await page.wait_for_selector("#table tbody tr", timeout=WAIT)
            await harness.shot(page, "view-run-390.png", tmp_path)
            await page.goto(url + "#/run/0/i/no-such-instance")
            await page.wait_for_selector("#error", timeout=WAIT)
    finally:
        await server.stop()


async def test_a_running_sim_run_counts_rise(browser, sample_data, tmp_path):
    out = tmp_path / "live"
    task = slow_sim_run(sample_data, out)
    try:
        await first_records(out)
        server, url = await _serve([out])
        try:
            async with browser() as ctx:
                page = await harness.open_page(ctx, url + "#/run/0")
                await page.wait_for_selector("#table", timeout=WAIT)
                await _rises(page, "document.querySelectorAll('#table tbody tr').length",
                             "=== 8")
                assert "8 of 8" in await page.locator("#progress").inner_text()
        finally:
            await server.stop()
    finally:
        await task


@pytest.fixture(scope="module")
def pointing_run(tmp_path_factory) -> Path:
    """A run of examples/pointing made in another process that has the plug-in; this one
    has not, so the viewer shows it with the generic views."""
    path = Path(__file__).resolve().parents[1] / "examples" / "test_examples.py"
    spec = importlib.util.spec_from_file_location("_examples_kit", path)
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    site, tmp = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("pointing")
    kit.install("pointing", site)
    assert kit.python(site, "-m", "unseen_pointing", "data", "--n", "3", cwd=tmp).returncode == 0
    res = kit.unseen_cli(site, "run", "--benchmark", "pointing", "--data", "data", "-s",
                         "spoe:T=3", "-s", "direct", "-b", "sim", "--out", "r", "-q", cwd=tmp)
    assert res.returncode == 0, res.stderr
    return tmp / "r"


async def test_a_benchmark_without_views_gets_the_generic_page(browser, pointing_run, tmp_path):
    out = pointing_run
    server, url = await _serve([out])
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, url + "#/run/0")
            await page.wait_for_selector("#table tbody tr", timeout=WAIT)
            assert "pointing" in (await page.locator("h2").inner_text()).lower()
            await page.click("#table tbody tr")
            await page.wait_for_selector(".step", timeout=WAIT)
            assert await page.locator(".step pre.prompt").first.inner_text()
            await harness.shot(page, "view-pointing-1280.png", tmp_path)
    finally:
        await server.stop()


async def test_a_director_run_shows_the_scene_the_report_and_the_choice(browser, director_scenes,
                                                                        tmp_path):
    from helpers import run_tiny_study, tiny_design

    design = tiny_design(batches={"b1": ["move/twoturn"]})  # Question A, then B: two turns
    _, run_dir = await asyncio.to_thread(run_tiny_study, tmp_path, design, ["sim"],
                                         director_scenes)
    server, url = await _serve([run_dir])
    head = RunDir(run_dir).heads()[0]
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, f"{url}#/run/0/i/{head.instance_id}")
            await page.wait_for_selector(".traj", timeout=WAIT)
            # the Director's picture: the scene with the report and the choice marked
            await page.wait_for_function(
                "() => { const i = document.querySelector('img.strip'); return i && i.complete "
                "&& i.naturalWidth > 0 }", timeout=WAIT)
            turns = await page.locator(".step h4").all_inner_texts()
            assert len(turns) == 2 and "turn1" in turns[0] and "turn2" in turns[1], turns
            parsed = await page.locator(".step .parsed").all_inner_texts()
            assert "visible" in parsed[0] and "block" in parsed[1]  # the report, the choice
            assert await page.locator("#sim").is_visible()
            await harness.shot(page, "view-director-1280.png", tmp_path)
            # the Director's plots, drawn by its export
            await page.goto(url + "#/run/0")
            await page.click("#show-figures")
            await page.wait_for_function(
                "() => { const i = [...document.querySelectorAll('#figures img')]; return "
                "i.length > 0 && i.every(x => x.complete && x.naturalWidth > 0) }", timeout=WAIT)
    finally:
        await server.stop()


async def test_the_curves_and_the_report(browser, run_dir, tmp_path):
    server, url = await _serve([run_dir])
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, url + "#/run/0")
            await page.wait_for_selector("#table tbody tr", timeout=WAIT)
            await page.click("#show-figures")
            await page.wait_for_function(
                "() => { const i = [...document.querySelectorAll('#figures img')]; return "
                "i.length > 0 && i.every(x => x.complete && x.naturalWidth > 0) }", timeout=WAIT)
            await page.click("th[data-col=outcome]")  # a redraw keeps them
            assert await page.locator("#figures img").count() > 0
            await harness.shot(page, "view-curves-1280.png", tmp_path, full_page=True)
            report = await ctx.new_page()
            await report.goto(url + "report/0/")
            assert await report.locator("table").count() > 0
    finally:
        await server.stop()


async def test_a_running_runs_new_trajectories_appear_on_an_instance(browser, sample_data,
                                                                     tmp_path):
    """The run's writer is this test: it holds the run directory's lock (as a running run
    does) and appends the instance's second trajectory only once the page shows the first,
    so what the page must do never depends on how fast a run or the machine is."""
    from unseen.engine.lock import hold

    done = tmp_path / "done"
    await run_async(sample_data, ["direct", "cot"], ["sim"], out=done, limit=1, cache=False,
                    progress=False)
    first_line, second_line = (done / "trajectories.jsonl").read_text().splitlines()
    live = tmp_path / "live"
    live.mkdir()
    (live / "run.json").write_text((done / "run.json").read_text())
    journal = live / "trajectories.jsonl"
    journal.write_text(first_line + "\n")
    (first,) = RunDir(live).heads()
    writer = hold(live, "test")
    writer.__enter__()
    server, url = await _serve([live])
    try:
        async with browser() as ctx:
            page = await harness.open_page(ctx, f"{url}#/run/0/i/{first.instance_id}")
            await page.wait_for_selector(".traj", timeout=WAIT)
            assert await page.locator(".traj").count() == 1
            assert await page.locator("#live").is_visible()
            with journal.open("a") as f:
                f.write(second_line + "\n")
            await page.wait_for_function(
                "() => document.querySelectorAll('.traj').length === 2", timeout=WAIT)
            assert await page.locator("#live").is_visible()  # still held: still running
            writer.__exit__(None, None, None)  # the run ends: its mark goes, no reload
            await page.wait_for_function(
                "() => document.getElementById('live').classList.contains('hidden')",
                timeout=WAIT)
    finally:
        writer.__exit__(None, None, None)  # a second release does nothing
        await server.stop()


async def test_a_running_director_studys_counts_rise(browser, director_scenes, tmp_path):
    from helpers import run_tiny_study, tiny_design

    design = tiny_design(n=6, samples=2)
    study = asyncio.create_task(asyncio.to_thread(
        run_tiny_study, tmp_path, design, ["sim:default,delay_s=0.2"], director_scenes,
        concurrency=1))
    out = tmp_path / "run"
    try:
        await first_records(out)
        server, url = await _serve([tmp_path])  # the folder that holds the study's run
        try:
            async with browser() as ctx:
                page = await harness.open_page(ctx, url)
                await page.wait_for_selector("#runs tbody tr", timeout=WAIT)
                await _rises(page, "document.querySelector('#runs .progress').textContent",
                             ".startsWith('12 of 12')")
        finally:
            await server.stop()
    finally:
        await study
