"""Reply cache: SQLite in WAL mode, keyed by a digest of everything that shapes a reply.

Errors and empty replies are never stored, so a transient failure cannot poison the cache.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .images import part_digest
from .types import ImagePart, Reply, Request, TextPart


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("unseen"))


def canonical_request(backend: str, model: str, request: Request) -> dict[str, Any]:
    """The request as the cache sees it: image bytes replaced by their digest."""
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
    return out


def request_key(backend: str, model: str, request: Request) -> str:
    blob = json.dumps(canonical_request(backend, model, request), sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ReplyCache:
    """A thread-safe SQLite store of successful replies."""

    def __init__(self, directory: str | Path | None = None):
        self.dir = Path(directory) if directory else default_cache_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "replies.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, backend TEXT, model TEXT,"
            " reply TEXT NOT NULL, created REAL NOT NULL)"
        )
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Reply.model_validate_json(row[0]).model_copy(update={"cached": True})

    def put(self, key: str, backend: str, model: str, reply: Reply) -> bool:
        """Store a successful, non-empty reply; returns whether it was stored."""
        if reply.error is not None or not reply.text.strip():
            return False
        blob = reply.model_copy(update={"cached": False}).model_dump_json()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                (key, backend, model, blob, time.time()),
            )
        return True

    def stats(self) -> dict[str, Any]:
        with self._lock:
            rows = self._db.execute(
                "SELECT backend, model, COUNT(*) FROM replies GROUP BY backend, model"
            ).fetchall()
        size = sum(f.stat().st_size for f in self.dir.glob("replies.sqlite*"))
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "bytes": size,
            "by_model": [{"backend": b, "model": m, "entries": n} for b, m, n in rows],
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
        sql = "DELETE FROM replies" + (" WHERE " + " AND ".join(where) if where else "")
        with self._lock:
            n = self._db.execute(sql, args).rowcount
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def close(self) -> None:
        with self._lock:
            self._db.close()
