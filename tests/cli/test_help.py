"""Every command's ``--help`` reads as wrapped paragraphs with an example (``unseen/cli_help.py``).

A break the terminal made falls where the next word no longer fits; a break the docstring
made (the bug: "(direct with" / "the basic, hidden, ...") falls where it would have fit.
"""

from __future__ import annotations

import re
import shlex

import pytest
import typer.main

from unseen import cli
from unseen.cli_help import EXAMPLES, paragraphs


def command_paths() -> list[tuple[str, ...]]:
    """Every group and command of the CLI, the root first."""
    paths: list[tuple[str, ...]] = []

    def walk(cmd, path):
        paths.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(cli.app), ())
    return paths


PATHS = command_paths()


def description(text: str) -> list[str]:
    """The help's prose: the lines between the usage line and the first panel."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")), len(lines))
    return [line.rstrip() for line in lines[start:end]]


def hard_breaks(lines: list[str], width: int) -> list[str]:
    """Pairs of consecutive prose lines where the next line's first word would have fitted:
    a line break that came from the source, not from wrapping."""
    found = []
    for a, b in zip(lines, lines[1:], strict=False):
        if not a.strip() or not b.strip() or b.lstrip().startswith("$ ") or \
                a.strip().startswith(("Example:", "Examples:")):
            continue
        room = width - 2  # typer pads the text by one column on each side
        if len(a.strip()) + 1 + len(b.split()[0]) <= room:
            found.append(f"{a.strip()!r} / {b.strip()!r}")
    return found


def command_cells(text: str) -> list[tuple[str, str]]:
    """(name, text) rows of a Commands panel, continuation lines joined to their row."""
    rows: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("╭─ Commands"):
            inside = True
            continue
        if inside and line.startswith("╰"):
            break
        if inside:
            m = re.match(r"│ (\S*)\s+(.*?)\s*│$", line)
            if m and m.group(1):
                rows.append([m.group(1), m.group(2)])
            elif m:
                rows[-1].append(m.group(2))
    return [(r[0], "\n".join(r[1:])) for r in rows]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "unseen")
def test_help_is_wrapped_paragraphs_with_an_example(path, width, run_main, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run_main([*path, "--help"])
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= width
    assert len(out.splitlines()) < 90  # `run --help` was 186 lines at 80 columns
    prose = description(out)
    assert not hard_breaks(prose, width), hard_breaks(prose, width)
    text = "\n".join(prose)
    assert re.search(r"^ Examples?:\n \$ unseen ", text, re.M), text
    # the commands a group lists: the first paragraph, wrapped only where it must be
    cells = command_cells(out)
    column = max((len(line) for _, cell in cells for line in cell.splitlines()), default=0)
    for name, cell in cells:
        lines = cell.splitlines()
        for a, b in zip(lines, lines[1:], strict=False):
            assert len(a) + 1 + len(b.split()[0]) > column, (name, a, b)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "unseen")
def test_metavars_are_plain_words(path, run_main, monkeypatch):
    """``TEXT``, ``PATH``, ``RUN_DIR...``: never typer's ``<list[str]>`` or ``{run_dirs}``."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_main([*path, "--help"])
    assert code == 0, err
    assert not re.search(r"<(list|int|float|str|path|bool)\b|\{\w+\}", out, re.I), out


def test_every_command_has_an_example_that_parses():
    """Each example names a real command and options it takes (click parses it, as the shell
    would hand it over); none is left over for a command that is gone."""
    group = typer.main.get_command(cli.app)
    keys = {" ".join(p) for p in PATHS}
    assert keys == set(EXAMPLES), keys ^ set(EXAMPLES)
    for key, lines in EXAMPLES.items():
        for line in lines:
            argv = shlex.split(line)
            assert argv[0] == "unseen"
            cmd, args, names = group, argv[1:], []
            while hasattr(cmd, "commands") and args and args[0] in cmd.commands:
                names.append(args[0])
                cmd, args = cmd.commands[args[0]], args[1:]
            assert f"{' '.join(names)} ".startswith(f"{key} ".lstrip()), (key, line)
            cmd.make_context(" ".join(["unseen", *names]), list(args), resilient_parsing=False)


def test_paragraphs_join_source_lines_and_keep_paragraphs():
    doc = """First line
        goes on here.

        Second paragraph,
          indented oddly.
        """
    assert paragraphs(doc) == "First line goes on here.\n\nSecond paragraph, indented oddly."


def option_rows(text: str) -> dict[str, int]:
    """Each option's long name -> the lines its row takes in the help's panels."""
    rows: dict[str, int] = {}
    last = None
    for line in text.splitlines():
        m = re.match(r"│ (--[\w-]+)", line)
        if m:
            last = m.group(1)
            rows[last] = 1
        elif last and re.match(r"│\s+\S", line):  # a continuation of the row above
            rows[last] += 1
        elif not line.startswith("│"):
            last = None
    return rows


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("path", [("run",), ("director", "run")], ids=" ".join)
def test_run_help_is_short_and_lists_every_option(path, width, run_main, monkeypatch):
    """``run --help`` was 186 lines at 80 columns (``director run --help`` 129), the options'
    help folded into a column a third of the width: now one line per option, in panels,
    every option still listed."""
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run_main([*path, "--help"])
    assert code == 0, err
    assert len(out.splitlines()) < 90, len(out.splitlines())
    cmd = typer.main.get_command(cli.app)
    for name in path:
        cmd = cmd.commands[name]
    names = {o for p in cmd.params if p.param_type_name == "option" for o in p.opts
             if o.startswith("--")}
    rows = option_rows(out)
    assert set(rows) == names | {"--help"}, names ^ set(rows)
    assert all(n == 1 for n in rows.values()), {k: n for k, n in rows.items() if n > 1}
    panels = re.findall(r"^╭─ (.+?) ─", out, re.M)
    assert len(panels) >= 5 and "Options" in panels, panels
