"""What the progress bar says of who answers: a rule is no simulation."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from unseen.engine.runner import _who_answers


def backend(spec: str, simulated: bool) -> SimpleNamespace:
    return SimpleNamespace(spec=spec, simulated=simulated)


@pytest.mark.parametrize(("backends", "said"), [
    ([backend("sim", True)], " (simulated)"),
    ([backend("baseline:center", True)], " (rules)"),
    ([backend("sim", True), backend("baseline:prior", True)], " (simulated, rules)"),
    ([backend("openai:gpt-4o", False), backend("sim", True)], ""),  # a model answers too
    ([backend("human:ann", False)], ""),
])
def test_words_worked_by_hand(backends, said):
    assert _who_answers(backends) == said


def test_a_rule_run_says_rules_not_simulated(run_main, tmp_path):
    code, out, err = run_main(["run", "-s", "direct", "-b", "baseline:center", "--limit", "2",
                               "--out", str(tmp_path / "r")])
    assert code == 0, err
    assert "running (rules)" in out + err and "simulated" not in (out + err).lower()
