"""Commands that run no graph import no LangGraph, LangChain core or LangSmith.

Behaviour, not a time bound: each command runs in a fresh interpreter, which then reports
the modules it loaded. ``benchmarks/startup.py`` prints the time figures.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

GRAPH_PACKAGES = ("langgraph", "langchain_core", "langsmith")

PROBE = """
import json, sys
from unseen.cli import main
sys.argv = ["unseen", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def loaded(args: list[str], tmp_path, code: str = PROBE) -> tuple[str, set[str]]:
    """What the command printed and the top-level packages it loaded; the first run in a
    test records its output (``unseen.cli_replay``), a second one replays it."""
    env = {"COLUMNS": "100", "PATH": "/usr/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=120)
    modules = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    return proc.stdout, modules


@pytest.mark.parametrize("args", [["--help"], ["strategies"], ["backends"], ["benchmarks"],
                                  ["compare", "--help"]])
def test_listing_commands_import_no_graph_library(args, tmp_path):
    out, modules = loaded(args, tmp_path)
    assert out.strip(), "the command printed nothing: the probe did not run it"
    assert not modules & set(GRAPH_PACKAGES), sorted(modules & set(GRAPH_PACKAGES))


LISTINGS = [["--help"], ["strategies"], ["backends"], ["benchmarks"], ["profiles"],
            ["prices"], ["compare", "--help"]]


@pytest.mark.parametrize("args", LISTINGS)
def test_help_and_listings_import_no_array_graph_sdk_or_image_library(args, tmp_path):
    """Run afresh, a help or a listing loads none of numpy, LangGraph, the OpenAI SDK or
    Pillow; run again, it prints the same from its record and loads neither typer, rich
    nor pydantic."""
    first, modules = loaded(args, tmp_path)
    assert first.strip()
    assert not modules & {"numpy", "langgraph", "openai", "PIL"}, sorted(modules)
    again, replayed = loaded(args, tmp_path)
    assert again == first
    assert not replayed & {"typer", "rich", "pydantic", "click"}, sorted(replayed)


def test_strategies_lists_every_builtin_without_compiling(tmp_path):
    out, _ = loaded(["strategies"], tmp_path)
    for name in ("direct", "cot", "cot-sr", "spoe", "spoe-grid", "spoe-search", "director"):
        assert f" {name} " in out


def test_the_probe_sees_langgraph_when_a_graph_is_built(tmp_path):
    """The check above can fail: building a strategy does import LangGraph."""
    code = PROBE.replace("main()", "from unseen.strategies import build; build('direct'); main()")
    _, modules = loaded(["strategies"], tmp_path, code)
    assert "langgraph" in modules


def test_import_unseen_api_loads_no_model_sdk_graph_or_array_library(tmp_path):
    """``import unseen.api`` is the library's entry: the SDKs, LangGraph, the statistics
    and numpy load when a run or a table needs them (numpy came with the overlay's font
    and the SceneFunRI package's tables)."""
    code = ("import json, sys, unseen.api\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} | "
            "{m for m in sys.modules if m.startswith('google.')})), file=sys.stderr)")
    _, modules = loaded([], tmp_path, code)
    for heavy in ("numpy", "statsmodels", "google.genai", "langgraph", "openai", "cv2"):
        assert heavy not in modules, heavy
    assert "unseen" in modules


#: what the console script runs (pyproject's ``[project.scripts]``)
ENTRY = "import sys; from unseen.entry import main; sys.exit(main())"


def test_the_console_script_is_the_entry_that_handles_ctrl_c_first():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["unseen"] == "unseen.entry:main"


def test_ctrl_c_while_the_command_line_imports_ends_quietly(tmp_path):
    """The child creates its started file once its handling is in place, just before the
    command line's imports (tenths of a second): a SIGINT sent then lands among them, and
    ends the process with exit 130 and one word, never a traceback. Three times over; an
    attempt whose command had already finished when the signal came (the test process was
    not scheduled for a quarter of a second: it exits 0, as it should) is tried again."""
    import os
    import signal
    import time

    from unseen.entry import STARTED_ENV

    landed = 0
    for attempt in range(20):
        started = tmp_path / f"started-{attempt}"
        proc = subprocess.Popen([sys.executable, "-c", ENTRY, "strategies"], cwd=tmp_path,
                                env={**os.environ, STARTED_ENV: str(started)}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        if proc.returncode == 0 and not err and "direct" in out:  # done before the signal
            continue
        assert (proc.returncode, err.strip()) == (130, "interrupted"), (proc.returncode, err)
        landed += 1
        if landed == 3:
            break
    assert landed == 3


def test_a_command_leaves_its_heap_out_of_the_last_collection(tmp_path):
    """At the interpreter's exit the objects a command built are frozen (``gc.freeze``), so
    the collector's last pass does not walk them; atexit handlers registered before still
    run after it."""
    code = PROBE.replace("from unseen.cli import main", (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
        "from unseen.cli import main"))
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(["prices"])],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={"PATH": "/usr/bin", "UNSEEN_CLI_CACHE": "0"})
    frozen = [line for line in proc.stderr.splitlines() if line.startswith("frozen ")]
    assert frozen and int(frozen[-1].split()[1]) > 0, proc.stderr[-2000:]
