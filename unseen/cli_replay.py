"""Printing again what ``--help`` and the listings printed, while nothing they read changed.

Typer's rich help alone costs four times a bare interpreter's start-up, and a listing
imports every strategy, backend or benchmark. What these commands print depends only on
their arguments, the terminal (whether each stream is one, its size, its encoding, the
variables rich and typer read), the interpreter and its ``sys.path``, and the files Python
loaded to print it. The first run records its output beside the size and modification time
of each of those files (every loaded module's, every file in the folders of the loaded
``unseen`` modules, a file an ``UNSEEN_*`` variable names) and of each ``sys.path`` folder (a
package installed or removed changes it); a later run with the same key whose files are all
unchanged prints the record and imports nothing else. Only a run that exits 0 with nothing on
stderr is recorded. ``UNSEEN_CLI_CACHE=0`` turns this off.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

#: the commands whose whole output is replayed (with no argument); any ``... --help`` too
LISTINGS = ("strategies", "backends", "benchmarks", "profiles", "prices")
#: what rich and typer read from the environment to decide how the output looks
TERMINAL_VARS = ("COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR",
                 "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS",
                 "JUPYTER_LINES", "TERMINAL_WIDTH", "UNICODE_VERSION", "GITHUB_ACTIONS",
                 "DATABRICKS_RUNTIME_VERSION")
PREFIXES = ("UNSEEN_", "TYPER_", "_TYPER_")
SWITCH = "UNSEEN_CLI_CACHE"
FOLDER = "cli-replay"
KEEP = 64  # records kept; the oldest go first
_WORD = re.compile(r"[a-z][a-z0-9-]*$")
#: bumped when what a record holds changes
FORMAT = 1


def replayable(argv: list[str]) -> bool:
    """A listing without arguments, or ``--help`` after nothing but command names."""
    if len(argv) == 1 and argv[0] in LISTINGS:
        return True
    return bool(argv) and argv[-1] == "--help" and all(_WORD.match(a) for a in argv[:-1])


def _terminal() -> list[Any]:
    ttys: list[bool | None] = []
    for fd in (0, 1, 2):
        try:
            ttys.append(os.isatty(fd))
        except OSError:
            ttys.append(None)
    size = None
    for fd in (0, 1, 2):  # rich asks the three standard streams in this order
        try:
            size = tuple(os.get_terminal_size(fd))
            break
        except (OSError, ValueError):
            continue
    return [ttys, size, getattr(sys.stdout, "encoding", None)]


def _named_files() -> dict[str, str]:
    """The files an ``UNSEEN_*`` variable names (a profile or price file), made absolute."""
    return {k: os.path.abspath(v) for k, v in os.environ.items()
            if k.startswith("UNSEEN_") and v and os.path.isfile(v)}


def key(argv: list[str]) -> str | None:
    """The record's name for this command here, or None when it is not replayed."""
    if os.environ.get(SWITCH, "1") == "0" or not replayable(argv):
        return None
    env = {k: v for k, v in os.environ.items() if k in TERMINAL_VARS or k.startswith(PREFIXES)}
    # the program's name: help's "Usage: NAME" (a link to the script prints its own)
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    blob = json.dumps([FORMAT, program, argv, env, _named_files(), _terminal(),
                       sys.executable, sys.version, sys.path], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _folder() -> str:
    from platformdirs import user_cache_dir  # the reply cache's folder (engine.cache)

    return os.path.join(user_cache_dir("unseen"), FOLDER)


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def play(argv: list[str]) -> bool:
    """Print the record of this command if it holds (True), else nothing (False)."""
    name = key(argv)
    if name is None:
        return False
    try:
        with open(os.path.join(_folder(), name + ".json"), encoding="utf-8") as fh:
            record = json.load(fh)
        stamps = record["files"]
        text = record["out"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if any(_stamp(path) != stamp for path, stamp in stamps.items()):
        return False
    sys.stdout.write(text)
    sys.stdout.flush()
    return True


class _Tee:
    """A text stream that keeps what is written to it and passes everything on."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        written = self._stream.write(text)  # click probes with b"", which a text stream refuses
        self.parts.append(text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _loaded_files() -> dict[str, list[int] | None]:
    """What this process read to print: every loaded module's file, every file in the
    folders of the loaded ``unseen`` modules (their data: tables, templates), the files
    ``UNSEEN_*`` variables name, and the ``sys.path`` folders themselves."""
    files: set[str] = set()
    folders: set[str] = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        files.add(path)
        if name == "unseen" or name.startswith("unseen."):
            folders.add(os.path.dirname(path))
    for folder in folders:
        try:
            files.update(e.path for e in os.scandir(folder) if e.is_file())
        except OSError:
            continue
    files.update(_named_files().values())
    files.update(p for p in sys.path if p and os.path.isdir(p))
    return {path: _stamp(path) for path in sorted(files)}


def _save(name: str, text: str, stamps: dict[str, list[int] | None]) -> None:
    folder = _folder()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"files": stamps, "out": text}, fh)
    os.replace(tmp, path)  # a reader sees the old record or the new one, never half
    records = sorted((e for e in os.scandir(folder) if e.name.endswith(".json")),
                     key=lambda e: e.stat().st_mtime_ns)
    for old in records[:-KEEP]:
        os.remove(old.path)


@contextmanager
def recording(argv: list[str]) -> Iterator[None]:
    """Run the command inside; if it is replayable, exits 0 and writes nothing to stderr,
    keep what it printed for :func:`play`."""
    name = key(argv)
    if name is None:
        yield
        return
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    ok = False
    try:
        yield
        ok = True
    except SystemExit as exc:
        ok = exc.code in (0, None)
        raise
    finally:
        sys.stdout, sys.stderr = out._stream, err._stream
        if ok and not "".join(err.parts):
            with suppress(OSError):  # a read-only cache: the next run prints it afresh
                _save(name, "".join(out.parts), _loaded_files())
