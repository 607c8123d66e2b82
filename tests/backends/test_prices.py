"""The price table: data with a date and a source per entry, matched like the profiles (the
first pattern found in the lower-cased name after its last ``/``, a user's file first); a
model no entry knows has no price; cost = uncached input × input + cached × cached_input +
output (reasoning included) × output, per million tokens, less the batch discount."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unseen.backends import prices
from unseen.backends.prices import Price, built_in, cost, parse_prices, price_for, usage_of
from unseen.engine.errors import UserFileError
from unseen.engine.types import Usage

GOOD = ('[[price]]\npattern = "acme-vision"\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n'
        'batch_discount = 0.5\ndate = 2026-11-30\nsource = "our contract, 2026-11"\n')


def test_the_built_in_table_is_valid_and_every_entry_has_a_date_and_a_source():
    table = built_in()
    assert len(table) >= 25
    for p in table:
        assert p.source.strip() and p.date and p.origin == "built-in"
        assert all(math.isfinite(x) and x >= 0 for x in (p.input, p.cached_input, p.output))
        assert p.cached_input <= p.input and 0 <= p.batch_discount < 1


@pytest.mark.parametrize("model, rates", [
    ("gpt-4o", (2.50, 1.25, 10.00)), ("gpt-4o-2024-08-06", (2.50, 1.25, 10.00)),
    ("gpt-4o-mini", (0.15, 0.075, 0.60)), ("openai/gpt-4.1", (2.00, 0.50, 8.00)),
    ("gpt-5", (1.25, 0.125, 10.00)), ("gpt-5-nano", (0.05, 0.005, 0.40)),
    ("gpt-5.5", (5.00, 0.50, 30.00)), ("gpt-5.6-luna", (0.20, 0.02, 1.20)),
    ("gpt-6-astra", (10.00, 1.00, 50.00)), ("gpt-6-sol", (2.00, 0.20, 10.00)),
    ("o3", (2.00, 0.50, 8.00)), ("gemini-2.5-flash", (0.30, 0.03, 2.50)),
    ("gemini-2.5-flash-lite", (0.10, 0.01, 0.40)), ("gemini-2.5-pro", (1.25, 0.125, 10.00)),
    ("gemini-3-flash-preview", (0.50, 0.05, 3.00)), ("grok-4.6", (2.00, 0.50, 6.00)),
])
def test_each_model_gets_its_own_familys_price(model, rates):
    p = price_for(model)
    assert p is not None, model
    assert (p.input, p.cached_input, p.output) == rates


@pytest.mark.parametrize("model", ["Qwen/Qwen3-VL-8B-Instruct", "acme-vision-7b", "sim-default",
                                   "gpt-4o-realtime-preview", "grok-4-fast", "gemini-9-ultra"])
def test_a_model_no_entry_knows_has_no_price(model):
    assert price_for(model) is None


def test_cost_bills_cached_input_at_its_rate_reasoning_as_output_and_the_batch_discount():
    p = Price(pattern="x", input=2.0, cached_input=0.5, output=8.0, batch_discount=0.5,
              date="2026-12-01", source="test")
    u = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=250_000,
              reasoning_tokens=200_000)  # the reasoning is part of the output
    assert cost(u, p) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.25 * 8.0)
    assert cost(u, p, batch=True) == pytest.approx((1.2 + 0.2 + 2.0) / 2)
    assert cost(Usage(), p) == 0.0
    # cached tokens never count for more than the input they are part of
    assert cost(Usage(input_tokens=10, cached_input_tokens=99), p) == pytest.approx(10 * 0.5e-6)


def test_a_journal_usage_without_cached_tokens_reads_as_none_cached():
    u = usage_of({"input_tokens": 5, "output_tokens": 3, "reasoning_tokens": 1})
    assert u == Usage(input_tokens=5, output_tokens=3, reasoning_tokens=1)
    assert usage_of(None) == Usage() and usage_of({"input_tokens": "x"}) == Usage()


def test_a_user_price_file_comes_first_and_can_override_a_built_in(tmp_path, monkeypatch):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD + '\n[[price]]\npattern = "^gpt-4o$"\ninput = 9.0\noutput = 9.0\n'
                    'date = "2026-12-01"\nsource = "negotiated"\n', encoding="utf-8")
    mine = price_for("acme-vision-7b", path)
    assert (mine.input, mine.cached_input, mine.output, mine.batch_discount) == (1.0, 0.1, 4.0, 0.5)
    assert mine.origin == str(path) and mine.date == "2026-11-30"
    over = price_for("gpt-4o", path)
    assert over.input == 9.0 and over.cached_input == 9.0  # omitted: no cached discount
    assert price_for("gpt-4o").input == 2.50  # without the file: the built-in one
    monkeypatch.setenv(prices.PRICES_ENV, str(path))
    assert price_for("acme-vision-7b").origin == str(path)


def test_the_prices_command_lists_the_table_and_says_when_a_model_has_none(run_main, tmp_path):
    code, out, err = run_main(["prices"])
    assert code == 0 and "gpt-4o" in out
    code, out, err = run_main(["prices", "gemini-2.5-flash"])
    assert code == 0 and "$0.30/$0.03/$2.50" in out
    code, out, err = run_main(["prices", "acme-vision-7b"])
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "no price for acme-vision-7b" in line and "--prices" in line
    path = tmp_path / "mine.toml"
    path.write_text(GOOD, encoding="utf-8")
    code, out, err = run_main(["prices", "acme-vision-7b", "--prices", str(path)])
    assert code == 0 and "our contract" in out


@pytest.mark.parametrize("text, why", [
    ('[[price]]\ninput = 1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n', "pattern"),
    ('[[price]]\npattern = "(x"\ninput = 1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n',
     "regular expression"),
    ('[[price]]\npattern = "x"\ninput = -1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n',
     "input"),
    ('[[price]]\npattern = "x"\ninput = "cheap"\noutput = 1\ndate = 2026-01-01\nsource = "s"\n',
     "number"),
    ('[[price]]\npattern = "x"\ninput = inf\noutput = 1\ndate = 2026-01-01\nsource = "s"\n',
     "finite"),
    ('[[price]]\npattern = "x"\ninput = 1\noutput = 1\ndate = "last week"\nsource = "s"\n',
     "date"),
    ('[[price]]\npattern = "x"\ninput = 1\noutput = 1\ndate = 2026-01-01\n', "source"),
    ('[[price]]\npattern = "x"\ninput = 1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n'
     'batch_discount = 2\n', "batch_discount"),
    ('[[price]]\npattern = "x"\ninput = 1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n'
     'currency = "EUR"\n', "currency"),
    ('[[price]]\npattern = "x"\ninput = 1\noutput = 1\ndate = 2026-01-01\nsource = "s"\n'
     'origin = "elsewhere"\n', "origin"),
    ('price = [1, 2]\n', "[[price]] table"),
    ('[model]\npattern = "x"\n', "unknown table"),
    ("pattern = ", "not valid TOML"),
    ("", "no [[price]]"),
])
def test_a_bad_price_file_is_one_line_naming_it(tmp_path, run_main, text, why):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(["prices", "--prices", str(path)])
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert str(path) in line and why in line


def test_a_missing_price_file_is_one_line(tmp_path, run_main):
    code, out, err = run_main(["prices", "--prices", str(tmp_path / "nope.toml")])
    assert code == 2 and "nope.toml" in err and "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_the_price_reader_never_fails_otherwise(text):
    try:
        parse_prices(text, "f.toml")
    except UserFileError as exc:
        assert str(exc).startswith("f.toml")


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["pattern", "input", "cached_input", "output",
                                        "batch_discount", "date", "source", "note"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-10, 10**20),
                                 st.floats(allow_nan=True), st.text(max_size=12),
                                 st.dates().map(str)), max_size=8))
def test_the_price_reader_never_fails_otherwise_on_tables_of_any_values(entry):
    import json

    def toml_value(v):
        if v is None:
            return None
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") \
                if math.isinf(v) else repr(v)
        if isinstance(v, int):
            return str(v)
        return json.dumps(v)

    lines = [f"{k} = {toml_value(v)}" for k, v in entry.items() if v is not None]
    try:
        parse_prices("[[price]]\n" + "\n".join(lines) + "\n", "f.toml")
    except UserFileError as exc:
        assert str(exc).startswith("f.toml")
