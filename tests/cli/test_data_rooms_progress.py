"""``data rooms`` shows a bar on stderr while it renders (issue 28); piped, nothing but its line."""

from __future__ import annotations

import io

from rich.console import Console

from unseen.evals.scenefunri.data.rooms import visits


def test_the_bar_goes_to_stderr_and_counts_rooms(tmp_path, monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr("rich.console.Console",
                        lambda stderr=False: Console(file=screen, force_terminal=True, width=80))
    ids = visits.write_rooms(tmp_path / "v", n_rooms=2, size=(160, 120), workers=1,
                             progress=True)
    assert ids == ["100000", "100001"]
    assert "rendering rooms" in screen.getvalue() and "100%" in screen.getvalue()


def test_piped_the_command_prints_its_line_alone(tmp_path, run_main):
    code, out, err = run_main(["data", "rooms", "--out", str(tmp_path / "v"), "--n", "1",
                               "--size", "160x120"])
    assert code == 0 and out.startswith("wrote 1 visits") and err == ""
