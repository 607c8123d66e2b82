"""A help or a listing is printed again from its record only while nothing it read changed
(``unseen.cli_replay``)."""

from __future__ import annotations

import os
import sys
import types

import pytest

from unseen import cli_replay


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(cli_replay.SWITCH, raising=False)
    return tmp_path


def record(argv, text="listed\n", err="", code=None):
    """Run a fake command that prints ``text`` (and ``err`` on stderr) under recording."""
    try:
        with cli_replay.recording(argv):
            sys.stdout.write(text)
            if err:
                sys.stderr.write(err)
            if code is not None:
                sys.exit(code)
    except SystemExit:
        pass


def test_what_a_listing_printed_is_printed_again(cache, capsys):
    record(["strategies"])
    assert capsys.readouterr().out == "listed\n"
    assert cli_replay.play(["strategies"])
    assert capsys.readouterr().out == "listed\n"
    assert not cli_replay.play(["backends"])  # another command has no record


def test_a_changed_file_that_was_loaded_voids_the_record(cache, capsys, monkeypatch):
    source = cache / "plugin_mod.py"
    source.write_text("X = 1\n")
    module = types.ModuleType("plugin_mod")
    module.__file__ = str(source)
    monkeypatch.setitem(sys.modules, "plugin_mod", module)
    record(["strategies"])
    assert cli_replay.play(["strategies"])
    source.write_text("X = 22\n")
    os.utime(source, ns=(1, 1))
    assert not cli_replay.play(["strategies"])


def test_a_file_an_unseen_variable_names_is_part_of_the_record(cache, monkeypatch):
    prices = cache / "prices.toml"
    prices.write_text("[[price]]\n")
    monkeypatch.setenv("UNSEEN_PRICES", str(prices))
    record(["prices"])
    assert cli_replay.play(["prices"])
    prices.write_text("[[price]]\npattern = 'x'\n")
    assert not cli_replay.play(["prices"])


def test_another_terminal_width_or_the_switch_off_is_not_replayed(cache, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    record(["--help"])
    assert cli_replay.play(["--help"])
    monkeypatch.setenv("COLUMNS", "80")
    assert not cli_replay.play(["--help"])
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv(cli_replay.SWITCH, "0")
    assert not cli_replay.play(["--help"])


def test_a_failed_or_warning_run_is_not_recorded(cache):
    record(["benchmarks"], err="warning: a plug-in failed to load\n")
    assert not cli_replay.play(["benchmarks"])
    record(["profiles"], code=2)
    assert not cli_replay.play(["profiles"])
    record(["prices"], code=0)
    assert cli_replay.play(["prices"])


@pytest.mark.parametrize("argv, replayed", [
    (["--help"], True), (["director", "run", "--help"], True), (["strategies"], True),
    (["run"], False), (["profiles", "gpt-4o"], False), (["show", "runs/x", "--help"], False),
    ([], False)])
def test_only_helps_and_bare_listings_are_replayed(argv, replayed):
    assert cli_replay.replayable(argv) is replayed


def test_another_program_name_is_another_record(cache, monkeypatch):
    """Help says "Usage: NAME" by the name the program was run as: a link to the script
    under another name gets its own record."""
    monkeypatch.setattr(sys, "argv", ["unseen", "--help"])
    record(["--help"])
    assert cli_replay.play(["--help"])
    monkeypatch.setattr(sys, "argv", ["u", "--help"])
    assert not cli_replay.play(["--help"])
