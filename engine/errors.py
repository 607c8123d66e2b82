"""The base of every error a user can cause: the CLI prints its message as one line, exit 2."""

from __future__ import annotations

import sys


class UnseenError(Exception):
    """An error a user can cause (a bad file, a busy run directory); its message is one line
    that names what to fix."""


class UserFileError(UnseenError, ValueError):
    """A user's file that cannot be read: the message is ``FILE:LINE: reason``."""


def warn(message: str) -> None:
    """One line on stderr: ``warning: MESSAGE`` (for what a run survives but a user should
    know, such as a damaged cache set aside)."""
    from .sanitize import shown  # imported here: errors.py is imported by everything

    line = " ".join(shown(message).split())
    sys.stderr.write(f"warning: {line}\n")
    sys.stderr.flush()
