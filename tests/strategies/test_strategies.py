"""The registry: decorator, command-line specs, parameters, entry points."""

import json
import sys
import textwrap

import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

import unseen
from unseen.engine.graph import Parsed, StrategyState, ask_node
from unseen.engine.types import ImagePart, Message, Request, TextPart
from unseen.strategies import StrategyError, build, get, parse_spec, registry, strategy


def test_parse_spec():
    assert parse_spec("direct") == ("direct", {})
    assert parse_spec("direct:temperature=0.7, seed=3") == ("direct", {"temperature": "0.7", "seed": "3"})
    with pytest.raises(StrategyError, match="key=value"):
        parse_spec("direct:temperature")


def test_params_validated_and_labelled():
    spec = build("direct:temperature=0.7")
    assert spec.params.temperature == 0.7 and spec.label == "direct:temperature=0.7"
    assert build("direct").label == "direct"
    assert build("direct") is build("direct")  # compiled once
    with pytest.raises(StrategyError, match="bad parameter 'bogus'"):
        build("direct:bogus=1")
    with pytest.raises(StrategyError, match="bad parameter 'temperature'"):
        build("direct:temperature=hot")
    with pytest.raises(StrategyError, match="unknown strategy 'nope'"):
        get("nope")


class TwiceParams(BaseModel):
    rounds: int = 2


@strategy("test-ask-twice", params=TwiceParams, summary="asks n times, keeps the last box")
def ask_twice(params):
    from unseen.strategies.kit import box_truth, read_box

    def build_request(state, backend):
        inst = state["instance"]
        return Request(messages=[Message(role="user", parts=[
            ImagePart(path=inst.image), TextPart(text=f"round {state.get('t', 0)}")])],
            oracle=box_truth(inst), sample=state.get("sample", 0))

    def parse(state, backend, reply):
        inst = state["instance"]
        return read_box(reply.text, backend.box_format, inst.width, inst.height)

    def update(state, step, parsed: Parsed):
        return {"prediction": parsed.value, "status": "answered", "t": state.get("t", 0) + 1}

    g = StateGraph(StrategyState)
    g.add_node("ask", ask_node("ask", build_request, parse, update))
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", lambda s: "ask" if s.get("status") == "answered"
                            and s.get("t", 0) < params.rounds else END)
    return g


def test_custom_strategy_runs_and_logs_a_step_per_iteration(sample_data, tmp_path):
    unseen.run(sample_data, ["test-ask-twice:rounds=3"], ["sim:oracle"], out=tmp_path / "r",
               limit=2, cache=False, progress=False)
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for r in rows:
        assert r["strategy"] == "test-ask-twice:rounds=3" and r["params"] == {"rounds": 3}
        assert [s["prompt"] for s in r["steps"]] == ["round 0", "round 1", "round 2"]
        assert [s["index"] for s in r["steps"]] == [0, 1, 2]


def test_entry_point_plugin_is_discovered(tmp_path, monkeypatch):
    (tmp_path / "my_plugin.py").write_text(textwrap.dedent('''
        from langgraph.graph import StateGraph, START, END
        from unseen import strategy
        from unseen.engine.graph import StrategyState

        @strategy("plugin-noop", summary="from an entry point")
        def noop(params):
            g = StateGraph(StrategyState)
            g.add_node("done", lambda s: {"status": "unanswered"})
            g.add_edge(START, "done"); g.add_edge("done", END)
            return g
    '''))
    dist = tmp_path / "my_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[unseen.strategies]\nnoop = my_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.STRATEGIES.refresh()  # the package was installed after the first lookup
    try:
        assert get("plugin-noop").summary == "from an entry point"
    finally:
        registry.STRATEGIES.pop("plugin-noop", None)
        sys.modules.pop("my_plugin", None)
