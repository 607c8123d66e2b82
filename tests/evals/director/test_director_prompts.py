"""Director Task prompts: byte identity of every condition, insert lengths, the CLI."""

import json

import pytest

from unseen.evals.director.task.prompts import (
    INSERTS,
    PARTS,
    QUESTIONS,
    REQUESTS,
    Condition,
    PromptError,
    build,
    check_identity,
    conditions,
    insert_text,
    messages,
    pad_to,
    parse_condition,
    templates,
)


def test_conditions_cover_every_combination():
    names = conditions()
    assert len(names) == len(set(names)) == len(REQUESTS) * len(QUESTIONS) * (len(INSERTS) + 1)
    assert "move" in names and "mean/novis+combined" in names and "move/vis" not in names
    assert parse_condition("move/vis") == parse_condition("move") == Condition("move")


@pytest.mark.parametrize("name", conditions())
def test_byte_identity_against_base_of_same_request(name):
    prompt = build(name)
    base = build(prompt.condition.request)
    differ = check_identity(base, prompt)
    assert set(differ) <= set(prompt.changed)
    kept = [p for p in PARTS if p not in prompt.changed]
    assert ("".join(base.parts[p] for p in kept).encode()
            == "".join(prompt.parts[p] for p in kept).encode())
    assert prompt.chars == len("".join(prompt.turns))


def test_check_identity_raises_on_stray_change():
    base, variant = build("move"), build("move/novis")
    variant.parts["intro"] = variant.parts["intro"].replace("table", "desk", 1)
    with pytest.raises(PromptError, match="outside its changed parts: intro"):
        check_identity(base, variant)
    # another request's base: Question B may differ, nothing else
    assert check_identity(build("mean"), build("move")) == ["question_b"]


def test_insert_lengths_equal():
    t = templates()
    combined, knowledge, reference = (insert_text(k) for k in ("combined", "knowledge", "reference"))
    assert len(knowledge) == len(reference) == len(combined)
    assert knowledge.startswith(t["insert.knowledge"] + " ")
    assert reference.startswith(t["insert.reference"] + " ")
    assert reference.startswith("The director’s words refer only to blocks the director can see.")
    assert insert_text("padding") == t["pad.knowledge"]
    assert not knowledge.endswith(" ") and not reference.endswith(" ")
    # the inserted paragraph: before the numbers line, a blank line on each side
    text = build("move+knowledge").text
    assert f"\n\n{knowledge}\n\nEach block has one number" in text


@pytest.mark.parametrize("target", range(27, 120))
def test_pad_to_is_exact(target):
    out = pad_to("The director does not know.", "Some neutral words here.", target)
    assert len(out) == target and not out.endswith(" ")
    assert out.startswith("The director does not know.")
    with pytest.raises(PromptError):
        pad_to("x" * 10, "pad", 5)


def test_two_turn_layout():
    p = build("move/twoturn")
    assert len(p.turns) == 2
    assert p.fields_per_turn == [["visible"], ["block"]]
    assert "Question A" in p.turns[0] and "Question B" not in p.turns[0]
    assert p.turns[1].startswith("Question B") and '"visible"' not in p.turns[1]
    msgs = messages(p, ['{"visible": [3, 7]}'])
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[0]["content"] == p.turns[0] and msgs[2]["content"] == p.turns[1]
    with pytest.raises(PromptError):
        messages(p)
    assert build("move").fields_per_turn == [["visible", "block"]]
    assert build("move/after").fields_per_turn == [["block", "visible"]]
    assert build("move/count").fields == ["count", "block"]
    assert build("move/know").fields == ["known", "block"]


def test_novis_keeps_label_question_b():
    p = build("move/novis")
    assert "Question A" not in p.text and "Question B:" in p.text
    assert p.fields_per_turn == [["block"]]


def test_stated_lists_visible_ascending():
    p = build("move/stated", {"id": "s1", "hidden_digit": 4, "visible_digits": [9, 2, 5]})
    assert "The director sees only the blocks with numbers 2, 5 and 9." in p.text
    assert "with numbers 3 and 7." in build("move/stated").text  # placeholder example


# --- the lengths the paper states (Appendix A, "Variants") --------------------------------
# Table 1's exact text is not in the paper, so the wording is ours; every count it states holds.


def test_paper_move_and_mean_lengths():
    # "move has 850 characters against 854 for mean, and each rewording of its second line
    # has 871."
    assert build("move").chars == 850
    assert build("mean").chars == 854
    assert build("move-want").chars == build("move-will").chars == 871
    # a rewording changes only move's second line
    for name in ("move-want", "move-will"):
        assert check_identity(build("move"), build(name)) == ["question_b"]
        assert build(name).parts["question_b"].split("\n")[0] == build("move").parts["question_b"].split("\n")[0]
    assert "Which number does the director want you to move?" in build("move-want").text
    assert "Which number is on the block that you will move?" in build("move-will").text


@pytest.mark.parametrize("request_", REQUESTS)
def test_paper_without_the_question_is_99_shorter(request_):
    # "Without the visibility question the prompt is 99 characters shorter, and the label
    # “Question B” stays."
    with_q, without = build(request_), build(f"{request_}/novis")
    assert with_q.chars - without.chars == 99
    assert "Question B" in without.text and "Question A" not in without.text


def test_paper_stated_line_lengths():
    # "With the visible blocks stated, the line lists the scene's visible blocks in ascending
    # order. It has 55 characters when the director sees two blocks, as many as the
    # visibility question, and 58 with three."
    question = templates()["question.vis"]
    assert len(question) == 55
    two = build("move/stated", {"id": "a", "visible_digits": [8, 1]})
    three = build("move/stated", {"id": "b", "visible_digits": [9, 2, 5]})
    assert len(two.parts["question_a"].rstrip("\n")) == 55 == len(question)
    assert len(three.parts["question_a"].rstrip("\n")) == 58
    assert two.parts["question_a"].rstrip("\n").endswith("1 and 8.")
    assert three.parts["question_a"].rstrip("\n").endswith("2, 5 and 9.")
    # the line stands where the question stood: same length as the base with two blocks
    assert two.chars == build("move/novis").chars + 56


def test_paper_insert_lengths():
    # "The combined constraint has 135 characters and the padding sentence 66. The knowledge
    # constraint, “The director does not know about the blocks the director cannot see.”, is
    # padded to the combined constraint's length with the padding sentence. The reference
    # constraint, “The director’s words refer only to blocks the director can see.”, is
    # padded with “The picture was drawn by a computer program written just for this task.”"
    t = templates()
    assert len(insert_text("combined")) == 135
    assert len(insert_text("padding")) == 66
    assert t["insert.knowledge"] == "The director does not know about the blocks the director cannot see."
    assert t["insert.reference"] == "The director’s words refer only to blocks the director can see."
    assert t["pad.reference"] == "The picture was drawn by a computer program written just for this task."
    # each clause and its whole padding sentence make exactly the combined constraint's length
    assert insert_text("knowledge") == t["insert.knowledge"] + " " + t["pad.knowledge"]
    assert insert_text("reference") == t["insert.reference"] + " " + t["pad.reference"]
    assert len(insert_text("knowledge")) == len(insert_text("reference")) == 135
    # "An inserted paragraph stands before the line on block numbers, with a blank line on
    # each side."
    for kind in INSERTS:
        assert build(f"move+{kind}").chars == 850 + len(insert_text(kind)) + 2


@pytest.mark.parametrize("bad, word", [("jump", "request"), ("move/foo", "question"),
                                       ("move+bar", "insert"), ("move/vis/x", "bad condition")])
def test_unknown_parts(bad, word):
    with pytest.raises(PromptError, match=word):
        parse_condition(bad)


def test_cli_json_lists_every_condition(run_main):
    code, out, err = run_main(["director", "prompts", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [r["condition"] for r in rows] == conditions()
    for r in rows:
        assert r["chars"] == len("".join(r["turns"]))
    assert next(r for r in rows if r["condition"] == "move/twoturn")["turns"][1].startswith("Question B")


def test_cli_scene_and_errors(run_main, tmp_path):
    scenes = tmp_path / "scenes.jsonl"
    scenes.write_text(json.dumps({"id": "main-0001", "hidden_digit": 8, "visible_digits": [6, 1]})
                      + "\n", encoding="utf-8")
    code, out, err = run_main(["director", "prompts", "--scene", "main-0001", "--scenes",
                               str(scenes), "-c", "move/stated", "--format", "json"])
    assert code == 0, err
    assert "with numbers 1 and 6." in json.loads(out)[0]["turns"][0]
    code, out, err = run_main(["director", "prompts", "-c", "move/nope"])
    assert code == 2 and "unknown question 'nope'" in err
    code, out, err = run_main(["director", "prompts", "--scene", "x", "--scenes", str(scenes)])
    assert code == 2 and "no scene 'x'" in err
    code, out, err = run_main(["director", "prompts"])
    assert code == 0 and "=== move/twoturn" in out and "--- turn 2" in out
