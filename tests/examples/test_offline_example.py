"""docs/writing-a-strategy.md, "Making a strategy answerable offline": its two examples, run
as written."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

import unseen
from unseen.backends import make_backend
from unseen.engine.box import Box
from unseen.engine.oracle import TASKS, Truth
from unseen.engine.types import Message, Request, TextPart
from unseen.strategies.registry import STRATEGIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-strategy.md"


def examples() -> list[str]:
    """The Python blocks of the guide's subsection, in order."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Making a strategy answerable offline")
    end = text.find("\n## ", start + 10)
    section = text[start: end if end > 0 else len(text)]
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", section, re.S)]


@pytest.fixture
def registered(monkeypatch):
    """Run the guide's code in a namespace; what it registers is removed afterwards."""
    monkeypatch.setattr(Truth, "kinds", dict(Truth.kinds))
    names = {"strategies": set(STRATEGIES), "tasks": set(TASKS)}
    yield
    for name in set(STRATEGIES) - names["strategies"]:
        del STRATEGIES[name]
    for name in set(TASKS) - names["tasks"]:
        del TASKS[name]


def test_the_readme_has_both_examples():
    blocks = examples()
    assert len(blocks) == 2
    assert '@strategy("look-behind"' in blocks[0] and "oracle=box_truth(" in blocks[0]
    assert "class CountTruth(Truth)" in blocks[1] and '@sim_task("count")' in blocks[1]


def test_the_strategy_example_runs_offline(sample_data, tmp_path, registered):
    code = compile(examples()[0], "writing-a-strategy.md", "exec", dont_inherit=True)
    exec(code, {"__name__": "readme_example"})
    out = tmp_path / "run"
    unseen.run(sample_data, ["look-behind"], ["sim:oracle"], out=out, limit=3, cache=False,
               progress=False)
    rows = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    truths = {i.id: i.truth["box"] for i in unseen.load_dataset(sample_data).instances}
    assert len(rows) == 3
    for r in rows:
        # sim:oracle (skill 1, no spread) answered from the truth: its box holds the target
        assert r["status"] == "answered" and r["simulated"]
        assert Box.of(truths[r["instance_id"]]).intersection(Box.of(r["prediction"])) \
            == pytest.approx(Box.of(truths[r["instance_id"]]).area)
        assert "hidden behind something" in r["steps"][0]["prompt"]
        # the truth went to the simulator only: the journal's steps hold no oracle
        step = r["steps"][0]
        assert "oracle" not in step and step["info"] == {} and "cues" not in json.dumps(r)


async def test_the_kind_example_is_answered_by_sim(registered):
    ns: dict = {"__name__": "readme_example"}
    exec(compile(examples()[1], "writing-a-strategy.md", "exec", dont_inherit=True), ns)
    truth = ns["CountTruth"](instance="scene-1", count=4)
    request = Request(messages=[Message(role="user", parts=[TextPart(text="How many?")])],
                      oracle=truth)
    assert request.oracle is truth
    assert (await make_backend("sim:oracle").complete(request)).text == "4"  # skill 1
    assert (await make_backend("sim:default,skill=0").complete(request)).text == "5"
    assert "count" in make_backend("sim").answers  # the pairing check sees the new kind
    # a mapping with the new task validates as the new kind
    again = Request(messages=request.messages, oracle={"task": "count", "count": 2})
    assert type(again.oracle) is ns["CountTruth"] and again.oracle.count == 2
