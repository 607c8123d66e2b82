"""``show``'s pager, as git pages: on a terminal only, through ``$UNSEEN_PAGER`` or
``$PAGER`` (default ``less`` with ``LESS=FRX``: quit when it fits one screen, colours kept,
the screen left as it was); ``--no-pager``, an empty pager or ``cat`` print directly, and so, with a warning, does a
pager that cannot be read or started."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator

from rich.console import Console

from ..engine.errors import warn


def pager_command(enabled: bool = True) -> list[str] | None:
    """The pager to run, or None: not a terminal, ``--no-pager``, or none wanted."""
    if not enabled or not sys.stdout.isatty():
        return None
    raw = os.environ.get("UNSEEN_PAGER", os.environ.get("PAGER", "less"))
    try:
        argv = shlex.split(raw) if raw.strip() else []
    except ValueError as exc:  # an unclosed quote
        warn(f"the pager {raw!r} cannot be read ({exc}); printing directly")
        return None
    if not argv or argv[0] == "cat" or shutil.which(argv[0]) is None:
        return None  # a pager that is not there prints directly, as git does
    return argv


@contextlib.contextmanager
def paged(console: Console, enabled: bool = True) -> Iterator[None]:
    """What ``console`` prints inside the block goes through the pager (on a terminal)."""
    argv = pager_command(enabled)
    if argv is None:
        yield
        return
    with console.capture() as captured:
        yield
    env = {**os.environ}
    env.setdefault("LESS", "FRX")
    # the reader may quit the pager before it has read everything
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        try:
            subprocess.run(argv, input=captured.get().encode("utf-8", "replace"), env=env,
                           check=False)
        except OSError as exc:  # there, but it cannot start (a script's missing interpreter)
            warn(f"the pager {argv[0]} cannot be started ({exc.strerror or exc}); printing "
                 "directly")
            sys.stdout.write(captured.get())
