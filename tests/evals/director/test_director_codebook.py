"""The codebook: reading a coder's reply, quotes, and Cohen's kappa."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unseen.evals.director.coding.agreement import cohen_kappa, kappa_interval
from unseen.evals.director.task.codebook import (
    CodesError,
    batch_prompt,
    codebook,
    parse_codes,
    quote_ok,
    schema,
)

TRACE = ("The director sits across the table. The partition hides block 7 from the director, "
         "so the director can see blocks 2, 5 and 9. Among the blocks the director can see, "
         "the largest is 5.")


def entry(item="item-a", **kw):
    base = {"id": item, "reading": "director_view",
            "reading_quote": "Among the blocks the director can see, the largest is 5.",
            "sees": "seen", "sees_quote": "the largest is 5.", "works_out": True,
            "works_out_quote": "The partition hides block 7 from the director"}
    return {**base, **kw}


def test_a_reply_with_prose_and_fences_is_read_and_its_codes_kept():
    text = "Here are the codes.\n```json\n" + json.dumps({"codes": [entry()]}) + "\n```\nDone."
    coded, refused = parse_codes(text, {"item-a": TRACE})
    assert refused == {}
    c = coded["item-a"]
    assert (c.reading, c.sees, c.works_out) == ("director_view", "seen", True)
    assert c.codes().model_dump() == {"reading": "director_view", "sees": "seen", "works_out": True}


def test_items_with_bad_codes_or_quotes_are_refused_with_their_reason_and_the_rest_kept():
    long_quote = " ".join(["word"] * 41)
    traces = {"a": TRACE, "b": TRACE, "c": TRACE, "d": TRACE + " " + long_quote, "e": TRACE,
              "f": TRACE}
    reply = {"codes": [entry("a"), entry("b", reading="biggest"), entry("f", works_out_quote=""),
                       entry("c", sees_quote="The director sees everything."),
                       entry("d", reading_quote=long_quote), entry("zzz")]}
    coded, refused = parse_codes(json.dumps(reply), traces)
    assert list(coded) == ["a"]
    assert "reading" in refused["b"]
    assert "sees_quote" in refused["c"]
    assert "40 words" in refused["d"]
    assert refused["e"] == "no code for this item"
    assert "works_out_quote" in refused["f"]  # an empty quote is refused
    assert "zzz" not in refused  # ids outside the batch are ignored


def test_the_last_codes_object_counts_and_a_reply_without_one_is_an_error():
    first = {"codes": [entry(reading="own_view")]}
    second = {"codes": [entry(reading="largest_digit")]}
    coded, _ = parse_codes(f"draft {json.dumps(first)} final {json.dumps(second)}", {"item-a": TRACE})
    assert coded["item-a"].reading == "largest_digit"
    with pytest.raises(CodesError):
        parse_codes('{"answer": 3}', {"item-a": TRACE})


def test_quotes_are_word_for_word_up_to_whitespace_and_quotation_marks():
    # Appendix E: "Each code comes with a quote of at most 40 words copied word for word from
    # the trace": an empty quote is none
    assert not quote_ok("", TRACE)
    assert not quote_ok('  ""  ', TRACE)
    assert quote_ok('"the largest is   5."', TRACE)
    assert not quote_ok("the largest is 9.", TRACE)
    assert quote_ok("director’s view", "the director's view is clear")  # typographic apostrophe
    assert not quote_ok("director's view ... clear", "the director's view is clear")


@settings(max_examples=200)
@given(st.text())
def test_any_reply_is_read_or_refused_with_codes_error(text):
    try:
        coded, refused = parse_codes(text, {"item-a": TRACE})
    except CodesError:
        return
    assert set(coded) | set(refused) == {"item-a"}


def test_the_prompt_shows_only_neutral_ids_traces_and_reply_or_block():
    items = [{"id": "item-a", "trace": TRACE, "reply": '{"block": 5}', "block": 5,
              "model": "secret-model", "scene": "main-001"}]
    main, second = batch_prompt(items), batch_prompt(items, second_pass=True)
    for text in (main, second):
        assert "item-a" in text and "secret-model" not in text and "main-001" not in text
    assert '"reply"' in main and '"chosen_block"' not in main
    assert '"chosen_block": 5' in second and '"reply"' not in second
    assert "follow the report" in codebook() and "follow the report" not in codebook(True)
    assert schema()["properties"]["codes"]["items"]["properties"]["reading"]["enum"][0] == "director_view"


def test_kappa_on_a_case_worked_by_hand():
    # p_o = 3/4; A: x .5, y .5; B: x .25, y .75; p_e = .125 + .375 = .5; kappa = .25/.5
    assert cohen_kappa("xxyy", "xyyy") == pytest.approx(0.5)
    assert cohen_kappa("xyxy", "xyxy") == 1.0
    assert cohen_kappa("xxxx", "xxxx") == 1.0  # one code for all: taken as full agreement
    assert cohen_kappa("xy", "yx") == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa("xx", "x")


def test_kappa_interval_brackets_the_estimate_and_is_seeded():
    a = list("xxyyxyxyyyxxyxyx" * 3)
    b = list("xxyyxyxyyxxxyxyy" * 3)
    lo, hi = kappa_interval(a, b, n_boot=500, seed=1)
    assert lo <= cohen_kappa(a, b) <= hi <= 1.0
    assert (lo, hi) == kappa_interval(a, b, n_boot=500, seed=1)


def test_the_codebook_quotes_each_request_exactly_as_the_prompts_state_it():
    # the issue: the codebook said "Please move the largest block", which no prompt says
    from unseen.evals.director.task.prompts import REQUESTS, build

    for second in (False, True):
        text = codebook(second)
        assert "Please" not in text
        for request in REQUESTS:
            first, line = build(request).parts["question_b"].rstrip("\n").split("\n")
            assert f"- {first.removeprefix('Question B: ')} {line}\n" in text
    assert '"move the largest block"' in codebook() and '"the largest block"' in codebook()
