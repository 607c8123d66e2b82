"""``unseen view``'s server without a browser: every path under the token (none without it),
on 127.0.0.1 only, the runs list, a run's table worst first, an instance's trajectories with
their images and the benchmark's picture, a running run's version that grows, and bad input
(a path that holds no run) as one line and exit status 2. The browser checks are in
``test_viewer_browser.py``."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest
from helpers import first_records, hostile_first_step, slow_sim_run

from unseen.api import run_async
from unseen.engine.rundir import RunDir
from unseen.viewer import Catalog, ViewServer
from unseen.viewer.index import RANK

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


@pytest.fixture(scope="module")
def runs(sample_data, tmp_path_factory) -> Path:
    """A folder of two finished sim runs; one reply of the first made hostile HTML."""
    folder = tmp_path_factory.mktemp("runs")
    for name, strategies in (("a", ["direct", "spoe"]), ("b", ["cot"])):
        asyncio.run(run_async(sample_data, strategies, ["sim"], out=folder / name, limit=3,
                              cache=False, progress=False))
    hostile_first_step(folder / "a", HOSTILE, prompt=True)
    return folder


async def _served(paths):
    server = ViewServer(Catalog(paths))
    return server, await server.start()


async def test_every_path_needs_the_token_and_the_server_is_local(runs):
    server, url = await _served([runs])
    try:
        assert url.startswith("http://127.0.0.1:") and server.token in url
        async with httpx.AsyncClient() as c:
            base = f"http://127.0.0.1:{server.port}/"
            for path in ("", "api/runs", "api/run/0", "static/app.js", "report/0/"):
                assert (await c.get(base + path)).status_code == 404, path
                assert (await c.get(base + "wrong-token/" + path)).status_code == 404, path
            assert (await c.get(url + "api/runs")).status_code == 200
            # a request addressed to another host name (DNS rebinding) is refused
            assert (await c.get(url + "api/runs", headers={"Host": "evil.test"})).status_code == 400
            page = await c.get(url)
            assert "default-src 'none'" in page.headers["content-security-policy"]
            assert 'name="viewport"' in page.text and "http" not in page.text  # no CDN
        # bound to 127.0.0.1 only: another address of this machine does not answer
        with socket.socket() as s:
            s.settimeout(2)
            try:
                other = socket.gethostbyname(socket.gethostname())
            except OSError:
                other = "127.0.0.1"
            if not other.startswith("127."):
                assert s.connect_ex((other, server.port)) != 0
    finally:
        await server.stop()


async def test_runs_list_table_worst_first_and_an_instance(runs):
    server, url = await _served([runs])
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            listing = (await c.get(url + "api/runs")).json()["runs"]
            assert [r["name"] for r in listing] == ["a", "b"]
            a = listing[0]
            assert a["benchmark"] == "SceneFunRI" and a["simulated"] and not a["running"]
            assert a["strategies"] == ["direct", "spoe"] and a["done"] == 6
            assert a["models"] == ["sim-default (sim)"] and a["started"]
            table = (await c.get(url + "api/run/0")).json()
            assert table["metrics"][:2] == ["cacc75", "cacc50"]
            ranks = [RANK[r[6]] for r in table["rows"]]
            assert ranks == sorted(ranks)  # worst first
            assert (await c.get(url + f"api/run/0?v={table['summary']['version']}")).json()["same"]
            heads = RunDir(runs / "a").heads()
            spoe = next(h for h in heads if h.strategy == "spoe")
            inst = (await c.get(url + "api/run/0/instance/" + spoe.instance_id)).json()
            trajs = {t["strategy"]: t for t in inst["trajectories"]}
            assert set(trajs) == {"direct", "spoe"}
            steps = trajs["spoe"]["steps"]
            assert len(steps) > 1 and steps[0]["prompt"] and steps[0]["tokens"].startswith("in ")
            # SceneFunRI's measures of each step's region against the truth (its TUI's words)
            with_region = [s for s in steps if s["region"]]
            assert with_region and all("Dist" in " ".join(s["benchmark"]) for s in with_region)
            img = await c.get(url + f"api/run/0/image/{spoe.key}/1/0")
            assert img.status_code == 200 and img.content[:4] == b"\x89PNG"
            strip = await c.get(url + f"api/run/0/strip/{spoe.key}")
            assert strip.status_code == 200 and strip.content[:4] == b"\x89PNG"
            report = await c.get(url + "report/0/")
            assert report.status_code == 200 and "unseen report" in report.text
            assert (await c.get(url + "report/0/../../etc/passwd")).status_code == 404
            for bad in ("api/run/9", "api/run/0/instance/nope", f"api/run/0/image/{spoe.key}/99/0",
                        "api/run/0/strip/nokey"):
                r = await c.get(url + bad)
                assert r.status_code == 404 and r.json()["error"], bad
    finally:
        await server.stop()


async def test_a_hostile_reply_is_sent_as_text(runs):
    server, url = await _served([runs / "a"])
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            table = (await c.get(url + "api/run/0")).json()
            hostile = RunDir(runs / "a").heads()[0]
            inst = (await c.get(url + "api/run/0/instance/" + hostile.instance_id)).json()
            step = next(t for t in inst["trajectories"] if t["key"] == hostile.key)["steps"][0]
            assert step["reply"] == HOSTILE  # as text: the page sets it with textContent
            assert table["rows"]
            js = (await c.get(url + "static/app.js")).text
        # the page puts run data in the document as text only
        assert not any(w in js for w in ("innerHTML", "outerHTML", "insertAdjacentHTML",
                                          "document.write", "eval("))
    finally:
        await server.stop()


async def test_a_running_run_is_followed(sample_data, tmp_path):
    out = tmp_path / "live"
    task = slow_sim_run(sample_data, out)
    try:
        await first_records(out)
        server, url = await _served([out])
        try:
            async with httpx.AsyncClient(timeout=30) as c:
                first = (await c.get(url + "api/runs")).json()["runs"][0]
                assert first["running"]
                seen = {first["done"]}
                for _ in range(100):
                    await asyncio.sleep(0.2)
                    now = (await c.get(url + "api/runs")).json()["runs"][0]
                    seen.add(now["done"])
                    if not now["running"]:
                        break
                assert not now["running"] and now["done"] == 8
                assert len(seen) > 2 and now["version"] > first["version"]
        finally:
            await server.stop()
    finally:
        await task


def test_progress_counts_what_the_run_planned(sample_data, run_main, director_scenes,
                                              tmp_path):
    """`unseen run`'s models and, after them, the fixed rules with the baseline alone: the
    list said "18 of 48" of the finished run (every strategy × every backend); a Director
    study planned by its batches said "of" the same product."""
    import json

    from helpers import run_tiny_study, tiny_design

    out = tmp_path / "r"
    code, _, err = run_main(["run", "--data", str(sample_data), "--limit", "2", "-q",
                             "--out", str(out)])
    assert code == 0, err
    summary = Catalog([out]).listing()[0]
    assert summary["done"] == 2 * (6 + 3) and summary["planned"] == summary["done"]
    # a resume with another strategy adds its pairs; one of an older run knows no plan
    part = tmp_path / "p"
    for strategies in (["direct"], ["direct", "cot"]):
        argv = [x for s in strategies for x in ("-s", s)]
        assert run_main(["run", "--data", str(sample_data), "--limit", "1", "-q", *argv,
                         "--out", str(part)])[0] == 0
    assert Catalog([part]).listing()[0]["planned"] == 2
    config = json.loads((part / "run.json").read_text())
    (part / "run.json").write_text(json.dumps({k: v for k, v in config.items()
                                               if k != "pairs"}))
    assert Catalog([part]).listing()[0]["planned"] is None
    design = tiny_design(batches={"b1": ["move", "move/novis"]})
    _, study = run_tiny_study(tmp_path, design, ["sim"], director_scenes)
    summary = Catalog([study]).listing()[0]
    assert summary["planned"] == summary["done"] == 4


def test_a_strategy_in_many_settings_is_one_entry_of_the_runs_list():
    from unseen.viewer.index import _grouped

    study = [f"director:batch=b{i // 2},condition=c{i}" for i in range(6)]
    assert _grouped(["direct", "spoe:T=6", *study]) == ["direct", "spoe:T=6",
                                                        "director (6 settings)"]
    assert _grouped(study[:4]) == study[:4]


def test_a_path_without_runs_is_one_line(run_main, tmp_path):
    code, out, err = run_main(["view", str(tmp_path)])
    assert code == 2 and "neither a run directory nor a folder holding any" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    code, out, err = run_main(["view", str(tmp_path / "missing")])
    assert code == 2 and "no such run directory" in err


def test_without_a_run_dir_a_folder_without_runs_is_one_line(run_main, tmp_path, monkeypatch):
    """`unseen view` alone was refused ("Missing argument"); where there is nothing to show
    it says what it looked for."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UNSEEN_RUNS", raising=False)
    (tmp_path / "notes").mkdir()
    code, out, err = run_main(["view"])
    assert code == 2 and "no RUN_DIR given" in err and "runs/" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def _first_line(argv, cwd, env):
    """The first line ``unseen view`` prints, run in ``cwd``; the server then stopped."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "unseen.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return proc.stdout.readline() or proc.stderr.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_without_a_run_dir_it_shows_runs_else_the_folder_it_is_in(runs, tmp_path):
    import os
    import shutil

    env = {k: v for k, v in os.environ.items() if k != "UNSEEN_RUNS"}
    env["TMPDIR"] = str(tmp_path)
    shutil.copytree(runs, tmp_path / "runs")
    line = _first_line(["view"], tmp_path, env)  # ./runs, where `unseen run` writes
    assert line.startswith("unseen view: 2 runs at http://127.0.0.1:"), line
    line = _first_line(["view"], tmp_path / "runs", env)  # no ./runs: this folder's runs
    assert line.startswith("unseen view: 2 runs at "), line
    line = _first_line(["view"], tmp_path / "runs" / "a", env)  # a run itself
    assert line.startswith("unseen view: 1 run at "), line
    (tmp_path / "elsewhere").mkdir()
    env["UNSEEN_RUNS"] = str(tmp_path / "runs")  # where `unseen run` writes, then
    line = _first_line(["view"], tmp_path / "elsewhere", env)
    assert line.startswith("unseen view: 2 runs at "), line


def test_the_command_prints_one_line_with_its_address_and_a_taken_port_is_one_line(
        runs, tmp_path):
    import os
    import re
    import signal
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where the viewer makes its strips
    proc = subprocess.Popen([sys.executable, "-m", "unseen.cli", "view", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:(\d+)/\S+/", line)
        assert line.startswith("unseen view: 2 runs at ") and url, line
        base = url.group(0)
        key = httpx.get(base + "api/run/0", timeout=30).json()["rows"][0][0]
        assert httpx.get(f"{base}api/run/0/strip/{key}", timeout=60).status_code == 200
        assert list(tmp_path.glob("unseen-view-*"))
        taken = subprocess.run([sys.executable, "-m", "unseen.cli", "view", str(runs), "--port",
                                url.group(1)], capture_output=True, text=True, timeout=120)
        assert taken.returncode == 2 and "cannot serve the page" in taken.stderr
        assert "choose another port (--port N)" in taken.stderr
        assert len(taken.stderr.strip().splitlines()) == 1
        proc.send_signal(signal.SIGTERM)  # as Ctrl-C: the server ends cleanly
        assert proc.wait(timeout=30) == 0
        assert proc.stderr.read().strip() == "stopped"
        assert not list(tmp_path.glob("unseen-view-*"))  # what it made is gone with it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_a_damaged_journal_is_one_line_at_start_and_a_note_once_serving(runs, run_main,
                                                                      tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(runs / "b", bad)
    good = (bad / "trajectories.jsonl").read_bytes()
    (bad / "trajectories.jsonl").write_bytes(b"not json\n" + good)
    code, out, err = run_main(["view", str(bad)])
    assert code == 2 and "the journal is damaged" in err and "Traceback" not in err

    (bad / "trajectories.jsonl").write_bytes(good)
    catalog = Catalog([bad])
    assert catalog.listing()[0]["error"] == ""
    (bad / "trajectories.jsonl").write_bytes(good + b"not json\n" + good)  # damaged later
    summary = catalog.listing()[0]
    assert "damaged" in summary["error"] and summary["done"] == 3  # the rows last read


def test_a_run_started_in_a_folder_of_runs_appears(runs, tmp_path):
    import shutil

    folder = tmp_path / "runs"
    shutil.copytree(runs / "a", folder / "a")
    catalog = Catalog([folder])
    assert [r["name"] for r in catalog.listing()] == ["a"]
    (folder / "half").mkdir()  # a run directory not readable yet is left for the next time
    (folder / "half" / "trajectories.jsonl").write_text("not json\n")
    shutil.copytree(runs / "b", folder / "b")
    assert [r["name"] for r in catalog.listing()] == ["a", "b"]
    (folder / "half" / "trajectories.jsonl").write_text("")
    assert [r["number"] for r in catalog.listing()] == [0, 1, 2]
