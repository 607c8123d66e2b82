"""The ``unseen`` command line's entry point, :func:`main`; the app itself is assembled in
``unseen.cli_app`` and imported only when a command runs (``unseen.cli_replay`` prints a
help or a listing again without it).

Errors a user can cause (a bad path, an unknown strategy, a missing key) end with one line
on stderr and exit status 2, never a traceback; anything else is a bug and says so (exit 70).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import Any

from . import cli_replay, settings  # noqa: F401 - settings: tests patch it through here
from .engine.collector import fewer_collections
from .engine.envfile import load_env_file
from .engine.errors import UnseenError
from .engine.paths import machine_line, os_line


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, for tests and tools that call it in-process
        from .cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _user_errors() -> tuple[type[BaseException], ...]:
    """What a user can cause (``commands.common.user_errors``; the name tests and plug-ins
    have used)."""
    from .commands.common import user_errors

    return user_errors()


def main() -> None:
    """Console entry point: user errors become one line and exit status 2."""
    _quick_exit()
    try:
        load_env_file()  # provider keys from ./.env; the environment wins
        argv = sys.argv[1:]
        if why := _empty_argument(argv):
            _one_line_error(why)
            sys.exit(2)
        if cli_replay.play(argv):
            return
        # the imports a command makes keep most of what they allocate: fewer passes
        with cli_replay.recording(argv), fewer_collections():
            _run()
    except KeyboardInterrupt:
        _interrupted()
    except Exception as exc:
        _fail(exc)


def _quick_exit() -> None:
    """At the interpreter's exit, leave what this command built out of the garbage
    collector's last pass (``gc.freeze``): that pass walked every object of the imported
    libraries, about 0.4 s of CPU after a run. Objects are still finalized as before."""
    if not getattr(_quick_exit, "registered", False):
        atexit.register(gc.freeze)
        _quick_exit.registered = True  # type: ignore[attr-defined]


def _run() -> None:
    import typer

    from .cli_app import app

    try:
        rc = app(standalone_mode=False)
        if isinstance(rc, int):  # click hands back the code of a typer.Exit here
            sys.exit(rc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _interrupted()


def _interrupted() -> None:
    _commands_err().print("interrupted")
    sys.exit(130)


def _fail(exc: Exception) -> None:
    if isinstance(exc, _user_errors()):
        if isinstance(exc, OSError) and not isinstance(exc, UnseenError):
            _one_line_error(os_line(exc))
        else:
            plain = isinstance(exc, OSError) or not exc.args
            _one_line_error(str(exc) if plain else exc.args[0])
        sys.exit(2)
    # the machine's state (a full disk, a read-only file system) met while writing:
    # what was journaled stays, and the line names the path
    if isinstance(exc, OSError) and (line := machine_line(exc)):
        _one_line_error(line)
        sys.exit(2)
    # usage errors (unknown option, bad value): typer's own or click's, by duck typing,
    # since newer typer vendors click and older typer uses the click package
    code = getattr(exc, "exit_code", None)
    if hasattr(exc, "format_message") and isinstance(code, int):
        _one_line_error(exc.format_message())
        sys.exit(code)
    if os.environ.get("UNSEEN_DEBUG"):
        raise exc
    # anything else is a bug of unseen (or of a plug-in), and says so
    _one_line_error(f"internal error, a bug in unseen or a plug-in: {type(exc).__name__}: "
                    f"{exc} (rerun with UNSEEN_DEBUG=1 for the traceback, and report it)")
    sys.exit(70)  # EX_SOFTWARE


def _empty_argument(argv: list[str]) -> str | None:
    """Why an empty argument is refused (``--out "$UNSET"``): a path option would read it as
    the current folder and write a run there; no option of unseen takes an empty value."""
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if arg == "" or (arg.startswith("--") and eq and not value):  # --opt= (not --tag=ab==)
            option = name if arg else (argv[i - 1] if i and argv[i - 1].startswith("-")
                                       else "")
            return (f"{option} was given an empty value: give one, or leave the option out"
                    if option else "an empty argument: give a value")
    return None


def _commands_err() -> Any:
    from .commands.common import err

    return err


def _one_line_error(msg: object) -> None:
    # one line whatever the message holds; soft_wrap: never fold at the console width;
    # escape: a path or a box in the message must not be read as markup
    from rich.markup import escape

    msg = " ".join(str(msg).split())
    _commands_err().print(f"[red]error:[/] {escape(msg)}", highlight=False, markup=True,
                          soft_wrap=True)


if __name__ == "__main__":
    main()
