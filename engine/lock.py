"""One process at a time writes a run directory: ``with hold(run_dir): ...``.

The lock is ``fcntl.flock`` on ``run_dir/run.lock``, so the kernel releases it when the holder
exits, however it exits (a SIGKILLed run leaves a file that the next run simply locks again:
the stale lock is taken over). The file also holds the holder's pid, host and start time,
which only serve the message a second run gets. Where the file system has no flock, a lock
whose pid is dead on this host is taken over and a live one refuses.

Re-entrant within one execution context (a ``ContextVar``): the command that locks a run
directory before it writes ``run.json`` may call the runner, which locks it again. Two
concurrent tasks or threads on one directory are two holders: the second is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path

from .errors import UnseenError
from .paths import MACHINE, PathError, make_folder

LOCK_FILE = "run.lock"
_held: ContextVar[frozenset[str]] = ContextVar("unseen_run_locks", default=frozenset())


class RunDirBusy(UnseenError):
    """Another process (or task) holds the run directory."""


def _holder(path: Path) -> dict:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return info if isinstance(info, dict) else {}
    except (OSError, ValueError):
        return {}


def _describe(info: dict) -> str:
    if not info:
        return "another process"
    what = f" ({info['command']})" if info.get("command") else ""
    return (f"pid {info.get('pid', '?')} on {info.get('host', '?')}{what} since "
            f"{info.get('since', '?')}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _no_flock_busy(path: Path) -> dict | None:
    """Without flock: the holder's record when it is alive (or on another host)."""
    info = _holder(path)
    pid = info.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return None
    if info.get("host") != socket.gethostname():
        return info  # cannot tell from here: refuse, the message names the file to remove
    return info if _pid_alive(pid) else None


@contextlib.contextmanager
def hold(run_dir: str | Path, command: str = "") -> Iterator[Path]:
    """Hold ``run_dir`` (created if missing) for the ``with`` block; raise :class:`RunDirBusy`
    naming the holder when another process or task holds it. A directory this call created
    is removed again when the block fails having written nothing (a refused run leaves no
    trace)."""
    run_dir = Path(run_dir)
    created = not run_dir.exists()
    make_folder(run_dir, "the run directory", "choose another --out")
    key = str(run_dir.resolve())
    held = _held.get()
    if key in held:  # this context holds it already (the command, then its runner)
        yield run_dir
        return
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes
    except OSError as exc:  # a read-only file system, a folder without permission
        raise PathError(f"cannot write in the run directory {run_dir} "
                        f"({MACHINE.get(exc.errno or 0, exc.strerror)}); choose another "
                        "--out") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirBusy(
                f"{run_dir} is in use by {_describe(_holder(path))}: wait for that run to "
                "finish or stop it, or choose another --out") from None
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise
            busy = _no_flock_busy(path)
            if busy is not None:
                raise RunDirBusy(
                    f"{run_dir} is in use by {_describe(busy)} (no file locks here: if no "
                    f"run is going, remove {path})") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                "since": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        token = _held.set(held | {key})
        try:
            yield run_dir
        except BaseException:
            if created and [p.name for p in run_dir.iterdir()] == [LOCK_FILE]:
                path.unlink()
                run_dir.rmdir()
            raise
        finally:
            _held.reset(token)
    finally:
        os.close(fd)  # releases the flock


def holder(run_dir: str | Path) -> str | None:
    """Who holds ``run_dir`` now (``pid 12 on host (unseen run) since ...``), or None: for
    the views, which say a run is still going; reads only, never takes the lock."""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # no lock file: nothing ever ran here under a lock
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _describe(_holder(path))
        except OSError:
            busy = _no_flock_busy(path)
            return _describe(busy) if busy is not None else None
        return None
    finally:
        os.close(fd)


def running(run_dir: str | Path) -> bool:
    """Whether a process holds ``run_dir`` now (a run is writing it). A lock file whose pid is
    dead on this host is no run; otherwise the flock itself is asked (shared, not waiting,
    released at once), so a held lock reads as running and a stale one does not."""
    path = Path(run_dir) / LOCK_FILE
    info = _holder(path)
    pid = info.get("pid")
    if not info or (isinstance(pid, int) and info.get("host") == socket.gethostname()
                    and not _pid_alive(pid)):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no flock here: the live pid says it
        return True
    finally:
        os.close(fd)  # releases a shared lock taken
    return False
