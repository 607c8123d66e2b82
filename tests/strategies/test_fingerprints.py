"""A run directory resumes only the strategies it was made with: editing a prompt template
(or a strategy's code) and rerunning into the same ``--out`` printed "0 new trajectories"
and ``show`` kept the old prompt (issue 23). Now the change is refused with one line that
says what changed and how to start a new run directory; run.json records the fingerprints."""

from __future__ import annotations

import fnmatch
import json
import sys
import textwrap

import pytest

import unseen
from unseen.api import RunError
from unseen.strategies import prompts as prompt_files
from unseen.strategies.registry import STRATEGIES, _code_digest, fingerprint

PLUGIN = '''
"""A strategy of an outside package, with its own prompt template."""
from pathlib import Path

from unseen.engine.graph import StrategyState, ask_node
from unseen.engine.types import Request
from unseen.strategies.kit import box_answer, box_format_text, box_truth, image_turn, read_box
from unseen.strategies.registry import strategy

from .wording import CLOSING

HERE = Path(__file__).parent


@strategy("ask-once-test", prompts=("ask.txt",))
def build(params):
    from langgraph.graph import END, START, StateGraph

    def request(state, backend):
        inst = state["instance"]
        text = (HERE / "prompts" / "ask.txt").read_text() + box_format_text(
            backend.box_format, inst.width, inst.height) + CLOSING
        return Request(messages=[image_turn(inst, text)], oracle=box_truth(inst),
                       answer=box_answer(inst.width, inst.height))

    def parse(state, backend, reply):
        inst = state["instance"]
        return read_box(reply.text, backend.box_format, inst.width, inst.height)

    def update(state, step, parsed):
        return {"prediction": parsed.value, "status": "answered"}

    graph = StateGraph(StrategyState)
    graph.add_node("ask", ask_node("ask", request, parse, update))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "askonce"
    (pkg / "prompts").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "wording.py").write_text('CLOSING = ""\n')
    (pkg / "strategy.py").write_text(textwrap.dedent(PLUGIN))
    (pkg / "prompts" / "ask.txt").write_text("Where is the hidden object? ")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import askonce.strategy  # noqa: F401 - registers ask-once-test

    yield pkg
    STRATEGIES.pop("ask-once-test", None)
    for name in [m for m in sys.modules if m.startswith("askonce")]:
        del sys.modules[name]


def test_a_changed_prompt_template_is_refused_on_resume(plugin, sample_data, tmp_path):
    out = tmp_path / "run"
    unseen.run(sample_data, ["ask-once-test"], ["sim"], out=out, limit=2, progress=False)
    config = json.loads((out / "run.json").read_text())
    (entry,) = config["strategies"]
    assert set(entry["fingerprint"]["prompts"]) == {"ask.txt"} and entry["fingerprint"]["code"]
    # the same prompt resumes: nothing new to do
    assert unseen.run(sample_data, ["ask-once-test"], ["sim"], out=out, limit=2,
                      progress=False).skipped == 2
    (plugin / "prompts" / "ask.txt").write_text("Where must the hidden object be? ")
    with pytest.raises(RunError, match=r"'ask-once-test' changed since .* \(its prompt "
                                       r"template ask.txt\).*--out NEW_DIR"):
        unseen.run(sample_data, ["ask-once-test"], ["sim"], out=out, limit=2, progress=False)
    # a new run directory asks the new prompt
    res = unseen.run(sample_data, ["ask-once-test"], ["sim"], out=tmp_path / "new", limit=2,
                     progress=False)
    assert res.done == 2
    rec = json.loads((tmp_path / "new" / "trajectories.jsonl").read_text().splitlines()[0])
    assert rec["steps"][0]["prompt"].startswith("Where must the hidden object be?")


def test_a_changed_strategy_is_refused_from_the_command_line(plugin, sample_data, tmp_path,
                                                            run_main):
    out = tmp_path / "run"
    argv = ["run", "--data", str(sample_data), "-s", "ask-once-test", "--limit", "1",
            "--out", str(out)]
    assert run_main(argv)[0] == 0
    source = (plugin / "strategy.py").read_text()
    edited = source.replace("+ CLOSING\n", "+ CLOSING + ' '\n")
    assert edited != source
    (plugin / "strategy.py").write_text(edited)
    code, stdout, err = run_main(argv)
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "its code" in line and "new run directory" in line


def test_a_changed_shared_module_is_refused_naming_it(plugin, sample_data, tmp_path):
    """A helper module the strategy imports (here ``wording.py``; for the built-ins
    ``kit.py`` and ``prompts.py``, which write the box-format sentence) is its code too."""
    out = tmp_path / "run"
    unseen.run(sample_data, ["ask-once-test"], ["sim"], out=out, limit=1, progress=False)
    (entry,) = json.loads((out / "run.json").read_text())["strategies"]
    assert set(entry["fingerprint"]["modules"]) == {"askonce.strategy", "askonce.wording"}
    (plugin / "wording.py").write_text('CLOSING = " Answer briefly."\n')
    with pytest.raises(RunError, match=r"changed since .* \(its code \(wording\.py\)\)"):
        unseen.run(sample_data, ["ask-once-test"], ["sim"], out=out, limit=1, progress=False)


def test_a_built_in_strategy_s_code_holds_the_helpers_that_write_its_prompts():
    for name in ("direct", "cot", "cot-sr", "spoe", "spoe-grid", "spoe-search"):
        modules = set(fingerprint(name)["modules"])
        assert {"unseen.strategies.kit", "unseen.strategies.prompts"} <= modules, name
        assert not any(m.startswith("unseen.engine") for m in modules), name
    director = set(fingerprint("director")["modules"])
    assert {"unseen.evals.director.task.prompts", "unseen.evals.director.task.parse"} <= director


def test_the_code_digest_ignores_comments_docstrings_and_layout():
    base = 'def f(x):\n    """Doc."""\n    return x + 1\n'
    assert _code_digest(base) == _code_digest('def f(x):  # why\n\n    return x + 1\n')
    assert _code_digest(base) != _code_digest('def f(x):\n    return x + 2\n')


def test_every_built_in_strategy_declares_the_templates_it_renders(sample_data, monkeypatch):
    """The fingerprint holds only what a strategy declares: every template a built-in
    renders, over the variants that reach every template, must be declared."""
    rendered: dict[str, set[str]] = {}
    current = {"name": ""}
    real = prompt_files.template.__wrapped__

    def recording(name: str):
        rendered.setdefault(current["name"], set()).add(name + ".txt")
        return real(name)

    monkeypatch.setattr(prompt_files, "template", recording)
    variants = {"direct": ["direct:prompt=both", "direct"], "cot": ["cot"], "cot-sr": ["cot-sr"],
                "spoe": ["spoe:T=2,unsure=true,finish=direct", "spoe:T=1,mode=keep"],
                "spoe-grid": ["spoe-grid:T=1"], "spoe-search": ["spoe-search:T=1"]}
    for name, specs in variants.items():
        current["name"] = name
        unseen.run(sample_data, specs, ["sim:oracle"], limit=1, progress=False, cache=False,
                   out=sample_data.parent / f"fp-{name}")
    for name, used in rendered.items():
        declared = STRATEGIES[name].prompts
        for template in used:
            assert any(fnmatch.fnmatch(template, p) for p in declared), (name, template)
        assert fingerprint(name)["prompts"], name
    assert set(rendered) == set(variants)
