"""Terminal escapes: model and dataset text shown in a terminal keeps newlines and tabs and
loses every other control character (``engine/sanitize.py``): show (piped or on a terminal),
tables, error lines, the TUI; the HTML export carries no raw ESC or BEL byte."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from unseen.api import run as api_run
from unseen.engine.sanitize import SafeConsole, for_terminal
from unseen.views.show import show_instance

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # OSC 52: writes the clipboard
CLEAR = "\x1b[2J\x1b[H"  # CSI: clears the screen, cursor home
TITLE = "\x1b]0;pwned\x1b\\"  # OSC terminated by ST
# a right-to-left override (the file name reads "exe.png-OLTR"), zero-width space, joiner, BOM
INVISIBLE = "\u202eRTLO-gnp.exe\u202c\u200b\u200d\ufeff"
HOSTILE = f"left{INVISIBLE}{CLIPBOARD}{CLEAR}right\tTAB\nnext line\rover\x08\x00\x9b31m{TITLE}end"


def no_hostile_bytes(text: str) -> None:
    for seq in (CLIPBOARD, CLEAR, TITLE, "\x1b]", "\x1b[2J", "\x07", "\x00", "\x08", "\x9b",
                "\r", "\u202e", "\u202c", "\u200b", "\u200d", "\ufeff"):
        assert seq not in text, repr(seq)


def test_for_terminal_keeps_newlines_and_tabs_and_drops_the_rest_whole():
    assert for_terminal(HOSTILE) == "leftRTLO-gnp.exeright\tTAB\nnext lineover31mend"
    assert for_terminal("plain text\twith a tab\n") == "plain text\twith a tab\n"
    assert for_terminal("é 漢字 🙂") == "é 漢字 🙂"


def test_every_unicode_format_character_is_dropped():
    """The spelled-out class against the running Python's ``unicodedata``: every code point
    of category Cf (and every control but tab and newline) goes; letters either side stay."""
    import sys
    import unicodedata

    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if unicodedata.category(ch) == "Cf" or (unicodedata.category(ch) == "Cc"
                                                 and ch not in "\t\n\x1b"):
            assert for_terminal(f"a{ch}b") == "ab", hex(cp)
    assert for_terminal("naïve 👍🏽 ok") == "naïve 👍🏽 ok"


def strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in strings(k) + strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, sample_data) -> tuple[Path, str]:
    """A run whose reply, reasoning and dataset instruction carry escape sequences."""
    root = tmp_path_factory.mktemp("escapes")
    data = root / "data"
    shutil.copytree(sample_data, data)
    lines = (data / "instances.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["instruction"] = "Turn the valve" + CLIPBOARD + CLEAR
    lines[0] = json.dumps(first)
    (data / "instances.jsonl").write_text("\n".join(lines) + "\n")
    run_dir = root / "run"
    api_run(data, ["direct"], ["sim"], limit=1, out=run_dir, cache=False, progress=False)
    path = run_dir / "trajectories.jsonl"
    rec = json.loads(path.read_text())
    rec["steps"][0]["reply"]["text"] += HOSTILE
    rec["steps"][0]["reply"]["reasoning"] = HOSTILE
    rec["strategy"] = "direct" + CLEAR
    path.write_text(json.dumps(rec) + "\n")
    return run_dir, rec["instance_id"]


@pytest.mark.parametrize("terminal", [False, True])
def test_show_passes_no_escape_sequence_piped_or_on_a_terminal(hostile_run, terminal):
    """The issue: `show` passed a reply's ESC ]52 and ESC [2J to the terminal, piped or not."""
    run_dir, iid = hostile_run
    buf = io.StringIO()
    console = SafeConsole(file=buf, force_terminal=terminal, width=120, color_system="standard")
    show_instance(console, run_dir, iid, full=True, images=False)
    text = buf.getvalue()
    no_hostile_bytes(text)
    assert "leftRTLO-gnp.exeright" in text and "next line" in text and "Turn the valve" in text
    if terminal:
        assert "\x1b[" in text  # rich's own colours still reach a terminal


def test_the_cli_show_summary_compare_and_errors_are_clean(hostile_run, run_main, tmp_path):
    run_dir, iid = hostile_run
    for argv in (["show", str(run_dir)], ["show", str(run_dir), iid, "--full"],
                 ["compare", str(run_dir)], ["compare", str(run_dir), "--format", "md"],
                 ["compare", str(run_dir), "--format", "csv"]):
        code, out, err = run_main(argv)
        assert code == 0, err
        no_hostile_bytes(out + err)
    data = tmp_path / "d"
    data.mkdir()
    (data / "instances.jsonl").write_text(json.dumps(
        {"id": "a", "image": f"x{CLEAR}.png", "instruction": "i", "box": [1, 2, 3, 4]}) + "\n")
    code, out, err = run_main(["run", "--data", str(data), "--out", str(tmp_path / "r")])
    assert code == 2 and "image not found" in err
    no_hostile_bytes(out + err)


def test_the_html_export_has_no_raw_esc_or_bel(hostile_run, run_main, tmp_path):
    run_dir, _ = hostile_run
    code, _, err = run_main(["export", str(run_dir), "--html", str(tmp_path / "h")])
    assert code == 0, err
    page = (tmp_path / "h" / "index.html").read_bytes()
    assert b"\x1b" not in page and b"\x07" not in page and b"Turn the valve" in page
    for ch in "\u202e\u200b\u200d\ufeff":
        assert ch.encode() not in page


def test_the_tui_reads_records_clean(hostile_run):
    from unseen.views.tui import build_index

    run_dir, _ = hostile_run
    index = build_index([run_dir])
    (entry,) = index.entries
    rec = index.read(entry)
    step = rec["steps"][0]
    assert "leftRTLO-gnp.exeright" in step["reply"]["text"]
    no_hostile_bytes("".join(strings(rec)))
    assert "\x1b" not in entry.strategy
    assert "\x1b" not in index.runs[0].instances[entry.instance_id]["instruction"]
