"""Director studies: designs, the call plan and its order, the two-turn dialogue, measures,
resuming, and reasoning traces kept from a real SDK against the fake server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import key_answer, tiny_design

from unseen.api import parse_backend
from unseen.backends import sim
from unseen.commands.director_run import run_study
from unseen.engine.types import Instance
from unseen.evals.director.analysis.rows import rows
from unseen.evals.director.study.design import DesignError, load_design
from unseen.evals.director.study.runner import StudyError, plan_calls
from unseen.evals.director.task.measures import score

TINY = tiny_design(
    samples=2, seed=3, n=4,
    batches={"q": ["move", "move/novis", "move/twoturn", "mean"],
             "c": {"models": ["gpt-x"], "conditions": ["move", "move+combined"]}},
    comparisons=[{"batch": "q", "base": "move/novis", "variant": "move", "family": "s4"}])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("design")
    path = folder / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scenes(director_scenes) -> Path:
    return director_scenes


@pytest.fixture(autouse=True)
def director_task(monkeypatch):
    if "director" not in sim.TASKS:
        monkeypatch.setitem(sim.TASKS, "director", key_answer)


# --- designs ------------------------------------------------------------------------------

def test_shipped_designs_load_and_count_calls():
    paper = load_design("paper")
    # §3: 800 calls per condition; grok-4.6 answers mean and move in row 1, and row 2's three
    assert paper.calls("grok-4.6") == (2 + 3) * 160 * 5
    assert paper.samples == 5 and {"main", "rotated", "rearranged"} <= set(paper.sets)
    assert {c.family for c in paper.comparisons} == {"s4", "s4-dv", "s5", "s6", "s6-rearranged",
                                                     None}
    quick = load_design("quick")
    assert quick.calls("anything") == 8 * 20 * 5


GPT6 = ("gpt-5.5", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-6-sol", "gpt-6-luna")
OPEN = ("Qwen3.8-27B", "Muse-Glimmer-30B")
ROW1 = GPT6 + OPEN
ROW2 = ("gpt-5.5", "gpt-5.6-sol", "gpt-6-sol", "gpt-6-luna", "grok-4.6")
ROW12 = ("gpt-5.6-terra", "gpt-5.6-luna", "gpt-6-sol")
QWEN = ("Qwen3.8-27B",)

# Appendix C, "The corrections", member by member: (batch, label) -> the models asked it.
S4 = {
    # "the change with the visibility question under move, the same change in each of the two
    # digit strata"
    ("r01-question", "visibility question, move"): ROW1,
    ("r01-question", "visibility question, move; hidden block carries the largest digit"): ROW1,
    ("r01-question", "visibility question, move; hidden block not the largest digit"): ROW1,
    ("r02-count", "visibility question, move (count batch)"): ROW2,
    ("r02-count", "visibility question, move; hidden block carries the largest digit (count "
                  "batch)"): ("grok-4.6",),
    ("r02-count", "visibility question, move; hidden block not the largest digit (count "
                  "batch)"): ("grok-4.6",),
    # "the block-count question"
    ("r02-count", "block-count question, move"): ROW2,
    # "mean with and without the visibility question"
    ("r03-mean", "visibility question, mean"): ("gpt-5.5", "gpt-5.6-luna", "gpt-6-sol",
                                                "gpt-6-luna"),
    # "and the comparisons of Table 2"
    **{("r12-table2", f"Table 2: {x}"): ROW12 for x in (
        "visibility question, move", "visibility question, mean", "visibility question, "
        "move-want", "visibility question, move-will", "visible blocks stated, move",
        "question minus statement, move", "question after Question B, move",
        "question in a first turn, move")},
    ("r12-table2", "Table 2: block-count question, move"): ("gpt-5.6-terra",),
    **{("r13-table2", f"Table 2: {x}"): QWEN for x in (
        "visibility question, move", "visibility question, mean", "visible blocks stated, move",
        "question minus statement, move", "question after Question B, move",
        "question in a first turn, move", "block-count question, move")},
}
S5 = {
    # "for each open-weight model, the changes with the visibility question in the three
    # readings, in the hidden-block choices whose trace takes the director not to see the
    # block and in the traces that work out the director's view, and move minus mean in the
    # three readings"
    **{("r01-question", f"visibility question, move: {x}"): OPEN for x in (
        "director-view reading", "own-view reading", "largest-digit reading",
        "hidden-block choices the trace takes as unseen", "traces working out the director's view")},
    **{("r01-question", f"move − mean: {x}"): OPEN for x in (
        "director-view reading", "own-view reading", "largest-digit reading")},
    # "each rewording minus move"
    ("r04-rewordings", "“want you to move” − move"): GPT6,
    ("r04-rewordings", "“the block that you will move” − move"): GPT6,
    # "the knowledge question minus the visibility question, among all replies and among those
    # whose report leaves the hidden block out"
    ("r05-knowledge", "knowledge question − visibility question"): GPT6 + QWEN,
    ("r05-knowledge", "knowledge − visibility question, reports leaving the hidden block out"):
        GPT6 + QWEN,
}
S6 = {
    # "the combined constraint minus the base prompt in the joint rate and in the hidden-block
    # choice rate"
    ("r06-constraint", "combined constraint: joint rate"): ROW1,
    ("r06-constraint", "combined constraint: hidden-block choices"): ROW1,
    # "the change with the visibility question in the hidden-block choice rate under each of
    # the two prompts"
    ("r09-constraint-question", "visibility question, base prompt"): ("gpt-5.6-luna", "gpt-6-sol",
                                                                       "gpt-6-luna"),
    ("r09-constraint-question", "visibility question, with the constraint"):
        ("gpt-5.6-luna", "gpt-6-sol", "gpt-6-luna"),
    # "the padding sentence and each clause alone in the joint rate"
    ("r07-clauses", "knowledge clause alone: joint rate"): GPT6,
    ("r07-clauses", "reference clause alone: joint rate"): GPT6,
    ("r08-padding", "padding sentence: joint rate"): ("gpt-5.6-luna", "gpt-6-luna"),
    # "and gpt-6-luna's visibility accuracy in rows 6, 8 and 9 of Table 3"
    ("r06-constraint", "combined constraint: visibility accuracy (row 6)"): ("gpt-6-luna",),
    ("r08-padding", "combined constraint: visibility accuracy (row 8)"): ("gpt-6-luna",),
    ("r09-constraint-question", "combined constraint: visibility accuracy (row 9)"):
        ("gpt-6-luna",),
}


def test_paper_families_expand_to_the_sizes_and_members_appendix_c_states():
    # Appendix C: "Benjamini–Hochberg correction at a false discovery rate of 0.05 takes the
    # comparisons of each section as one family ...: 72 in §4, 42 in §5 and 39 in §6. Each
    # family holds the comparisons of its section on every model asked them (Table 3)."
    paper = load_design("paper")
    sizes = paper.family_sizes()
    assert (sizes["s4"], sizes["s5"], sizes["s6"]) == (72, 42, 39)
    for family, want in (("s4", S4), ("s5", S5), ("s6", S6)):
        got = {(c.batch, c.label): tuple(sorted(paper.asked(c)))
               for c in paper.comparisons if c.family == family}
        assert got == {k: tuple(sorted(v)) for k, v in want.items()}, family
        assert sum(map(len, want.values())) == sizes[family]
    # reported outside Appendix C's lists: families of their own, and the margin tests in none
    assert (sizes["s4-dv"], sizes["s6-rearranged"]) == (9, 12)
    assert all(c.family is None for c in paper.comparisons if c.margin)
    # a run of a few of the models: the families over those alone
    # gpt-6-luna: row 6 joint and hidden, row 7 two clauses, row 8 padding, row 9 the question
    # under both prompts, and its accuracy in rows 6, 8 and 9
    assert paper.family_sizes(["gpt-6-luna"])["s6"] == 2 + 2 + 1 + 2 + 3


@pytest.mark.parametrize("edit, message", [
    (('conditions = ["move", "move/novis", "move/twoturn", "mean"]', 'conditions = ["jump"]'),
     "unknown request 'jump'"),
    (('variant = "move"', 'variant = "move/count"'), "not in batch 'q'"),
    (('[sets.main]', '[sets.side]'), "unknown scene set 'side'"),
    (('name = "c"', 'name = "q"'), "batch 'q' appears twice"),
    (('samples = 2', 'samples = 0'), "samples"),
    (('[[comparison]]', '[[comparison'), "not valid TOML"),
])
def test_bad_designs_fail_with_the_reason(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(TINY.replace(*edit), encoding="utf-8")
    with pytest.raises(DesignError, match=message):
        load_design(path)


def test_a_missing_design_names_the_shipped_ones(tmp_path):
    with pytest.raises(DesignError, match="paper, quick"):
        load_design(tmp_path / "nope.toml")


@pytest.mark.parametrize("arg, want", [
    ("sim", ("sim", None)),
    ("gpt-6-sol=sim:strong", ("sim:strong", "gpt-6-sol")),
    ("sim:default,skill=0.9", ("sim:default,skill=0.9", None)),
    ("Qwen3.8-27B=vllm:Qwen/Qwen3.8@http://127.0.0.1:8000", ("vllm:Qwen/Qwen3.8@http://127.0.0.1:8000", "Qwen3.8-27B")),
])
def test_backend_aliases(arg, want):
    assert parse_backend(arg) == want


# --- measures -----------------------------------------------------------------------------

def _scene(**truth) -> Instance:
    key = {"hidden_digit": 7, "visible_digits": [2, 5], "director_view_digit": 2,
           "largest_digit_visible": 5, "apparent_size_flag": False, "digits": [2, 5, 7]}
    return Instance(id="main-000", image="/x.png", width=4, height=3, truth={**key, **truth})


def test_measures_on_hand_worked_replies():
    s = _scene()
    # the hidden block with a correct report: a joint pair; hidden block 7 is the top digit
    assert score(s, {"visible": [5, 2], "block": 7}) == {
        "hidden_top_digit": 1.0, "apparent_flag": 0.0, "accuracy": 1.0,
        "report_excludes_hidden": 1.0, "hidden": 1.0, "dv": 0.0, "joint": 1.0, "ldv": 0.0,
        "ldv_other": 0.0}
    # the largest-digit visible block: not DV, so it counts in ldv_other
    m = score(s, {"visible": [2, 5, 7], "block": 5})
    assert (m["accuracy"], m["report_excludes_hidden"], m["joint"], m["ldv"], m["ldv_other"]) == (0, 0, 0, 1, 1)
    # a director-view choice does not enter ldv_other; no report, no accuracy or joint
    m = score(s, {"block": 2})
    assert m["dv"] == 1 and "ldv_other" not in m and "accuracy" not in m and "joint" not in m
    # where the largest-digit visible block is the DV block, ldv does not apply
    assert "ldv" not in score(_scene(largest_digit_visible=None), {"block": 2})
    assert score(s, {"count": 3, "block": 9})["count"] == 1 and score(s, {"count": 4})["count"] == 0
    assert score(s, {"known": [2, 5], "block": 2})["known"] == 1
    # a number not on the table is kept and scored wrong
    assert score(s, {"block": 42})["hidden"] == 0 and score(s, {"block": 42})["dv"] == 0
    # unanswered: only the scene strata
    assert score(s, None) == {"hidden_top_digit": 1.0, "apparent_flag": 0.0}


# --- the plan -----------------------------------------------------------------------------

def _plan(design, names, scenes):
    from unseen.backends import connect
    from unseen.evals.director.study.runner import scene_sets
    from unseen.strategies import build

    sets = scene_sets(design, ["main"], scenes, progress=False)
    clients = [connect(f"sim:default,seed={i}") for i in range(len(names))]
    specs = {(b.name, c): build(("director", {"condition": c, "batch": b.name}))
             for b in design.batches for c in b.conditions}
    return list(plan_calls(design, clients, names, specs, sets))  # made as asked for


def test_each_batch_runs_in_one_seeded_random_order_per_model(tiny, scenes):
    design = load_design(tiny)
    plan = _plan(design, ["gpt-x", "other"], scenes)
    per = Counter((it.backend.spec, it.strategy.params.batch) for it in plan)
    # gpt-x: both batches; other: batch q only (c lists gpt-x alone)
    assert per == {("sim:default,seed=0", "q"): 4 * 4 * 2, ("sim:default,seed=0", "c"): 2 * 4 * 2,
                   ("sim:default,seed=1", "q"): 4 * 4 * 2}
    assert len({it.key for it in plan}) == len(plan)
    mine = [it for it in plan if it.backend.spec.endswith("seed=0")]
    q = [it.strategy.params.condition for it in mine if it.strategy.params.batch == "q"]
    # conditions are interleaved, not asked one after another
    runs = sum(1 for a, b in zip(q, q[1:], strict=False) if a != b)
    assert runs > len(q) // 3
    # the models take turns
    assert plan[0].backend is not plan[1].backend
    # seeded: the same design gives the same order; another seed another one
    again = [it.key for it in _plan(design, ["gpt-x", "other"], scenes)]
    assert again == [it.key for it in plan]
    reseeded = design.model_copy(update={"seed": 4})
    assert [it.key for it in _plan(reseeded, ["gpt-x", "other"], scenes)] != again


# --- running ------------------------------------------------------------------------------

def test_run_resume_and_rows(tiny, scenes, tmp_path):
    design = load_design(tiny)
    out = tmp_path / "run"
    first = run_study(design, ["gpt-x=sim", "sim:strong"], out, scenes=scenes, progress=False)
    assert first.done == first.total == (4 + 2) * 4 * 2 + 4 * 4 * 2
    again = run_study(design, ["gpt-x=sim", "sim:strong"], out, scenes=scenes, progress=False)
    assert again.done == 0 and again.skipped == first.total
    got = list(rows(out))
    assert len(got) == first.total
    assert {r["model"] for r in got} == {"gpt-x", "sim-strong"}
    assert Counter(r["condition"] for r in got if r["model"] == "sim-strong") == {
        "move": 8, "move/novis": 8, "move/twoturn": 8, "mean": 8}
    study = json.loads((out / "study.json").read_text())
    assert study["design"]["name"] == "tiny" and study["scenes"]["main"]["n"] == 4
    assert {b["model"] for b in study["backends"]} == {"gpt-x", "sim-strong"}
    config = json.loads((out / "run.json").read_text())
    assert config["benchmark"] == "director" and config["samples"] == 2


def test_another_design_into_the_same_directory_is_refused(tiny, scenes, tmp_path):
    design = load_design(tiny)
    out = tmp_path / "run"
    run_study(design, ["sim"], out, scenes=scenes, progress=False)
    edited = design.model_copy(update={"seed": 99})
    with pytest.raises(StudyError, match="another design"):
        run_study(edited, ["sim"], out, scenes=scenes, progress=False)
    # refused before any scene is rendered into the run directory
    with pytest.raises(StudyError, match="another design"):
        run_study(edited, ["sim"], out, progress=False)
    assert not (out / "scenes").exists()


def test_a_model_no_batch_asks_is_refused(tmp_path, tiny, scenes):
    text = TINY.replace('name = "q"\n', 'name = "q"\nmodels = ["gpt-x"]\n')
    path = tmp_path / "d.toml"
    path.write_text(text, encoding="utf-8")
    # a bare sim would play gpt-x (unseen.commands.director_run.sim_in_every_place); a named one may not
    with pytest.raises(StudyError, match="model 'gpt-q'.*NAME=sim"):
        run_study(load_design(path), ["gpt-q=sim"], tmp_path / "r", scenes=scenes,
                  progress=False)


def test_missing_scene_images_are_a_clear_error(tmp_path, tiny, scenes):
    import shutil

    from unseen.evals.director.scenes.dataset import SceneSetError, load_scenes

    copy = tmp_path / "main"
    shutil.copytree(scenes / "main", copy)
    (copy / "images" / "main-001.png").unlink()
    with pytest.raises(SceneSetError, match="main-001.png is missing"):
        load_scenes(copy)
    with pytest.raises(SceneSetError, match="unseen data director"):
        load_scenes(tmp_path / "empty")


# --- the two-turn dialogue and reasoning traces over a real SDK -----------------------------

def _two_turns_over_vllm(tmp_path, scenes, fp, out):
    """``move/twoturn`` once per scene of the tiny set, against the fake server as vLLM."""
    design_file = tmp_path / "two.toml"
    design_file.write_text(TINY.split("[[batch]]")[0].replace("samples = 2", "samples = 1")
                           + '[[batch]]\nname = "t"\nconditions = ["move/twoturn"]\n',
                           encoding="utf-8")
    url = fp.openai_base_url.removesuffix("/v1")
    return run_study(load_design(design_file), [f"vllm:fake-model@{url}"], out, scenes=scenes,
                     progress=False, cache=False)


def test_two_turn_dialogue_over_vllm_keeps_reasoning(tmp_path, scenes, fp):
    from fake_providers import Reply as FakeReply

    def answer(rec):
        last = rec.body["messages"][-1]
        text = last["content"] if isinstance(last["content"], str) else last["content"][-1]["text"]
        body = '{"visible": [1]}' if '"visible"' in text.split("fields:")[-1] else '{"block": 4}'
        return FakeReply(text=f"```json\n{body}\n```", reasoning="The director sits opposite.")

    fp.script(*([answer] * 8))
    out = tmp_path / "run"
    res = _two_turns_over_vllm(tmp_path, scenes, fp, out)
    assert res.answered == 4, [json.loads(x)["steps"][-1]["reply"]["text"] for x in (out / "trajectories.jsonl").read_text().splitlines()]
    traj = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    t = traj[0]
    assert t["prediction"] == {"visible": [1], "block": 4}
    assert [s["reply"]["reasoning"] for s in t["steps"]] == ["The director sits opposite."] * 2
    # turn 2 carries turn 1's message (with the image) and reply, then Question B
    second = [r for r in fp.requests if len(r.body["messages"]) == 3][0].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0]["content"][0]["type"] == "image_url"
    assert second[1]["content"].startswith("```json")
    assert "Question B" in second[2]["content"] and "Question A" not in second[2]["content"]
    assert "Question B" not in second[0]["content"][-1]["text"]
    # reasoning effort medium by default, no output cap, the provider's temperature
    body = fp.requests[0].body
    assert body["reasoning_effort"] == "medium"
    assert "max_tokens" not in body and "temperature" not in body


def test_an_unreadable_first_turn_ends_the_dialogue(tmp_path, scenes, fp):
    from fake_providers import Reply as FakeReply

    fp.script(*([FakeReply(text="I think the director sees two blocks.")] * 4))
    out = tmp_path / "run"
    res = _two_turns_over_vllm(tmp_path, scenes, fp, out)
    assert res.answered == 0 and res.by_error == {"parse": 4}
    assert len(fp.requests) == 4  # no second turn was sent
    got = list(rows(out))
    assert all(not r["answered"] and "hidden" not in r for r in got)


def test_one_spec_for_two_models_is_refused(tmp_path, tiny, scenes):
    from unseen.api import RunError  # the run pipeline refuses it, for every benchmark

    with pytest.raises(RunError, match="given twice"):
        run_study(load_design(tiny), ["a=sim", "b=sim"], tmp_path / "r", scenes=scenes,
                  progress=False)


def test_each_batch_draws_its_own_replies(tiny, scenes, tmp_path):
    """The same condition in two batches is two samples (§3), in the simulator and the cache."""
    from unseen.engine.cache import request_key
    from unseen.engine.types import Message, Request, TextPart

    out = tmp_path / "run"
    run_study(load_design(tiny), ["gpt-x=sim"], out, scenes=scenes, progress=False)
    by = {}
    for r in map(json.loads, (out / "trajectories.jsonl").open()):
        if r["params"]["condition"] == "move":
            by.setdefault(r["params"]["batch"], {})[(r["instance_id"], r["sample"])] = r["prediction"]
    assert by["q"].keys() == by["c"].keys()
    assert any(by["q"][k] != by["c"][k] for k in by["q"])
    msg = [Message(role="user", parts=[TextPart(text="Which block?")])]
    keys = {request_key("openai", "m", Request(messages=msg, draw=d)) for d in ("", "batch=q", "batch=c")}
    assert len(keys) == 3
