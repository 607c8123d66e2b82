"""Image bytes for requests, by reference: read once, hashed once, never kept in state."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .types import ImagePart

# An overlay renderer turns (path, spec) into PNG bytes; renderers/ registers one so that the
# engine never imports it by name.
OverlayRenderer = Callable[[str, dict[str, Any]], bytes]
_overlay_renderer: OverlayRenderer | None = None

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


def register_overlay_renderer(fn: OverlayRenderer) -> None:
    global _overlay_renderer
    _overlay_renderer = fn


def mime_type(path: str) -> str:
    return _MIME.get(os.path.splitext(path)[1].lower(), "application/octet-stream")


@lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@lru_cache(maxsize=4096)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(_read(path, mtime_ns, size)).hexdigest()


def _stat(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def file_digest(path: str) -> str:
    """sha256 of a file's bytes, cached while the file is unchanged."""
    return _digest(path, *_stat(path))


def part_bytes(part: ImagePart) -> tuple[bytes, str]:
    """The bytes a provider receives for this part, and their MIME type."""
    if part.overlay is None:
        return _read(part.path, *_stat(part.path)), mime_type(part.path)
    if _overlay_renderer is None:
        raise RuntimeError("an overlay was requested but no overlay renderer is registered")
    mime = "image/png" if part.overlay.get("format") == "png" else "image/jpeg"
    return _overlay_renderer(part.path, part.overlay), mime


def part_digest(part: ImagePart) -> str:
    """Digest that identifies what the model sees: file bytes plus overlay spec."""
    base = file_digest(part.path)
    if part.overlay is None:
        return base
    spec = json.dumps(part.overlay, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{base}|{spec}".encode()).hexdigest()


def data_url(part: ImagePart) -> str:
    data, mime = part_bytes(part)
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
