"""Prompting strategies (§5.2.1–5.2.2) against the fake OpenAI server: calls, templates,
the reflection turn, the commonsense entry in the journal, and box conventions."""

import json

import pytest
from fake_providers import Reply

import unseen
from unseen.strategies.commonsense import lookup, table
from unseen.strategies.prompts import render


def run(tmp_path, fp, strategies, limit=2, **kw):
    out = tmp_path / "run"
    unseen.run(kw.pop("data"), strategies, [kw.pop("backend", "openai:gpt-4o")], out=out,
               base_url=fp.openai_base_url, cache=False, progress=False, limit=limit,
               backoff_base_s=0.01, **kw)
    return [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]


def user_texts(recorded):
    """The user turns' text of one recorded OpenAI request."""
    out = []
    for m in recorded.body["messages"]:
        if m["role"] != "user":
            continue
        parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out.append("\n".join(p["text"] for p in parts if p["type"] == "text"))
    return out


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_each_direct_prompt_sends_its_own_text(tmp_path, fp, sample_data):
    hidden = render("hints/hidden")
    sent = {}
    for prompt in ("basic", "hidden", "common", "both"):
        fp.reset(Reply('{"box": [100, 100, 300, 300]}'))
        rows = run(tmp_path / prompt, fp, [f"direct:prompt={prompt}"], data=sample_data, limit=1)
        assert len(fp.requests) == 1 and rows[0]["status"] == "answered"
        sent[prompt] = user_texts(fp.requests[0])[0]
        step = rows[0]["steps"][0]
        assert step["info"]["prompt"] == prompt
        if prompt in ("common", "both"):
            entry = next(e for e in table() if e.id == step["info"]["commonsense"])
            assert entry.text in sent[prompt]
        else:
            assert "commonsense" not in step["info"]
    assert hidden not in sent["basic"] and hidden in sent["hidden"] and hidden in sent["both"]
    assert "Commonsense knowledge" not in sent["hidden"]
    assert "Commonsense knowledge" in sent["common"] and "Commonsense knowledge" in sent["both"]
    assert len(set(sent.values())) == 4
    # everything else is the base prompt: the variants only add paragraphs
    for prompt in ("hidden", "common", "both"):
        base_lines = sent["basic"].splitlines()
        assert all(line in sent[prompt].splitlines() for line in base_lines)


def test_cot_is_one_call_with_three_steps(tmp_path, fp, sample_data):
    fp.reset(Reply('Step 1. knob. Step 2. hidden. Step 3. left.\n{"box": [100, 100, 300, 300]}'))
    rows = run(tmp_path, fp, ["cot"], data=sample_data)
    assert len(fp.requests) == 2 and all(r["status"] == "answered" for r in rows)
    text = user_texts(fp.requests[0])[0]
    assert "Step 1." in text and "Step 2." in text and "Step 3." in text
    assert rows[0]["prediction"] == pytest.approx([64.0, 48.0, 192.0, 144.0])  # 0-1000 → px


def test_cot_sr_carries_the_first_answer_into_the_reflection(tmp_path, fp, sample_data):
    first = 'Reasoning... {"box": [100, 100, 300, 300]}'
    fp.reset()
    fp.script(Reply(first), Reply('On reflection: {"box": [500, 500, 600, 600]}'))
    rows = run(tmp_path, fp, ["cot-sr"], data=sample_data, limit=1)
    assert len(fp.requests) == 2
    second = fp.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == first
    assert "Reflect on your answer" in user_texts(fp.requests[1])[-1]
    r = rows[0]
    assert [s["name"] for s in r["steps"]] == ["cot", "reflect"]
    # both boxes are logged, so the metric can be drawn before and after reflection
    assert r["steps"][0]["parsed"] == pytest.approx([64, 48, 192, 144])
    assert r["steps"][1]["parsed"] == pytest.approx([320, 240, 384, 288])
    assert r["prediction"] == r["steps"][1]["parsed"]


def test_cot_sr_stops_when_the_first_answer_is_unreadable(tmp_path, fp, sample_data):
    fp.reset(Reply("I am not sure."))
    rows = run(tmp_path, fp, ["cot-sr"], data=sample_data, limit=1)
    assert len(fp.requests) == 1 and rows[0]["status"] == "unanswered"
    assert rows[0]["error"]["kind"] == "parse" and len(rows[0]["steps"]) == 1


@pytest.mark.parametrize("model, text, expected", [
    ("gpt-4o", '{"box": [100, 100, 300, 300]}', [64, 48, 192, 144]),
    ("gemini-2.5-flash", '{"box_2d": [100, 100, 300, 300]}', [64, 48, 192, 144]),
    ("gemini-2.5-flash", '[{"box_2d": [100, 200, 300, 400], "label": "x"}]', [128, 48, 256, 144]),
    ("qwen2.5-vl-7b", '{"bbox_2d": [100, 100, 300, 300]}', None),
])
def test_box_conventions_through_cot(tmp_path, fp, sample_data, model, text, expected):
    from unseen.engine.box import Box

    fp.reset(Reply(text))
    rows = run(tmp_path, fp, ["cot"], data=sample_data, limit=1,
               backend=f"vllm:{model}@{fp.serve(model).url}")
    if expected is None:  # Qwen2.5: pixels of the 644x476 smart-resized input
        expected = Box.from_convention([100, 100, 300, 300], "qwen2.5", 640, 480).to_list()
    assert rows[0]["prediction"] == pytest.approx(expected)


def test_commonsense_lookup():
    assert lookup("Unplug the lamp on the bedside table", "unplug").id == "socket"
    assert lookup("Turn on the light by the door", "key_press").id == "switch"
    assert lookup("Open the bottom drawer of the cabinet next to the bed").id == "drawer"
    assert lookup("Turn the radiator valve", "rotate").id == "valve"
    assert lookup("Dance", None).id == "generic"
    # the affordance narrows the match: a lamp with key_press is the switch entry
    assert lookup("Switch off the lamp", "key_press").id == "switch"
