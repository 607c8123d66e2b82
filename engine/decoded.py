"""Images decoded whole, once: a truncated or damaged file passes the header check
(:func:`engine.images.open_image`), so a dataset's images are decoded when it loads, and the
digest of each one that decoded is remembered, so a rerun does not decode it again.

The digests are kept one a line in ``images-decoded.txt`` in the reply cache's folder (the
user cache folder, or the run's ``--cache-dir``); a run with ``--no-cache`` neither reads nor
writes it (:func:`decoded_store`). The file is kept under :data:`MAX_BYTES`: past it, the
older half of its lines goes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

from .images import ImageError, open_image

DECODED_FILE = "images-decoded.txt"
#: the most the file holds: about 64,000 digests
MAX_BYTES = 4 << 20

_USER = "user cache folder"  # the default: where the reply cache lives without --cache-dir
#: the folder of the file for this run (None: --no-cache, nothing read or written)
_FOLDER: ContextVar[str | Path | None] = ContextVar("unseen_decoded_folder", default=_USER)
#: digests this process decoded whole (however the file is kept)
_SEEN: set[str] = set()
_LOCK = threading.Lock()


@contextmanager
def decoded_store(cache_dir: str | Path | None, enabled: bool = True) -> Iterator[None]:
    """Within the block, remember decoded images beside the reply cache: in ``cache_dir``
    (None: the user cache folder), or, not ``enabled`` (``--no-cache``), nowhere."""
    token = _FOLDER.set((cache_dir or _USER) if enabled else None)
    try:
        yield
    finally:
        _FOLDER.reset(token)


def _store() -> str | None:
    folder = _FOLDER.get()
    if folder == _USER:
        from platformdirs import user_cache_dir  # the reply cache's folder (cache.py)

        folder = user_cache_dir("unseen")
    return None if folder is None else os.path.join(folder, DECODED_FILE)


@lru_cache(maxsize=4)
def _known(store: str) -> set[str]:
    try:
        with open(store, encoding="ascii", errors="replace") as fh:
            return {line.strip() for line in fh}
    except OSError:
        return set()


def check_decodes(path: str | Path, digest: str) -> None:
    """Decode the whole image at ``path``: an :class:`ImageError` naming the file if it does
    not decode. Once per image (``digest``, its bytes' sha256)."""
    store = _store()
    if digest in _SEEN or (store is not None and digest in _known(store)):
        return
    with open_image(path) as im:
        try:
            im.load()
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageError(path, f"the image is truncated or damaged: it cannot be decoded "
                             f"whole ({exc})") from None
    _SEEN.add(digest)
    if store is not None:
        _known(store).add(digest)
        _remember(store, digest)


def _remember(store: str, digest: str) -> None:
    try:  # a folder that cannot be written only costs a decode next time
        with _LOCK:
            os.makedirs(os.path.dirname(store), exist_ok=True)
            with open(store, "a", encoding="ascii") as fh:
                fh.write(digest + "\n")
            if os.path.getsize(store) > MAX_BYTES:
                _trim(store)
    except OSError:
        pass


def _trim(store: str) -> None:
    """Keep the newer half of the lines (written whole to a new file, then moved in)."""
    with open(store, encoding="ascii", errors="replace") as fh:
        lines = fh.readlines()
    tmp = f"{store}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.writelines(lines[len(lines) // 2:])
    os.replace(tmp, store)
