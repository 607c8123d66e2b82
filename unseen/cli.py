"""The ``unseen`` command line: the app, assembled from the command groups in
``unseen.commands``, and :func:`main`.

Errors a user can cause (a bad path, an unknown strategy, a missing key) end with one line
on stderr and exit status 2, never a traceback; anything else is a bug and says so (exit 70).
"""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

from . import settings  # noqa: F401 - tests patch settings through here
from .cli_help import reflow_help
from .commands import cache, data, director, run, views
from .commands.common import err, user_errors
from .engine.envfile import load_env_file
from .engine.errors import UnseenError
from .engine.paths import machine_line, os_line

app = typer.Typer(
    name="unseen", no_args_is_help=True, add_completion=False,
    help="Test, and improve, how vision-language models reason about what they cannot see.",
)
app.add_typer(data.data_app, name="data")
app.add_typer(cache.cache_app, name="cache")
app.add_typer(director.director_app, name="director")
# the top-level commands, in the order `unseen --help` lists them
for name in ("run", "compare", "figure", "curve", "show", "tui", "view", "export", "strategies",
             "benchmarks", "backends", "profiles", "prices"):
    group = run if name in ("run", "strategies", "benchmarks", "backends", "profiles",
                            "prices") \
        else views
    app.registered_commands += [c for c in group.commands.registered_commands
                                if c.callback.__name__ == name]

_user_errors = user_errors  # the name tests and plug-ins have used

# every command is registered by now: paragraphs that rewrap, and an example each
reflow_help(app)


def main() -> None:
    """Console entry point: user errors become one line and exit status 2."""
    try:
        load_env_file()  # provider keys from ./.env; the environment wins
        if why := _empty_argument(sys.argv[1:]):
            _one_line_error(why)
            sys.exit(2)
        rc = app(standalone_mode=False)
        if isinstance(rc, int):  # click hands back the code of a typer.Exit here
            sys.exit(rc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:
        if isinstance(exc, user_errors()):
            if isinstance(exc, OSError) and not isinstance(exc, UnseenError):
                _one_line_error(os_line(exc))
            else:
                _one_line_error(str(exc) if isinstance(exc, OSError) or not exc.args
                                else exc.args[0])
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
            raise
        # anything else is a bug of unseen (or of a plug-in), and says so
        _one_line_error(f"internal error, a bug in unseen or a plug-in: {type(exc).__name__}: "
                        f"{exc} (rerun with UNSEEN_DEBUG=1 for the traceback, and report it)")
        sys.exit(70)  # EX_SOFTWARE


def _empty_argument(argv: list[str]) -> str | None:
    """Why an empty argument is refused (``--out "$UNSET"``): a path option would read it as
    the current folder and write a run there; no option of unseen takes an empty value."""
    for i, arg in enumerate(argv):
        if arg == "" or (arg.startswith("--") and arg.endswith("=")):
            option = arg[:-1] if arg else (argv[i - 1] if i and argv[i - 1].startswith("-")
                                           else "")
            return (f"{option} was given an empty value: give one, or leave the option out"
                    if option else "an empty argument: give a value")
    return None


def _one_line_error(msg: object) -> None:
    # one line whatever the message holds; soft_wrap: never fold at the console width;
    # escape: a path or a box in the message must not be read as markup
    msg = " ".join(str(msg).split())
    err.print(f"[red]error:[/] {escape(msg)}", highlight=False, markup=True, soft_wrap=True)


if __name__ == "__main__":
    main()
