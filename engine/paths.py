"""Folders a user names for writing (``--out``, ``--cache-dir``), and the machine's refusals
(a full disk, a read-only file system, a file where a folder should be) as one line naming
the path and what to do, never a traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path

from .errors import UnseenError

#: what each refusal of the machine means for the user, by errno
MACHINE = {
    errno.ENOSPC: "the file system is full: free some space",
    errno.EDQUOT: "the disk quota is used up: free some space",
    errno.EROFS: "a read-only file system",
    errno.EACCES: "no permission to write there",
    errno.EPERM: "no permission to write there",
    errno.EEXIST: "a file is in the way of a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "a folder where a file should be",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "a symlink loop",
}


class PathError(UnseenError, OSError):
    """A path the machine refuses to write: the message names it and what to do."""


def machine_line(exc: OSError, where: str | Path | None = None) -> str | None:
    """One line for an error of the machine's state (:data:`MACHINE`), else None."""
    why = MACHINE.get(exc.errno or 0)
    if why is None:
        return None
    path = exc.filename if exc.filename is not None else where
    return f"cannot write {path}: {exc.strerror or exc} ({why})"


#: the refusals whose words hold for reading as for writing
_SHAPE = (errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENAMETOOLONG)


def os_line(exc: OSError) -> str:
    """An operating system's refusal as ``PATH: why`` (``[Errno 20] ...: 'x'`` reads as code)."""
    if not exc.strerror:
        return str(exc)
    hint = MACHINE[exc.errno] if exc.errno in _SHAPE else ""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror}" + (f" ({hint})" if hint else "")


def make_folder(path: str | Path, what: str, instead: str) -> Path:
    """``path`` created (with its parents) as a folder to write in; a :class:`PathError`
    naming it as ``what`` and saying what to do (``instead``) when the machine refuses."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a file (or a link to one) by that name: said below
    except OSError as exc:
        why = MACHINE.get(exc.errno or 0, exc.strerror or str(exc))
        refused = PathError(f"{what} {path} cannot be created ({why}); {instead}")
        refused.errno = exc.errno  # the machine's state (a read-only disk) or a user's path
        raise refused from None
    if not path.is_dir():
        raise PathError(f"{what} {path} is a file, not a folder; {instead}")
    return path
