"""Reply cache: SQLite in WAL mode, keyed by a digest of everything that shapes a reply.

Errors and empty replies are never stored, so a transient failure cannot poison the cache.
A damaged file (truncated, overwritten, bad pages: SQLite's own ``quick_check`` at open, or a
``DatabaseError`` on use) is moved aside as ``replies.sqlite.corrupt-<UTC time>`` with one
warning, and a fresh cache serves on: a cache only saves calls, so losing it loses no result.
What the machine refuses (a read-only folder, a full disk: SQLite's ``OperationalError``) is
no damage: nothing is moved, one warning says so and the run goes on without caching (a
full disk: without writing), every reply journaled as always.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import UnseenError, warn
from .images import part_digest
from .paths import MACHINE, PathError, make_folder
from .redact import scrub
from .types import ImagePart, Reply, Request, TextPart


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("unseen"))


def canonical_request(backend: str, model: str, request: Request,
                      serving: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request as the cache sees it: image bytes replaced by their digest, with the
    backend's serving identity (``serving``: what shapes replies beyond the request)."""
    messages = []
    for m in request.messages:
        parts: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                parts.append({"text": p.text})
            elif isinstance(p, ImagePart):
                parts.append({"image": part_digest(p)})
        messages.append({"role": m.role, "parts": parts})
    out = {
        "backend": backend,
        "model": model,
        "messages": messages,
        "decoding": request.decoding.model_dump(exclude_none=True),
        "sample": request.sample,
    }
    if request.draw:  # absent when unset, so keys made before the field stay valid
        out["draw"] = request.draw
    if serving:  # likewise
        out["serving"] = serving
    return out


def request_key(backend: str, model: str, request: Request,
                serving: dict[str, Any] | None = None) -> str:
    blob = json.dumps(canonical_request(backend, model, request, serving), sort_keys=True,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


FILE = "replies.sqlite"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, backend TEXT, model TEXT,"
           " reply TEXT NOT NULL, created REAL NOT NULL)")


def set_aside_files(directory: Path) -> list[Path]:
    """Damaged cache files moved aside in ``directory``, oldest first."""
    return sorted(directory.glob(f"{FILE}.corrupt-*"))


class ReplyCache:
    """A thread-safe SQLite store of successful replies."""

    def __init__(self, directory: str | Path | None = None):
        self.dir = Path(directory) if directory else default_cache_dir()
        self.path = self.dir / FILE
        self._lock = threading.Lock()
        self.moved: list[Path] = []  # files this instance set aside
        self.problem: str | None = None  # why it cannot be read or written, once it cannot
        self.writable = True
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        try:
            make_folder(self.dir, "the reply cache folder", "choose another --cache-dir, or "
                        "run with --no-cache")
        except PathError as exc:
            if exc.errno not in _NO_ROOM:
                raise  # a file in the way: the user's path to change
            # a read-only or full file system, as for a folder that exists: no cache
            self._cannot(f"the folder cannot be created: {MACHINE[exc.errno]}")
            return
        self._db = self._open()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            found = db.execute("PRAGMA quick_check(1)").fetchone()
            if found is None or found[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check: {found[0] if found else '?'}")
            db.execute(_SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

    def _open(self) -> sqlite3.Connection | None:
        """The connection; None (one warning said why) where the machine refuses it."""
        self._inode = self._current_inode()
        try:
            return self._connect()
        except sqlite3.OperationalError as exc:  # read-only, full, cannot open: no damage
            self._cannot(exc)
            return None
        except sqlite3.DatabaseError as exc:
            if not self._set_aside(exc):
                return None
        try:
            return self._connect()  # a fresh file; an error now is not the file's fault
        except sqlite3.DatabaseError as exc:
            self._cannot(exc)
            return None

    def _cannot(self, exc: Exception | str, writes: bool = False) -> None:
        """Go on without the cache (``writes``: without writing to it), said once."""
        self.writable = False
        if not writes:
            with contextlib.suppress(sqlite3.Error, AttributeError):
                if self._db is not None:
                    self._db.close()
            self._db = None
        if self.problem is None:
            self.problem = str(exc)
            warn(f"the reply cache {self.path} cannot be {'written' if writes else 'used'} "
                 f"({exc}); continuing without caching (every reply is journaled as always)")

    def _current_inode(self) -> int | None:
        try:
            return os.stat(self.path).st_ino
        except FileNotFoundError:
            return None

    def _set_aside(self, exc: Exception) -> bool:
        """Move the damaged file (and its WAL) aside, unless another process already has:
        the path then names a new file, which is left alone. False (one warning) where the
        folder does not let it be moved."""
        inode = self._current_inode()
        if inode is not None and inode == self._inode:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            target = self.path.with_name(f"{FILE}.corrupt-{stamp}")
            try:
                os.replace(self.path, target)
            except OSError as err:  # a read-only folder: nothing can be set aside
                self._cannot(f"damaged: {exc}; it cannot be moved aside: {err.strerror}")
                return False
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(FILE + suffix)
                if side.exists():
                    os.replace(side, side.with_name(f"{FILE}{suffix}.corrupt-{stamp}"))
            self.moved.append(target)
            warn(f"the reply cache {self.path} is damaged ({exc}); moved it aside to "
                 f"{target} and continuing with a fresh cache")
        return True

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        """A damaged file met on use (lock held): set it aside, reopen a fresh one."""
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._db.close()  # type: ignore[union-attr]
        self._db = self._open() if self._set_aside(exc) else None

    def _execute(self, sql: str, args: tuple | list = ()) -> sqlite3.Cursor:
        """``sql`` under the lock; on a damaged file: set it aside and run ``sql`` once more
        on a fresh one. A cache that cannot be used raises ``sqlite3.OperationalError``."""
        with self._lock:
            try:
                if self._db is None:
                    raise sqlite3.OperationalError(self.problem or "the cache is closed")
                return self._db.execute(sql, args)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError | sqlite3.IntegrityError):
                    raise  # a busy, locked, full or read-only database, a constraint: no damage
                self._recover(exc)
                if self._db is None:
                    raise sqlite3.OperationalError(self.problem or str(exc)) from None
                return self._db.execute(sql, args)

    def get(self, key: str) -> Reply | None:
        try:
            row = self._execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone() \
                if self._db is not None else None
        except sqlite3.OperationalError as exc:  # a miss: the call is made, as uncached
            if _machine(exc):
                self._cannot(exc, writes=True)
            row = None
        if row is None:
            self.misses += 1
            return None
        try:
            reply = Reply.model_validate_json(row[0])
        except ValueError:  # a row SQLite reads but we cannot: a miss, asked again
            self.misses += 1
            return None
        self.hits += 1
        return reply.model_copy(update={"cached": True})

    def put(self, key: str, backend: str, model: str, reply: Reply) -> bool:
        """Store a successful, non-empty reply; returns whether it was stored."""
        if reply.error is not None or not reply.text.strip() or not self.writable:
            return False
        blob = scrub(reply.model_copy(update={"cached": False}).model_dump_json())
        try:
            self._execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                          (key, backend, model, blob, time.time()))
        except sqlite3.OperationalError as exc:  # a full disk: the reply is journaled anyway
            if _machine(exc):
                self._cannot(exc, writes=True)
            return False
        return True

    def stats(self) -> dict[str, Any]:
        rows = self._execute(
            "SELECT backend, model, COUNT(*) FROM replies GROUP BY backend, model").fetchall() \
            if self._db is not None else []  # one warning said why it cannot be read
        aside = [p for p in self.dir.glob(f"{FILE}*") if ".corrupt-" in p.name]
        size = sum(f.stat().st_size for f in self.dir.glob(f"{FILE}*") if f not in aside)
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "bytes": size,
            "by_model": [{"backend": b, "model": m, "entries": n} for b, m, n in rows],
            "set_aside": [{"path": str(p), "bytes": p.stat().st_size}
                          for p in set_aside_files(self.dir)],
        }

    def clear(self, backend: str | None = None, model: str | None = None) -> int:
        """Delete entries (all, or one backend / model); returns how many."""
        where, args = [], []
        if backend:
            where.append("backend = ?")
            args.append(backend)
        if model:
            where.append("model = ?")
            args.append(model)
        if self._db is None or not self.writable:
            raise UnseenError(f"the reply cache {self.path} cannot be cleared: {self.problem}")
        sql = "DELETE FROM replies" + (" WHERE " + " AND ".join(where) if where else "")
        n = self._execute(sql, args).rowcount
        self._execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()


#: the machine's refusals to create the cache folder that a run survives without the cache
_NO_ROOM = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})

#: SQLite's primary result codes for the machine's state: read-only, I/O error, full, cannot
#: open (a busy or locked database is another process's moment, and passes)
_MACHINE_CODES = frozenset({8, 10, 13, 14})


def _machine(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:  # the cache's own stand-in (it cannot be used): no new warning
        return False
    return code & 0xFF in _MACHINE_CODES
