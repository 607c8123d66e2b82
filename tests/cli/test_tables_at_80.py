"""Tables at 80 columns keep their headings whole (issue 28)."""

from __future__ import annotations


def test_power_table_headings_are_whole_at_80_columns(run_main, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_main(["director", "power", "quick", "--reps", "10"])
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    head = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    for word in ("comparison", "family", "true", "power", "coverage", "width", "methods"):
        assert f" {word}" in head, head
    assert "…" not in out
