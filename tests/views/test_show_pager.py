"""``show`` pages on a terminal as git does, and says when its run is still going (issue 28)."""

from __future__ import annotations

import io
import json
import shlex
import sys

import pytest

from unseen.commands import pager
from unseen.engine.lock import hold, holder
from unseen.engine.sanitize import SafeConsole


@pytest.fixture
def tty(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)


def catcher(tmp_path) -> str:
    """A pager command that keeps what it is given in ``tmp_path/paged``."""
    code = f"import sys; open({str(tmp_path / 'paged')!r}, 'w').write(sys.stdin.read())"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def test_a_terminal_gets_the_text_through_the_pager(tmp_path, monkeypatch, tty):
    monkeypatch.setenv("PAGER", catcher(tmp_path))
    monkeypatch.delenv("UNSEEN_PAGER", raising=False)
    screen = io.StringIO()
    console = SafeConsole(file=screen, force_terminal=True, width=80)
    with pager.paged(console):
        for i in range(300):
            console.print(f"line {i}")
    assert screen.getvalue() == ""  # nothing printed past the pager
    paged = (tmp_path / "paged").read_text().splitlines()
    assert len(paged) == 300 and "\x1b[" in paged[299]  # colours kept, as less -R shows them


@pytest.mark.parametrize("setting", ["no-pager", "cat", "", "no-such-pager-anywhere"])
def test_no_pager_cat_empty_or_missing_print_directly(tmp_path, monkeypatch, tty, setting):
    monkeypatch.delenv("UNSEEN_PAGER", raising=False)
    monkeypatch.setenv("PAGER", catcher(tmp_path) if setting == "no-pager" else setting)
    screen = io.StringIO()
    console = SafeConsole(file=screen, force_terminal=True, width=80)
    with pager.paged(console, enabled=setting != "no-pager"):
        console.print("hello")
    assert "hello" in screen.getvalue() and not (tmp_path / "paged").exists()


def test_never_a_pager_when_stdout_is_no_terminal(tmp_path, monkeypatch, sample_data,
                                                   run_main):
    monkeypatch.setenv("PAGER", catcher(tmp_path))
    run = tmp_path / "r"
    assert run_main(["run", "--data", str(sample_data), "-s", "direct", "--limit", "2",
                     "--out", str(run)])[0] == 0
    code, out, err = run_main(["show", str(run)])
    assert code == 0 and "direct" in out, err
    assert not (tmp_path / "paged").exists() and "still running" not in out


def test_show_says_a_run_is_still_running(tmp_path, sample_data, run_main):
    run = tmp_path / "r"
    assert run_main(["run", "--data", str(sample_data), "-s", "direct", "--limit", "2",
                     "--out", str(run)])[0] == 0
    assert holder(run) is None
    with hold(run, "unseen run"):
        assert "(unseen run)" in holder(run)
        code, out, err = run_main(["show", str(run)])
        assert code == 0, err
        assert out.startswith("still running: pid ") and "(unseen run)" in out.splitlines()[0]
        first = (run / "trajectories.jsonl").read_text().splitlines()[0]
        iid = json.loads(first)["instance_id"]
        code, out, _ = run_main(["show", str(run), iid, "--no-images"])
        assert code == 0 and out.startswith("still running: ")
    assert holder(run) is None  # released: nothing said any more
