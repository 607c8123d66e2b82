"""``unseen show``'s summary at 80 and 120 columns (issue 18): columns picked by the width, so
no heading or cell is cut to ``s…``; ids cut to their end where the full ones leave no room,
and any unique part of an id opens the instance.

One run of the bundled sample set (its ids are 44 characters long): three strategies on two
simulated respondents, six instances.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

import unseen
from unseen.views.common import fold_label
from unseen.views.show import show_instance, show_summary

CELL = re.compile(r"^(—|\d+\.\d( \(\d+✗\))?|✗ [a-z_,]+)$")  # Dist×100, or why unanswered
STRATEGIES = ["direct", "spoe:T=3", "cot"]
MODELS = ["sim-default", "sim-noisy,unparseable=0.5"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout") / "r"
    unseen.run(None, STRATEGIES, ["sim", "sim:noisy,unparseable=0.5"], out=out, limit=6,
               cache=False, progress=False)
    return out


def summary(run_dir, width: int) -> str:
    c = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    show_summary(c, run_dir)
    return c.export_text()


def instance_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The instance table's heading cells and body rows."""
    lines = text[text.index("instances, worst first"):].splitlines()
    head = next(line for line in lines if line.startswith("┃"))
    rows = [line for line in lines if line.startswith("│")]
    def cells(line: str) -> list[str]:
        return [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
    return cells(head), [cells(r) for r in rows]


@pytest.mark.parametrize("width", [80, 120])
def test_the_summary_fits_and_cuts_no_cell(run_dir, width):
    text = summary(run_dir, width)
    assert max(len(line) for line in text.splitlines()) <= width
    head, rows = instance_rows(text)
    assert len(rows) == 6
    n = len(STRATEGIES) * len(MODELS)
    assert "left out at this width" not in text[text.index("instances, worst"):]
    for row in rows:
        assert all(CELL.match(c) for c in row[1:1 + n]), row  # no value cut to "4…"
        assert row[0].startswith(("…", "100000-"))
    if head[1] == "A":  # lettered headings: the legend names each column in full
        legend = " ".join(text.split())
        for m in MODELS:
            for s in STRATEGIES:
                assert f"{m} (sim) · {fold_label(s)}" in legend  # named as the tables name it
    assert not re.search(r"\b\w{1,3}…", " ".join(head))  # no heading cut to "s…"


def test_a_rule_is_named_as_the_tables_name_it(tmp_path):
    """Headings, legend and the unanswered table say ``center (rule)``, never the backend."""
    out = tmp_path / "r"
    unseen.run(None, ["direct"], ["baseline:center"], out=out, limit=2, cache=False,
               progress=False)
    unseen.run(None, ["direct", "spoe:T=3"], ["sim:noisy,unparseable=1.0"], out=out,
               limit=2, cache=False, progress=False)
    for width in (80, 200):
        text = summary(out, width)
        instances = text[text.index("instances, worst"):]
        assert "center (rule)" in " ".join(instances.split()), instances
        assert "baseline-center" not in text
        reasons = text[text.index("unanswered, by reason"):text.index("instances, worst")]
        assert "(sim)" in reasons, reasons


def test_at_120_columns_the_instructions_come_too(run_dir):
    head, rows = instance_rows(summary(run_dir, 120))
    assert head[-1] == "instruction"
    assert all(r[-1] for r in rows)


def test_at_80_columns_ids_are_cut_to_their_end_and_still_open(run_dir):
    head, rows = instance_rows(summary(run_dir, 80))
    assert head[1] == "A"
    short = rows[0][0]
    assert short.startswith("…") and len(short) < 44
    c = Console(record=True, width=100, file=io.StringIO(), color_system=None)
    show_instance(c, run_dir, short, strategy="direct", model="sim-default", images=False)
    text = c.export_text()
    assert short[1:] in text and "task " in text
