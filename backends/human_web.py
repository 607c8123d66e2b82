"""The local page a person answers on: one static HTML page and a small JSON API.

Served with Starlette on uvicorn inside the caller's asyncio loop (the run's), on 127.0.0.1
only, every path under a random token (``secrets.token_urlsafe``), so only someone given the
address reaches it. What the page shows and what an answer means come from a
:class:`Source`: a ``human`` backend's pending requests, or a dataset build's candidates in
review mode. The API, relative to ``http://127.0.0.1:PORT/TOKEN/``:

- ``GET api/next?wait=S``: the item on screen now (the oldest pending one), else
  ``{"waiting": true}`` after at most S seconds, or ``{"done": true}`` once the source is
  closed. Items are plain JSON the page renders (see ``human_page.html``).
- ``GET api/image/ID/N``: the N-th image of item ID, its overlay drawn server-side.
- ``POST api/answer/ID`` with a JSON body: 200 when taken, 400 with ``error`` for an answer
  that does not fit the item, 404 for an unknown item, 409 for one already answered (a
  reload or a second tab): the first answer wins and the page moves on. Only the page's own
  answers are read: a body not sent as ``application/json`` is 415 (another site's form or
  ``text/plain`` fetch cannot send that without the browser asking first, and the page never
  allows it), an ``Origin`` other than the page's 403, and a body past :data:`MAX_BODY` 413,
  by its ``Content-Length`` or once that much has come, the rest unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
from collections.abc import Iterator
from importlib import resources
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..engine.images import part_bytes
from ..engine.types import ImagePart

HOST = "127.0.0.1"
MAX_WAIT_S = 25.0  # a long poll answers within this, so proxies and browsers never give up
MAX_BODY = 64_000  # bytes of an answer: a box, a choice, a few fields or a paragraph


class PageError(ValueError):
    """The page cannot be served (the port is taken, a web library is missing)."""


HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
           "X-Content-Type-Options": "nosniff"}
CSP = ("default-src 'none'; img-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; base-uri 'none'")


class Source(Protocol):
    """What a page serves: items to answer, their images, and where answers go."""

    async def next_item(self, wait: float) -> dict[str, Any]: ...

    def image_part(self, item_id: str, index: int) -> ImagePart | None: ...

    def answer(self, item_id: str, body: Any) -> tuple[int, dict[str, Any]]: ...


def page_html() -> str:
    return resources.files(__package__).joinpath("human_page.html").read_text(encoding="utf-8")


class LocalServer:
    """A Starlette app on 127.0.0.1 under a random token: ``await start()`` serves it and
    returns its address, ``await stop()`` ends it. ``port=0`` takes any free port. A
    subclass gives its routes (:meth:`routes`); the human page and ``unseen view`` share
    this one way of serving."""

    port_hint = "port=N"  # how the port is chosen, for the message when it is taken

    def __init__(self, port: int = 0):
        self.port = port
        self.token = secrets.token_urlsafe(18)
        self._server: Any = None
        self._task: asyncio.Task | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}/"

    def routes(self, base: str) -> list[Route]:
        """The app's routes, every path under ``base`` (``/TOKEN``)."""
        raise NotImplementedError

    def _app(self) -> Starlette:
        # a page on 127.0.0.1 answers only requests addressed to it (no DNS rebinding)
        return Starlette(routes=self.routes(f"/{self.token}"), middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=[HOST, "localhost"])])

    def _own(self, request: Request) -> bool:
        """Whether a POST comes from this page: a browser names the page that sent it
        (``Origin``, ``Sec-Fetch-Site``); a client that names none (a script) is taken."""
        origin = request.headers.get("origin")
        if origin is not None and origin not in (f"http://{HOST}:{self.port}",
                                                 f"http://localhost:{self.port}"):
            return False
        return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    async def start(self) -> str:
        """Serve the page; returns its address once it accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self.port))
        except OSError as exc:
            sock.close()
            raise PageError(f"cannot serve the page on {HOST}:{self.port} ({exc.strerror}); "
                            f"choose another port ({self.port_hint}) or leave it out") from None
        sock.listen(64)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_config=None, log_level="warning",
                                access_log=False, lifespan="off", ws="none",
                                timeout_graceful_shutdown=2)
        self._server = _Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():  # it failed before it started
                self._task.result()
                raise PageError("the page's server stopped before it started")
            await asyncio.sleep(0.01)
        return self.url

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._server = self._task = None


async def _body(request: Request) -> bytes | None:
    """The request's body, or None past :data:`MAX_BODY` bytes: refused by its
    ``Content-Length`` before a byte is read, else as soon as what came passes the limit
    (the rest is never read; the server closes the connection)."""
    length = request.headers.get("content-length", "0")
    if not length.isdigit() or int(length) > MAX_BODY:
        return None
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            return None
    return bytes(raw)


class PageServer(LocalServer):
    """One page for one source (see the module's docstring)."""

    def __init__(self, source: Source, port: int = 0):
        super().__init__(port)
        self.source = source

    def routes(self, base: str) -> list[Route]:
        html = page_html()

        async def page(request: Request) -> Response:
            return HTMLResponse(html, headers={**HEADERS, "Content-Security-Policy": CSP})

        async def slash(request: Request) -> Response:
            return RedirectResponse(base + "/", headers=HEADERS)

        async def next_item(request: Request) -> Response:
            try:
                wait = min(MAX_WAIT_S, max(0.0, float(request.query_params.get("wait", "0"))))
            except ValueError:
                return JSONResponse({"error": "wait must be a number of seconds"}, 400)
            return JSONResponse(await self.source.next_item(wait), headers=HEADERS)

        async def image(request: Request) -> Response:
            part = self.source.image_part(request.path_params["item"],
                                          request.path_params["index"])
            if part is None:
                return JSONResponse({"error": "no such image"}, 404, headers=HEADERS)
            try:
                data, mime = await asyncio.to_thread(part_bytes, part)
            except (OSError, RuntimeError, ValueError) as exc:  # a file gone, no renderer
                return JSONResponse({"error": f"the image cannot be shown: {exc}"}, 500,
                                    headers=HEADERS)
            return Response(data, media_type=mime, headers=HEADERS)

        async def answer(request: Request) -> Response:
            if not self._own(request):  # a page elsewhere posting here (a text/plain form)
                return JSONResponse({"error": "answers come from the page itself"}, 403,
                                    headers=HEADERS)
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":  # which no other origin can send unasked (CORS)
                return JSONResponse({"error": "the answer must be application/json"}, 415,
                                    headers=HEADERS)
            raw = await _body(request)
            if raw is None:
                return JSONResponse({"error": "the answer is too long"}, 413, headers=HEADERS)
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                return JSONResponse({"error": "the answer is not JSON"}, 400, headers=HEADERS)
            status, out = self.source.answer(request.path_params["item"], body)
            return JSONResponse(out, status, headers=HEADERS)

        return [
            Route(base, slash),
            Route(base + "/", page),
            Route(base + "/api/next", next_item),
            Route(base + "/api/image/{item}/{index:int}", image),
            Route(base + "/api/answer/{item}", answer, methods=["POST"]),
        ]


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: Ctrl-C belongs to the run, which stops
    the page as it ends (uvicorn would otherwise take it and keep the run waiting for an
    answer that can no longer come)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
