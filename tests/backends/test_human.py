"""The ``human`` backend through its JSON API (no browser): a person's answers become replies
in the strategy's convention, journaled and scored like a model's; a second answer to one
request is refused; a stopped run, resumed, asks only what is unanswered; the page never
sees the truth. tests/backends/test_human_browser.py drives the same page in Chromium."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from helpers import tiny_design
from human_driver import Announced, Person, finish, stop
from hypothesis import given, settings
from hypothesis import strategies as st

from unseen.api import run_async
from unseen.backends import BackendConfigError, connect
from unseen.backends.human import Human, read_log
from unseen.engine.journal import JOURNAL, iter_records
from unseen.engine.types import AnswerSpec
from unseen.evals.scenefunri.report.formats import render
from unseen.evals.scenefunri.report.summary import summarize


def _records(run_dir: Path) -> list[dict]:
    return list(iter_records(run_dir / JOURNAL))


def _run(data, strategies, out, backends=("human:ann",), **kw) -> asyncio.Task:
    return asyncio.create_task(run_async(data, list(strategies), list(backends), out=out,
                                         cache=False, progress=False, **kw))


async def test_direct_boxes_come_back_in_pixels_and_are_scored(sample_data, instances, tmp_path,
                                                             monkeypatch, run_main):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["direct"], tmp_path / "r", limit=3)
    person = Person(await said.url("ann", task=task))
    truth = {i.text["instruction"]: i for i in instances[:3]}
    answered = []

    def policy(item):
        assert item["kind"] == "box" and item["image"] and item["who"] == "ann"
        inst = next(v for k, v in truth.items() if k in item["prompt"])
        assert item["frame"] == [inst.width, inst.height]
        answered.append(inst.id)
        return {"box": inst.truth["box"]}  # the person finds the target exactly

    items = await person.answer_all(policy)
    result = await finish(task, person)
    assert result.done == 3 and result.answered == 3
    assert [i["progress"]["n"] for i in items] == [1, 2, 3]
    assert {i["progress"]["of"] for i in items} == {3}
    recs = _records(tmp_path / "r")
    assert {r["backend"] for r in recs} == {"human:ann"} and {r["model"] for r in recs} == {"ann"}
    for r in recs:
        inst = next(i for i in instances if i.id == r["instance_id"])
        assert r["prediction"] == pytest.approx(inst.truth["box"], abs=0.051)
        reply = r["steps"][0]["reply"]
        assert json.loads(reply["text"])["box"] == pytest.approx(inst.truth["box"], abs=0.051)
        assert reply["latency_s"] > 0 and not reply["cached"]
        assert r["metrics"]["cacc75"] == 1.0
    rows = summarize([tmp_path / "r"])
    assert rows[0]["kind"] == "human" and rows[0]["model"] == "ann"
    assert "ann (human)" in render(rows, "md")
    log = read_log(tmp_path / "r" / "human" / "ann.jsonl")
    assert len(log) == 3
    code, text, _ = run_main(["show", str(tmp_path / "r")])
    assert code == 0 and "ann (human)" in text
    code, text, _ = run_main(["show", str(tmp_path / "r"), instances[0].id, "--no-images"])
    assert code == 0 and "ann (human) · direct" in text


async def test_spoe_regions_are_picked_by_label_on_the_drawn_halves(sample_data, instances,
                                                                   tmp_path, monkeypatch,
                                                                   run_main):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["spoe:T=2"], tmp_path / "r", limit=1)
    person = Person(await said.url("ann", task=task))
    inst = instances[0]
    item = await person.next()
    assert item["kind"] == "choice" and [c["label"] for c in item["choices"]] == ["A", "B"]
    assert [c["key"] for c in item["choices"]] == ["a", "b"]
    assert item["progress"] == {"n": 1, "of": 1, "step": 1}
    # the image is the step's overlay drawn on the instance's image, at its size
    r = await person.client.get(item["image"])
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/")
    from io import BytesIO

    from PIL import Image
    with Image.open(BytesIO(r.content)) as im:
        assert im.size == (inst.width, inst.height)
    raw = Path(inst.image).read_bytes()
    assert r.content != raw  # the two labelled halves are drawn on it
    assert (await person.answer(item["id"], {"choice": "A"})).status_code == 200
    item = await person.next()
    assert item["progress"]["step"] == 2
    assert (await person.answer(item["id"], {"choice": "B"})).status_code == 200
    await finish(task, person)
    (rec,) = _records(tmp_path / "r")
    # eliminate A (left half), then B (bottom of what is left): the top right quarter
    w, h = inst.width, inst.height
    assert rec["prediction"] == pytest.approx([w / 2, 0, w, h / 2])
    assert [s["parsed"]["choice"] for s in rec["steps"]] == ["A", "B"]
    assert [s["reply"]["text"] for s in rec["steps"]] == ["A", "B"]
    code, text, _ = run_main(["curve", str(tmp_path / "r")])  # a person's curve, marked
    assert code == 0 and "ann (human)" in text


async def test_grid_cells_are_eliminated_and_one_must_stay(sample_data, instances, tmp_path,
                                                          monkeypatch):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["spoe-grid:T=1"], tmp_path / "r", limit=1)
    person = Person(await said.url(task=task))
    item = await person.next()
    assert item["kind"] == "cells" and [c["label"] for c in item["choices"]] == ["1", "2", "3", "4"]
    r = await person.answer(item["id"], {"cells": ["1", "2", "3", "4"]})
    assert r.status_code == 400 and "at least one" in r.json()["error"]
    assert (await person.answer(item["id"], {"cells": ["2", "1"]})).status_code == 200
    await finish(task, person)
    (rec,) = _records(tmp_path / "r")
    inst = instances[0]
    assert rec["steps"][0]["reply"]["text"] == '{"eliminate": [1, 2]}'
    assert rec["prediction"] == pytest.approx([0, inst.height / 2, inst.width, inst.height])


async def test_cant_tell_leaves_the_trajectory_unanswered_and_scored_so(sample_data, tmp_path,
                                                                       monkeypatch):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["direct"], tmp_path / "r", limit=2)
    person = Person(await said.url(task=task))
    await person.answer_all(lambda item: {"skip": True})
    result = await finish(task, person)
    assert result.by_error == {"skipped": 2} and result.errors == 0 and result.answered == 0
    recs = _records(tmp_path / "r")
    for r in recs:
        assert r["status"] == "unanswered" and r["prediction"] is None
        assert r["error"]["kind"] == "skipped"
        assert r["steps"][0]["reply"]["text"] == ""  # no text that could be read as a box
        assert r["metrics"]["cacc75"] == 0.0  # unanswered counts as a miss ("full")
    (row,) = summarize([tmp_path / "r"])
    assert row["answered"] == 0 and row["cacc75"] == 0


async def test_the_first_answer_wins_and_bad_answers_are_refused(sample_data, tmp_path,
                                                                monkeypatch):
    said = Announced(monkeypatch)
    task = _run(sample_data, ["direct"], tmp_path / "r", limit=2)
    url = await said.url(task=task)
    tab1, tab2 = Person(url), Person(url)
    a, b = await tab1.next(), await tab2.next()  # a reload or a second tab: the same request
    assert a["id"] == b["id"]
    for body, message in [({}, "draw a box"), ({"box": [5, 5, 5, 40]}, "empty"),
                          ({"box": [1, 2, 3]}, "draw a box"), ([1], "JSON object"),
                          ({"box": [9e9, 0, 9e9 + 1, 10]}, "not inside")]:
        r = await tab1.answer(a["id"], body)
        assert r.status_code == 400 and message in r.json()["error"], (body, r.text)
    r = await tab1.client.post(f"api/answer/{a['id']}", content=b"{not json",
                               headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert (await tab1.answer(a["id"], {"box": [10, 10, 50, 60]})).status_code == 200
    r = await tab2.answer(b["id"], {"box": [0, 0, 5, 5]})
    assert r.status_code == 409 and r.json()["error"] == "already answered"
    assert (await tab2.answer("nope", {"box": [0, 0, 5, 5]})).status_code == 404
    nxt = await tab2.next()
    assert nxt["id"] != a["id"] and nxt["progress"]["n"] == 2
    assert (await tab2.answer(nxt["id"], {"box": [1, 1, 20, 20]})).status_code == 200
    await finish(task, tab1)
    await tab2.aclose()
    recs = _records(tmp_path / "r")
    assert len(recs) == 2 and len(read_log(tmp_path / "r" / "human" / "ann.jsonl")) == 2
    first = next(r for r in recs if r["steps"][0]["reply"]["text"] == '{"box": [10.0, 10.0, 50.0, 60.0]}')
    assert first["prediction"] == [10.0, 10.0, 50.0, 60.0]


async def test_a_stopped_run_resumed_asks_only_what_is_unanswered(sample_data, tmp_path,
                                                                 monkeypatch):
    said = Announced(monkeypatch)
    out = tmp_path / "r"
    task = _run(sample_data, ["spoe:T=3"], out, limit=2)
    person = Person(await said.url(task=task))
    first = await person.answer_all(lambda item: {"choice": "A"}, limit=4)
    pending = await person.next()  # the second instance's second step is on screen
    assert (pending["progress"]["n"], pending["progress"]["step"]) == (2, 2)
    await stop(task)
    await person.aclose()
    assert [i["progress"]["step"] for i in first] == [1, 2, 3, 1]
    assert len(_records(out)) == 1 and len(read_log(out / "human" / "ann.jsonl")) == 4

    said.lines.clear()
    task = _run(sample_data, ["spoe:T=3"], out, limit=2)
    person = Person(await said.url(task=task))
    assert "answer 1 items" in said.lines[0]
    again = await person.answer_all(lambda item: {"choice": "B"})
    result = await finish(task, person)
    assert result.skipped == 1 and result.done == 1
    # only steps 2 and 3 of the unfinished trajectory are asked again
    assert [(i["progress"]["n"], i["progress"]["step"]) for i in again] == [(1, 2), (1, 3)]
    recs = _records(out)
    assert len(recs) == 2
    resumed = next(r for r in recs if len(r["steps"]) == 3 and r["steps"][0]["reply"]["cached"])
    assert [s["reply"]["text"] for s in resumed["steps"]] == ["A", "B", "B"]
    assert len(read_log(out / "human" / "ann.jsonl")) == 6


class _Tripwire(dict):
    """An oracle that fails the test when anything reads it."""

    def _trip(self, *a, **k):
        raise AssertionError("the human backend read Request.oracle")

    __getitem__ = get = __iter__ = __len__ = __contains__ = keys = items = values = _trip


async def test_the_page_never_reads_the_truth(sample_data, instances, tmp_path, monkeypatch):

    orig = Human.complete

    async def blind(self, request):
        return await orig(self, request.model_copy(update={"oracle": _Tripwire()}))

    monkeypatch.setattr(Human, "complete", blind)
    said = Announced(monkeypatch)
    task = _run(sample_data, ["direct", "spoe:T=1"], tmp_path / "r", limit=2)
    person = Person(await said.url(task=task))
    seen = await person.answer_all(
        lambda item: {"box": [1, 1, 30, 30]} if item["kind"] == "box" else {"choice": "A"})
    result = await finish(task, person)
    assert result.answered == 4 and len(seen) == 4
    served = json.dumps(seen)
    assert "truth" not in served and "oracle" not in served
    for inst in instances[:2]:
        assert inst.id not in served and json.dumps(inst.truth["box"])[1:-1] not in served


async def test_director_fields_and_the_second_turn(director_scenes, tmp_path, monkeypatch,
                                                  run_main):
    from unseen.commands.director_run import run_study_async
    from unseen.evals.director.analysis.analyze import analyze
    from unseen.evals.director.analysis.tables import render as render_director
    from unseen.evals.director.study.design import load_design

    design_file = tmp_path / "tiny.toml"
    design_file.write_text(tiny_design(batches={"q": ["move", "move/twoturn"]}),
                           encoding="utf-8")
    said = Announced(monkeypatch)
    out = tmp_path / "study"
    task = asyncio.create_task(run_study_async(load_design(design_file), ["human:ann"], out,
                                               scenes=director_scenes, cache=False,
                                               progress=False))
    person = Person(await said.url("ann", task=task))

    def policy(item):
        assert item["kind"] == "fields" and item["image"]
        names = [f["name"] for f in item["fields"]]
        types = {f["name"]: f["type"] for f in item["fields"]}
        if item["progress"]["step"] == 2:  # the dialogue's second turn shows the first
            assert [t["role"] for t in item["history"]] == ["user", "assistant"]
            assert json.loads(item["history"][1]["text"])  # the person's own first answer
        return {"fields": {n: "1, 3" if types[n] == "ints" else "7" for n in names}}

    seen = await person.answer_all(policy)
    result = await finish(task, person)
    assert result.done == 4 and result.answered == 4
    assert len(seen) == 6  # move: one turn; move/twoturn: two, on each of two scenes
    recs = _records(out)
    for r in recs:
        pred = r["prediction"]
        assert pred["block"] == 7 and all(v == [1, 3] for k, v in pred.items() if k != "block")
    from unseen.evals.director.analysis.rows import rows as rows_of

    analysis = analyze(rows_of(out), load_design(design_file))
    assert analysis.humans == {"ann"}
    md = render_director(analysis, "md")
    assert "ann (human)" in md
    code, text, _ = run_main(["director", "analyze", str(out)])
    assert code == 0 and "ann (human)" in text
    code, text, _ = run_main(["show", str(out)])
    assert code == 0 and "ann (human)" in text


async def test_a_person_is_never_timed_out_retried_or_cached(tmp_path, sample_data, instances,
                                                            monkeypatch):
    from unseen.engine.cache import ReplyCache
    from unseen.strategies import build

    said = Announced(monkeypatch)
    client = connect("human:ann", concurrency=8, timeout_s=0.01, max_attempts=6,
                     cache=ReplyCache(tmp_path / "cache"))
    assert (client.concurrency, client.timeout_s, client.max_attempts) == (1, None, 1)
    assert client.cache is None  # another run asks the person again
    assert client.describe()["interactive"] is True and "token" not in json.dumps(client.describe())
    spec = build("direct")
    from unseen.engine.runner import Runner
    from unseen.engine.types import RunConfig

    config = RunConfig(run="r", benchmark="scenefunri", data=str(sample_data),
                       dataset_fingerprint="x", instances=1, strategies=[], backends=[],
                       package_version="0", created_at="now")
    runner = Runner(instances[:1], [spec], [client], tmp_path / "r", config, progress=False)
    task = asyncio.create_task(runner.run())
    person = Person(await said.url(task=task))
    item = await person.next()
    await asyncio.sleep(0.1)  # ten times the run's --timeout: a person takes their time
    assert (await person.answer(item["id"], {"skip": True})).status_code == 200
    result = await finish(task, person)
    await client.aclose()
    assert result.by_error == {"skipped": 1}
    assert client.stats["calls"] == 1 and client.stats["retries"] == 0  # "can't tell" is final


@pytest.mark.parametrize("spec, name, port", [
    ("human", "person", 0), ("human:ann", "ann", 0), ("human:ann,port=8765", "ann", 8765),
    ("human,port=8123", "person", 8123), ("human:b.c-d_e", "b.c-d_e", 0),
])
def test_specs(spec, name, port):
    from unseen.backends import make_backend

    b = make_backend(spec)
    assert (b.model, b.port, b.spec, b.box_format) == (name, port, f"human:{name}", "pixel")


@pytest.mark.parametrize("spec, message", [
    ("human:a b", "a person's name"), ("human:../x", "a person's name"),
    ("human:ann,port=x", "port must be"), ("human:ann,port=70000", "port must be"),
    ("human:ann,seed=1", "takes port=N"),
])
def test_bad_specs_say_why(spec, message):
    from unseen.backends import make_backend

    with pytest.raises(BackendConfigError, match=message):
        make_backend(spec)


def test_bad_spec_on_the_command_line_is_one_line(run_main):
    code, out, err = run_main(["run", "-b", "human:ann,port=x", "--limit", "1", "-q"])
    assert code == 2 and err.count("\n") == 1 and "port must be" in err


def test_a_person_refuses_processes(run_main, tmp_path):
    code, out, err = run_main(["run", "-b", "human:ann", "--processes", "2", "-q",
                               "--out", str(tmp_path / "r")])
    assert code == 2 and "without --processes" in err
    code, out, err = run_main(["run", "-b", "human:ann", "-b", "human:ann,port=9", "-q",
                               "--out", str(tmp_path / "r")])
    assert code == 2 and "human:ann is given twice" in err
    code, out, err = run_main(["director", "run", "quick", "-b", "human:ann", "-b",
                               "human:ann,port=9", "-q", "--out", str(tmp_path / "d")])
    assert code == 2 and "human:ann is given twice" in err and not (tmp_path / "d").exists()


async def test_the_page_answers_only_its_token_and_host(monkeypatch):
    from unseen.backends.human import Human

    said = Announced(monkeypatch)
    person = Human("ann")
    await person.attach(None, 1)
    url = await said.url("ann")
    base = url.rsplit("/", 2)[0]
    async with httpx.AsyncClient(timeout=10) as c:
        page = await c.get(url)
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        for testid in ("image", "submit", "skip"):
            assert f'data-testid="{testid}"' in page.text
        assert "http" not in page.text.split("<script>")[1]  # no CDN, nothing from outside
        assert (await c.get(url.rstrip("/"))).status_code in (307, 200)
        assert (await c.get(base + "/")).status_code == 404
        assert (await c.get(base + "/wrongtoken/api/next")).status_code == 404
        assert (await c.get(url + "api/image/nope/0")).status_code == 404
        evil = await c.get(url + "api/next", headers={"host": "evil.example"})
        assert evil.status_code == 400
        assert (await c.get(url + "api/next?wait=0")).json()["waiting"] is True
    # a second person needs another port; a port in use is refused in one line
    other = Human("ben", port=person.port)
    with pytest.raises(BackendConfigError, match="cannot serve the page"):
        await other.attach(None, 1)
    await person.aclose()
    async with httpx.AsyncClient(timeout=5) as c:
        with pytest.raises(httpx.ConnectError):
            await c.get(url)


@pytest.mark.slow
async def test_the_command_line_prints_the_address_then_the_human_row(sample_data, tmp_path,
                                                                     run_main):
    import sys

    from human_driver import URL

    out = tmp_path / "r"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "unseen.cli", "run", "--data", str(sample_data), "-s", "direct",
        "-b", "human:ann", "--limit", "1", "--out", str(out), "--no-cache",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**__import__("os").environ, "COLUMNS": "120"})
    line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
    m = URL.search(line)
    assert m and line.startswith("ann (human): answer 1 items at http://127.0.0.1:"), line
    person = Person(m.group(0))
    await person.answer_all(lambda item: {"box": [100, 100, 300, 260]})
    await person.aclose()
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, stderr.decode()
    assert "ann (human)" in stdout.decode()
    code, text, _ = run_main(["compare", str(out), "--format", "md"])
    assert code == 0 and "| ann (human) | direct |" in text


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=12)
_SPECS = [AnswerSpec(kind="box", width=64, height=48),
          AnswerSpec(kind="choice", choices=["A", "B"]),
          AnswerSpec(kind="cells", choices=["1", "2", "3", "4"]),
          AnswerSpec(kind="fields", fields={"visible": "ints", "block": "int"}),
          AnswerSpec(kind="text")]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_SPECS),
       _json | st.fixed_dictionaries({}, optional={
           "box": st.lists(st.floats(-100, 200) | st.integers(-5, 100), max_size=5),
           "choice": st.text(max_size=2), "cells": st.lists(st.sampled_from("12345x"), max_size=5),
           "fields": st.dictionaries(st.sampled_from(["visible", "block", "x"]),
                                     _json | st.from_regex(r"[-+0-9, ;a]{0,8}", fullmatch=True)),
           "text": st.text(max_size=10)}))
def test_any_answer_is_taken_or_refused_with_a_reason(spec, body):
    from unseen.backends.human import AnswerError, reply_text
    from unseen.evals.director.task.parse import parse_reply
    from unseen.strategies.choice import read_choice
    from unseen.strategies.direct import read_box
    from unseen.strategies.spoe_grid import read_eliminated

    try:
        text = reply_text(spec, body, "pixel")
    except AnswerError as exc:
        assert str(exc)
        return
    # what is taken is what the strategy's own reader reads as an answer
    if spec.kind == "box":
        parsed = read_box(text, "pixel", 64, 48)
        assert parsed.error is None and 0 <= parsed.value[0] < parsed.value[2] <= 64
    elif spec.kind == "choice":
        assert read_choice(text, spec.choices) == text
    elif spec.kind == "cells":
        gone = read_eliminated(text, 4)
        assert gone is not None and len(gone) < 4
    elif spec.kind == "fields":
        assert parse_reply(text, spec.fields) == json.loads(text)
    else:
        assert text.strip()


def test_box_conventions_follow_the_prompt():
    from unseen.backends.human import AnswerError, reply_text

    spec = AnswerSpec(kind="box", width=640, height=480)
    # strategies/prompts/box/pixel.txt: {"box": [x1, y1, x2, y2]} in pixels of the image
    assert reply_text(spec, {"box": [64, 48, 320.04, 240]}, "pixel") == '{"box": [64.0, 48.0, 320.0, 240.0]}'
    # box/norm1000.txt and box/gemini.txt: 0-1000, gemini's y first
    assert reply_text(spec, {"box": [64, 48, 320, 240]}, "norm1000") == '{"box": [100.0, 100.0, 500.0, 500.0]}'
    assert reply_text(spec, {"box": [64, 96, 320, 240]}, "gemini") == '{"box": [200.0, 100.0, 500.0, 500.0]}'
    # a box past the edge by up to a pixel (the page's rounding) is clipped to the image;
    # further out, it was not drawn on the page and is refused
    assert reply_text(spec, {"box": [-1, 10, 640.9, 20]}, "pixel") == '{"box": [0.0, 10.0, 640.0, 20.0]}'
    for box in ([-500, -500, 99999, 99999], [-5, 10, 100, 20], [10, 10, 642, 20], [0, 0, 9, 482]):
        with pytest.raises(AnswerError, match="not inside the 640x480 image"):
            reply_text(spec, {"box": box}, "pixel")


def test_a_sliver_that_clipping_leaves_is_refused_and_a_unit_box_keeps_its_places():
    """Hypothesis found [-1, -1, 0.04, 1] taken as ``[0.0, 0.0, 0.0, 1.0]`` (clipped to the
    image, then written to a tenth of a pixel), which the strategy's reader refuses; and a
    ``unit`` box was written to a tenth of the image."""
    from unseen.backends.human import AnswerError, reply_text
    from unseen.strategies.direct import read_box

    with pytest.raises(AnswerError, match="empty"):
        reply_text(_SPECS[0], {"box": [-1, -1, 0.04, 1]}, "pixel")
    text = reply_text(_SPECS[0], {"box": [8, 6, 40, 30]}, "unit")
    assert json.loads(text) == {"box": [0.125, 0.125, 0.625, 0.625]}
    assert read_box(text, "unit", 64, 48).value == pytest.approx((8, 6, 40, 30))
