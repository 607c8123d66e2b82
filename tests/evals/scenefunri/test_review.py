"""``unseen data review``: the human page in review mode over a build folder (paper §3.4).

Decisions are kept by instance id in review.jsonl, the rejected leave instances.jsonl, a
stopped review goes on with the undecided, a rebuild keeps the decisions. Driven through the
JSON API here; tests/backends/test_human_browser.py reviews a build in Chromium.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from human_driver import Person, stop

from unseen.commands.data_review import serve_review
from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.data.review import REVIEW_FILE, Build, Decision, carry_over


@pytest.fixture
def build_dir(sample_data, tmp_path) -> Path:
    """A build folder: the sample set's instances.jsonl and images (first five), and the
    build's review entries, one flagged."""
    out = tmp_path / "build"
    shutil.copytree(sample_data, out)
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    (out / "instances.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids = [json.loads(x)["id"] for x in lines]
    (out / REVIEW_FILE).write_text("".join(
        json.dumps({"id": i, "reasons": ["small box"] if k == 1 else []}) + "\n"
        for k, i in enumerate(ids)), encoding="utf-8")
    return out


def _ids(folder: Path) -> list[str]:
    return [i.id for i in load_dataset(folder).instances]


def _entries(folder: Path) -> dict[str, dict]:
    return {e["id"]: e for e in map(json.loads, (folder / REVIEW_FILE).read_text().splitlines())}


async def _start(build_dir, who="ann") -> tuple[asyncio.Task, list[str]]:
    lines: list[str] = []
    task = asyncio.create_task(serve_review(build_dir, who=who, announce=lines.append))
    for _ in range(500):
        if lines or task.done():
            break
        await asyncio.sleep(0.01)
    return task, lines


async def test_review_decisions_are_kept_and_the_rejected_leave(build_dir):
    ids = _ids(build_dir)
    task, lines = await _start(build_dir)
    assert lines[0].startswith("ann (review): decide 5 candidates at http://127.0.0.1:")
    person = Person(lines[0].rsplit(" ", 1)[1])
    item = await person.next()
    assert item["mode"] == "review" and item["id"] == ids[0] and item["skip"] is False
    assert [c["label"] for c in item["choices"]] == ["accept", "duplicate", "evidence",
                                                      "ambiguous", "other"]
    img = await person.client.get(item["image"])
    inst = load_dataset(build_dir).instances[0]
    assert img.status_code == 200 and img.content == Path(inst.image).read_bytes()
    # the box, outlined by the page on the image as it is, in the image's pixels
    assert item["marks"] == [inst.truth["box"]] and item["frame"] == [inst.width, inst.height]
    assert (await person.answer(item["id"], {"choice": "accept"})).status_code == 200
    assert (await person.answer(item["id"], {"choice": "duplicate"})).status_code == 409
    item = await person.next()
    assert "The build flagged: small box" in item["prompt"]
    assert (await person.answer(item["id"], {"choice": "duplicate"})).status_code == 200
    item = await person.next()
    r = await person.answer(item["id"], {"choice": "other"})
    assert r.status_code == 400 and "note" in r.json()["error"]
    r = await person.answer(item["id"], {"choice": "nonsense"})
    assert r.status_code == 400
    r = await person.answer(item["id"], {"choice": "other", "note": "the box is on a lamp"})
    assert r.status_code == 200
    await stop(task)  # Ctrl-C with two undecided
    await person.aclose()

    assert _ids(build_dir) == [ids[0], ids[3], ids[4]]  # a run reads only the accepted/undecided
    entries = _entries(build_dir)
    assert entries[ids[0]]["decision"]["verdict"] == "accept"
    assert entries[ids[1]]["decision"] | {"at": ""} == {
        "verdict": "reject", "reason": "duplicate", "note": "", "by": "ann", "at": ""}
    assert entries[ids[1]]["reasons"] == ["small box"]  # the build's own fields stay
    assert entries[ids[2]]["decision"]["note"] == "the box is on a lamp"
    assert entries[ids[1]]["instance"]["id"] == ids[1]  # the rejected line, kept

    task, lines = await _start(build_dir, who="ben")  # goes on with the undecided only
    assert "decide 2 candidates" in lines[0]
    person = Person(lines[0].rsplit(" ", 1)[1])
    seen = await person.answer_all(lambda item: {"choice": "evidence"})
    review = await asyncio.wait_for(task, 30)
    await person.aclose()
    assert [s["id"] for s in seen] == [ids[3], ids[4]]
    assert review.build.counts() == {"accept": 1, "reject": 4, "reject:duplicate": 1,
                                     "reject:other": 1, "reject:evidence": 2}
    assert _ids(build_dir) == [ids[0]]
    _, lines = await _start(build_dir)
    assert lines == []  # nothing left to decide: no page


def test_a_rebuild_keeps_the_decisions_by_id(build_dir):
    b = Build(build_dir)
    ids = [x["id"] for x in b.instances]
    b.decide(ids[0], Decision(verdict="reject", reason="ambiguous"))
    b.decide(ids[1], Decision(verdict="accept"))
    fresh = [dict(x) for x in Build(build_dir).candidates()]  # what a rebuild makes again
    review = [{"id": i, "reasons": ["new"]} for i in ids[1:]]  # ... with new build fields
    kept, entries = carry_over(build_dir, fresh, review)
    assert [x["id"] for x in kept] == ids[1:]
    by = {e["id"]: e for e in entries}
    assert by[ids[0]]["decision"]["reason"] == "ambiguous" and by[ids[0]]["instance"]["id"] == ids[0]
    assert by[ids[1]]["decision"]["verdict"] == "accept" and by[ids[1]]["reasons"] == ["new"]
    assert "decision" not in by[ids[2]]
    # a rejected instance the rebuild does not make again keeps its decision
    kept, entries = carry_over(build_dir, fresh[2:], review[1:])
    assert {e["id"] for e in entries if e.get("decision")} == {ids[0], ids[1]}


def test_an_accepted_again_instance_returns(build_dir):
    b = Build(build_dir)
    first = b.instances[0]["id"]
    b.decide(first, Decision(verdict="reject", reason="duplicate"))
    assert first not in _ids(build_dir)
    Build(build_dir).decide(first, Decision(verdict="accept"))
    assert first in _ids(build_dir) and "instance" not in _entries(build_dir)[first]


@pytest.mark.parametrize("raw, message", [
    ({"verdict": "reject"}, "names its reason"),
    ({"verdict": "accept", "reason": "duplicate"}, "no reason"),
    ({"verdict": "reject", "reason": "other"}, "needs a note"),
    ({"verdict": "reject", "reason": "blurry"}, "reason"),
])
def test_decisions_follow_the_papers_reasons(raw, message):
    with pytest.raises(ValueError, match=message):
        Decision.model_validate(raw)


def test_review_of_a_folder_that_is_no_build_is_one_line(run_main, tmp_path):
    code, out, err = run_main(["data", "review", str(tmp_path)])
    assert code == 2 and err.count("\n") == 1 and "no instances.jsonl" in err


async def test_the_command_prints_the_address_and_the_counts(build_dir):
    import os
    import sys

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "unseen.cli", "data", "review", str(build_dir), "--who", "ann",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "80"})
    line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode().strip()
    assert line.startswith("ann (review): decide 5 candidates at http://127.0.0.1:"), line
    person = Person(line.rsplit(" ", 1)[1])
    answers = iter(["accept", "accept", "ambiguous", "duplicate", "accept"])
    await person.answer_all(lambda item: {"choice": next(answers)})
    await person.aclose()
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    text = " ".join(stdout.decode().split())
    assert text.startswith("3 accepted, 2 rejected (ambiguous 1, duplicate 1), 0 undecided; "
                           "3 instances in "), text
