"""Reading a Director Task reply: the last JSON object with the asked fields, of the asked types."""

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from unseen.evals.director.task.parse import parse_reply

MOVE = {"block": "int"}
BOTH = {"visible": "ints", "block": "int"}


@pytest.mark.parametrize("text, fields, expected", [
    ('{"block": 3}', MOVE, {"block": 3}),
    ('```json\n{"block": 3}\n```', MOVE, {"block": 3}),
    ('I think the answer is this.\n{"block": 7}\nThanks!', MOVE, {"block": 7}),
    ('{"block": "3"}', MOVE, {"block": 3}),  # a number in quotes is accepted
    ('{"block": " 4 "}', MOVE, {"block": 4}),
    ('{"block": 3.0}', MOVE, {"block": 3}),  # a whole float is an integer, as in JSON Schema
    ('{"block": "3.0"}', MOVE, {"block": 3}),
    ('{"block": -2}', MOVE, {"block": -2}),  # a number not on the table is kept
    ('{"block": 99, "why": "largest"}', MOVE, {"block": 99}),  # extra fields ignored
    ('{"answer": {"block": 5}}', MOVE, {"block": 5}),  # nested
    ('[{"block": 5}]', MOVE, {"block": 5}),
    ('{"visible": [1, "2", 4], "block": 2}', BOTH, {"visible": [1, 2, 4], "block": 2}),
    ('{"visible": [], "block": 2}', BOTH, {"visible": [], "block": 2}),
    ('{"block": 1}\n...on reflection:\n{"block": 6}', MOVE, {"block": 6}),  # the last counts
    ('{"block": 1} then {"block": true} and {"note": 2}', MOVE, {"block": 1}),  # last VALID
    ('```json\n{"block": 1}\n```\nActually: {"block": 2}', MOVE, {"block": 2}),  # after a fence
    # the enclosing answer wins over an object nested in it (issue 23: "the last top-level
    # object with the asked fields wins")
    ('{"block": 2, "x": {"block": 8}}', MOVE, {"block": 2}),
    ('{"block": 1,}\n{"block": 4', MOVE, None),  # broken JSON
])
def test_accepted_and_last(text, fields, expected):
    assert parse_reply(text, fields) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "Block 3.", "The answer is 3", '{"Block": 3}', '{"block": true}', '{"block": null}',
    '{"block": 3.5}', '{"block": "three"}', '{"block": "3a"}', '{"block": "1e3"}', '{"block": "1_0"}',
    '{"block": "\u0663"}', '{"block": [3]}', '{"block": NaN}', '{"block": Infinity}',
    "{'block': 3}", '{"visible": [1, 2], "block": "x"}',
])
def test_unanswered(text):
    assert parse_reply(text, MOVE) is None


@pytest.mark.parametrize("text", [
    '{"visible": 1, "block": 2}', '{"visible": [1, true], "block": 2}', '{"visible": [[1]], "block": 2}',
    '{"visible": [1.5], "block": 2}', '{"block": 2}', '{"visible": [1, 2]}',
])
def test_unanswered_ints(text):
    assert parse_reply(text, BOTH) is None


@pytest.mark.parametrize("text", [None, 3, b'{"block": 3}', ["{}"]])
def test_not_text(text):
    assert parse_reply(text, MOVE) is None


@pytest.mark.parametrize("fields", [{}, {"block": "float"}, {"block": int}])
def test_bad_fields(fields):
    with pytest.raises(ValueError):
        parse_reply('{"block": 3}', fields)


def test_answer_after_many_braces():
    text = "{ x } [ " * 3000 + '{"block": 4}' + " {not json} " * 10
    assert parse_reply(text, MOVE) == {"block": 4}


def test_deep_nesting_does_not_raise():
    assert parse_reply("[" * 100_000 + '{"block": 1}', MOVE) == {"block": 1}
    assert parse_reply('{"a":' * 50_000 + '{"block": 1}' + "}" * 50_000, MOVE) == {"block": 1}
    # bounded work when the answer is followed by thousands of unclosed braces: no error
    assert parse_reply('{"block": 1}' + '{"a":' * 50_000, MOVE) in (None, {"block": 1})


_JSONISH = st.text(alphabet='{}[]":,.-+0123456789 \nblocktruefalsnvisi`\\', max_size=300)


@given(st.one_of(st.text(max_size=400), _JSONISH))
def test_never_raises(text):
    out = parse_reply(text, BOTH)
    assert out is None or (isinstance(out["block"], int) and all(isinstance(v, int) for v in out["visible"]))
    out = parse_reply(text, MOVE)
    assert out is None or type(out["block"]) is int


_INT = st.integers(-10**6, 10**6)


def _object(block, visible, quote):
    """A valid answer object, its numbers written bare or in quotes."""
    q = (lambda n: str(n)) if quote else (lambda n: n)
    return json.dumps({"visible": [q(v) for v in visible], "block": q(block)})


@given(st.text(max_size=200), st.text(max_size=200), _INT, st.lists(_INT, max_size=5), st.booleans())
def test_object_found_in_arbitrary_prose(prefix, suffix, block, visible, quote):
    assume(parse_reply(suffix, BOTH) is None)  # the suffix holds no later answer of its own
    text = prefix + _object(block, visible, quote) + suffix
    assert parse_reply(text, BOTH) == {"visible": visible, "block": block}


@given(st.lists(st.tuples(st.text(max_size=60), _INT, st.lists(_INT, max_size=3), st.booleans()),
                min_size=2, max_size=5),
       st.text(max_size=60))
def test_last_valid_object_wins(parts, tail):
    assume(parse_reply(tail, BOTH) is None)
    text = "".join(prose + _object(b, v, q) for prose, b, v, q in parts)
    text += '\n{"visible": [1], "block": "none"}' + tail  # a later, invalid object is skipped
    _, block, visible, _ = parts[-1]
    assert parse_reply(text, BOTH) == {"visible": visible, "block": block}
