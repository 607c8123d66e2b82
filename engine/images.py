"""Image bytes for requests, by reference: read once, hashed once, never kept in state; and
the one guarded way to open a user's image (:func:`open_image`: a pixel limit, a clear line
naming the file for an empty or undecodable one) and to check it lies in its folder.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import UnseenError
from .plugins import Registry
from .types import ImagePart, Request

MAX_PIXELS_ENV = "UNSEEN_MAX_IMAGE_PIXELS"
DEFAULT_MAX_PIXELS = 100_000_000  # 100 MP: above any camera frame, far below a bomb's size


class ImageError(UnseenError, OSError, ValueError):
    """An image that cannot be used: the message names the file and why (``reason``). An
    OSError, so that a view which shows "(image unreadable)" for a missing file does so for
    this one too."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = str(path), reason

# An overlay renderer turns (path, spec) into PNG or JPEG bytes. The engine finds its own: one
# injected with ``use_overlay_renderer`` wins; otherwise the object the entry-point group
# ``unseen.overlays`` names under ``default`` (the built-in one, renderers.overlay), loaded on
# the first overlay, so nothing depends on which module happened to be imported first.
OverlayRenderer = Callable[[str, dict[str, Any]], bytes]
OVERLAY_GROUP = "unseen.overlays"
_overlay_renderer: OverlayRenderer | None = None
_OVERLAYS: Registry[OverlayRenderer] = Registry(OVERLAY_GROUP, "overlay renderer")

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


#: what the trajectory in this context holds (decoded images, the renderer's; encoded
#: overlays, ``part_bytes``'): the keys it took from :data:`_SHARED`. The runner gives each
#: trajectory its own (:func:`holding`) and lets go of them when the trajectory ends.
HELD: ContextVar[dict[Any, Any] | None] = ContextVar("unseen_held_images", default=None)
#: key → [value, how many trajectories in flight hold it]: an image decoded, or an overlay
#: encoded, once for every trajectory that uses it while any of them runs (the samples and
#: votes of one instance, which run together), however high the concurrency
_SHARED: dict[Any, list[Any]] = {}
_LOCK = threading.Lock()
#: encoded overlays outside a trajectory (a view, a test), the few last ones
_RECENT: OrderedDict[Any, tuple[bytes, str]] = OrderedDict()
_RECENT_SIZE = 16


def held() -> dict[Any, Any] | None:
    """The current trajectory's store (None outside a trajectory)."""
    return HELD.get()


def hold(key: Any, make: Callable[[], Any]) -> Any:
    """The value under ``key`` for the current trajectory, made (outside the lock: two
    threads may both make it, and one copy is kept) by the first trajectory in flight that
    asks, kept while any that asked is running; None outside a trajectory."""
    store = HELD.get()
    if store is None:
        return None
    if key in store:
        return store[key]
    with _LOCK:
        entry = _SHARED.get(key)
    if entry is None:
        value = make()
        with _LOCK:
            entry = _SHARED.setdefault(key, [value, 0])
    with _LOCK:
        entry[1] += 1
    store[key] = entry[0]
    return entry[0]


@contextmanager
def holding() -> Iterator[dict[Any, Any]]:
    """One trajectory's store for the ``with`` block; on leaving, what only it held goes."""
    store: dict[Any, Any] = {}
    token = HELD.set(store)
    try:
        yield store
    finally:
        HELD.reset(token)
        with _LOCK:
            for key in store:
                entry = _SHARED.get(key)
                if entry is not None:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        del _SHARED[key]


def use_overlay_renderer(fn: OverlayRenderer | None) -> None:
    """Draw overlays with ``fn`` in this process (None: the entry point's default again)."""
    global _overlay_renderer
    _overlay_renderer = fn


def overlay_renderer() -> OverlayRenderer:
    """The renderer overlays are drawn with: the injected one, else the ``default`` entry of
    :data:`OVERLAY_GROUP`; an :class:`UnseenError` where neither exists (a broken install)."""
    if _overlay_renderer is not None:
        return _overlay_renderer
    if "default" not in _OVERLAYS:
        raise UnseenError(f"no overlay renderer: the entry-point group {OVERLAY_GROUP} names "
                          "no 'default' (reinstall the package: pip install -e .)")
    return _OVERLAYS["default"]


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


def part_bytes(part: ImagePart, max_side: int | None = None,
               draw_fitted: bool | None = None) -> tuple[bytes, str]:
    """The bytes a provider receives for this part, and their MIME type; with ``max_side``,
    an image whose longer side is longer is resized to fit (``engine.box.fit_within``, the
    size the box conventions assume) and encoded again in its own format. With
    ``draw_fitted`` too, an overlay is drawn on the fitted image and encoded once (the
    renderer is given the spec with ``"fit": max_side``)."""
    if part.overlay is None:
        return _file_bytes(part.path, *_stat(part.path), max_side)
    fit = bool(draw_fitted and max_side)
    key = ("overlay", part.path, *_stat(part.path),
           json.dumps(part.overlay, sort_keys=True, separators=(",", ":")), max_side, fit)
    renderer = overlay_renderer()
    spec: dict[str, Any] = part.overlay

    def make() -> tuple[bytes, str]:
        mime = "image/png" if spec.get("format") == "png" else "image/jpeg"
        if fit:
            return renderer(part.path, {**spec, "fit": max_side}), mime
        data = renderer(part.path, spec)
        return (data, mime) if max_side is None else _fitted(max_side, mime, data)

    # the same overlay again (votes, a retry, another sample's first step): encoded once
    out = hold(key, make)
    if out is None:  # outside a trajectory
        out = _RECENT.get(key) or make()
        _RECENT[key] = out
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return out


def _file_bytes(path: str, mtime_ns: int, size: int, max_side: int | None
                ) -> tuple[bytes, str]:
    data, mime = _read(path, mtime_ns, size), mime_type(path)
    return (data, mime) if max_side is None else _fitted(max_side, mime, data)


def request_images(request: Request) -> list[ImagePart]:
    """The image parts of a request, in order."""
    return [p for m in request.messages for p in m.parts if isinstance(p, ImagePart)]


async def prepare(parts: list[ImagePart], image: Any = None) -> None:
    """Draw and encode the overlays among ``parts`` in a worker thread (Pillow releases the
    GIL while it decodes, draws and encodes, so another core does it and the event loop
    goes on), leaving them where :func:`part_bytes` finds them; parts without an overlay
    cost nothing here. ``image``: the backend's image settings (``max_side``,
    ``draw_fitted``), or None."""
    todo = [p for p in parts if p.overlay is not None]
    max_side = getattr(image, "max_side", None)
    fitted = getattr(image, "draw_fitted", None)
    if todo:
        # to_thread copies the context: the thread takes what it makes into this
        # trajectory's store
        await asyncio.to_thread(lambda: [part_bytes(p, max_side, fitted) for p in todo])


@lru_cache(maxsize=64)
def _fitted(max_side: int, mime: str, data: bytes) -> tuple[bytes, str]:
    """``data`` fitted within ``max_side`` (as it is when it fits); JPEG stays JPEG, any
    other format is sent as PNG once resized."""
    import io

    from PIL import Image

    from .box import fit_within

    with Image.open(io.BytesIO(data)) as im:
        size = fit_within(im.width, im.height, max_side)
        if size == (im.width, im.height):
            return data, mime
        small = im.convert("RGB" if mime == "image/jpeg" else "RGBA").resize(
            size, Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    if mime == "image/jpeg":
        small.save(buf, "JPEG", quality=95)
    else:
        small.save(buf, "PNG")
        mime = "image/png"
    return buf.getvalue(), mime



def part_digest(part: ImagePart) -> str:
    """Digest that identifies what the model sees: file bytes plus overlay spec."""
    base = file_digest(part.path)
    if part.overlay is None:
        return base
    spec = json.dumps(part.overlay, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{base}|{spec}".encode()).hexdigest()


def data_url(part: ImagePart, max_side: int | None = None,
             draw_fitted: bool | None = None) -> str:
    """The part as a base64 data URL; an image without an overlay is encoded once while
    its file is unchanged (every sample and every call of an instance sends the same)."""
    if part.overlay is None:
        return _file_url(part.path, *_stat(part.path), max_side)
    data, mime = part_bytes(part, max_side, draw_fitted)
    return _url(data, mime)


def _url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


@lru_cache(maxsize=64)  # as many as _read keeps
def _file_url(path: str, mtime_ns: int, size: int, max_side: int | None) -> str:
    return _url(*_file_bytes(path, mtime_ns, size, max_side))


def max_pixels() -> int:
    """The pixel limit: ``$UNSEEN_MAX_IMAGE_PIXELS`` or :data:`DEFAULT_MAX_PIXELS`."""
    raw = os.environ.get(MAX_PIXELS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_PIXELS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise UnseenError(f"{MAX_PIXELS_ENV} must be a positive whole number, got {raw!r}")
    return value


def open_image(path: str | Path, limit: int | None = None):
    """The image at ``path``, opened lazily (its header read, no pixels decoded): a PIL
    image to use in a ``with``. An empty or unreadable file, or one of more than ``limit``
    pixels (default :func:`max_pixels`), is an :class:`ImageError` naming the file."""
    from PIL import Image, UnidentifiedImageError

    limit = limit or max_pixels()
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise ImageError(path, f"cannot be read ({exc.strerror or exc})") from None
    if size == 0:
        raise ImageError(path, "an empty file (0 bytes), not an image")
    if Image.MAX_IMAGE_PIXELS is not None and limit > Image.MAX_IMAGE_PIXELS:
        Image.MAX_IMAGE_PIXELS = limit  # Pillow's own guard must not stop what ours allows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            im = Image.open(path)
        except Image.DecompressionBombError:
            raise ImageError(path, f"an image of more than {2 * (Image.MAX_IMAGE_PIXELS or 0):,} "
                             f"pixels, over the limit of {limit:,} ({MAX_PIXELS_ENV} sets "
                             "it)") from None
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise ImageError(path, f"not a readable image ({exc})") from None
    width, height = im.size
    if width * height > limit:
        im.close()
        raise ImageError(path, f"{width}x{height} is {width * height:,} pixels, over the "
                         f"limit of {limit:,} ({MAX_PIXELS_ENV} sets it)")
    return im


#: the image formats the providers take (Pillow's names), and the file name endings that tell
#: them so: a request names an image's type by its file name (:func:`mime_type`)
FORMATS = {"JPEG": (".jpg", ".jpeg"), "MPO": (".jpg", ".jpeg"), "PNG": (".png",),
           "WEBP": (".webp",)}


def format_problem(path: str | Path, fmt: str | None) -> str | None:
    """Why an image of Pillow's format ``fmt`` at ``path`` cannot be sent as it is, or None:
    a format the providers do not take, or a name that calls it another type."""
    names = FORMATS.get(fmt or "")
    if names is None:
        return f"a {fmt or 'unknown'} image; the providers take PNG, JPEG or WebP: convert it"
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in names:
        return (f"a {'JPEG' if fmt == 'MPO' else fmt} image named "
                f"{ext or 'without an extension'}: name it {' or '.join(names)} (the name "
                "tells the provider its type)")
    return None


def load_image(path: str | Path, mode: str = "RGB", limit: int | None = None):
    """The decoded image at ``path`` in ``mode`` (guarded as :func:`open_image`; a file
    that fails while decoding, such as a truncated one, is an :class:`ImageError` too)."""
    with open_image(path, limit) as im:
        try:
            return im.convert(mode)
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageError(path, f"the image cannot be decoded ({exc})") from None


def inside(folder: str | Path, path: str | Path) -> bool:
    """Whether ``path`` lies in ``folder`` once both are resolved (symlinks followed)."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())
