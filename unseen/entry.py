"""The ``unseen`` console script: a Ctrl-C from the first instant ends quietly, exit 130.

The command line's imports (typer, rich, pydantic, the commands) take a few tenths of a
second, and a Ctrl-C among them raised ``KeyboardInterrupt`` out of the console script with a
traceback; this module imports nothing before its handling is in place (``import unseen``
itself is a few lazy names). Once :func:`unseen.cli.main` runs, it handles Ctrl-C itself.
"""

from __future__ import annotations

import os
import sys

#: a file the process creates once the handling is in place, before the heavy imports (how
#: a test interrupts it at that moment, without racing the clock)
STARTED_ENV = "UNSEEN_STARTED_FILE"


def main() -> None:
    """Console entry point (pyproject ``[project.scripts]``)."""
    try:
        if started := os.environ.get(STARTED_ENV):
            open(started, "w").close()  # noqa: SIM115 - created, nothing written
        from .cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
