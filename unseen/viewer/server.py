"""``unseen view``'s server: the human page's way of serving (``backends.human_web``:
Starlette on uvicorn, 127.0.0.1 only, every path under a random token), one static page
(``static/``: HTML, JS and CSS, no CDN) and a small JSON API, relative to the address:

- ``api/runs``: every run's summary (benchmark, models, strategies, progress, started,
  simulated, running, a version that grows when its journal changed);
- ``api/run/N?v=V``: run N's table (``{"same": true}`` while its version is still V);
- ``api/run/N/instance/ID``: every trajectory of instance ID, steps and all;
- ``api/run/N/image/KEY/STEP/PART``: a step's image with its overlay, as PNG;
- ``api/run/N/strip/KEY``: the trajectory as its benchmark draws it (PNG);
- ``api/run/N/figures``: the report's curves and plots (SPoE's per-iteration curves, the
  Director's forest and rate plots), as paths under ``report/N/``;
- ``report/N/``: the run's ``unseen export`` page (tables, curves, plots), made on first ask
  and again once the journal changed.

Every answer is bounded: the page polls (no long-lived connection) and stops polling a run
once it is no longer running.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..backends.human_web import HEADERS, LocalServer
from ..engine.errors import UnseenError
from .index import Catalog, RunView, ViewError
from .pages import step_png, strip_png, trajectory_json

CSP = ("default-src 'none'; img-src 'self'; connect-src 'self'; style-src 'self'; "
       "script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
REPORT_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'"
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}


def static_text(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


class ViewServer(LocalServer):
    """The viewer of the runs in ``catalog``."""

    port_hint = "--port N"

    def __init__(self, catalog: Catalog, port: int = 0):
        super().__init__(port)
        self.catalog = catalog
        self._scratch: Path | None = None  # made on the first strip or report
        self._made: dict[tuple[str, int, int], Path] = {}
        self._figures: dict[int, list[str]] = {}  # by run: its report's curves and plots

    def routes(self, base: str) -> list[Route]:
        files = {name: static_text(name) for name in STATIC}
        page = static_text("index.html")

        def fail(exc: Exception, status: int = 404) -> Response:
            return JSONResponse({"error": str(exc)}, status, headers=HEADERS)

        async def run_of(request: Request) -> RunView:
            return await asyncio.to_thread(self.catalog.get, request.path_params["n"])

        async def index(request: Request) -> Response:
            return HTMLResponse(page, headers={**HEADERS, "Content-Security-Policy": CSP})

        async def slash(request: Request) -> Response:
            return RedirectResponse(base + "/", headers=HEADERS)

        async def static(request: Request) -> Response:
            name = request.path_params["name"]
            if name not in files:
                return fail(ViewError("no such file"))
            return Response(files[name], media_type=STATIC[name], headers=HEADERS)

        async def runs(request: Request) -> Response:
            return JSONResponse({"runs": await asyncio.to_thread(self.catalog.listing)},
                                headers=HEADERS)

        def answers(handler: Callable[[Request], Awaitable[Response]]):
            """``handler``, with what a user can cause (an unknown run, instance, key or
            file, an image gone, a step without one) as a 404 naming it."""
            async def guarded(request: Request) -> Response:
                try:
                    return await handler(request)
                except (UnseenError, OSError, ValueError) as exc:
                    return fail(exc)
            return guarded

        @answers
        async def table(request: Request) -> Response:
            view = await run_of(request)
            if request.query_params.get("v") == str(view.version):
                return JSONResponse({"same": True, "summary": view.summary()}, headers=HEADERS)
            return JSONResponse(await asyncio.to_thread(view.table), headers=HEADERS)

        @answers
        async def instance(request: Request) -> Response:
            view = await run_of(request)
            iid = request.path_params["iid"]
            rows = sorted((r for r in view.rows if r.instance_id == iid),
                          key=lambda r: (r.model, r.strategy, r.sample))
            if not rows:
                raise ViewError(f"run {view.number}: no instance {iid!r}")
            out = await asyncio.to_thread(
                lambda: [trajectory_json(r, view.read(r.head.key), view.tui) for r in rows])
            return JSONResponse({"summary": view.summary(), "trajectories": out},
                                headers=HEADERS)

        @answers
        async def image(request: Request) -> Response:
            p = request.path_params
            view = await run_of(request)
            rec = await asyncio.to_thread(view.read, p["key"])
            data = await asyncio.to_thread(step_png, rec, p["step"], p["part"])
            if data is None:
                raise ViewError("no such image")
            return Response(data, media_type="image/png", headers=HEADERS)

        @answers
        async def strip(request: Request) -> Response:
            view = await run_of(request)
            row = view.row(request.path_params["key"])
            made = (f"strip-{row.head.key}", view.number, view.version)
            path = self._made.get(made)
            if path is None:
                out = self.scratch / f"strip-{view.number}-{view.version}-{row.head.key}.png"
                path = await asyncio.to_thread(strip_png, view.views, view.run, row, out)
                self._keep(made, path)
            return FileResponse(path, media_type="image/png", headers=HEADERS)

        @answers
        async def report(request: Request) -> Response:
            view = await run_of(request)
            folder = await asyncio.to_thread(self._report, view)
            name = request.path_params.get("name") or "index.html"
            path = (folder / name).resolve()
            if folder.resolve() not in path.parents or not path.is_file():
                raise ViewError("no such file")
            return FileResponse(path, headers={**HEADERS, "Content-Security-Policy": REPORT_CSP})

        @answers
        async def figures(request: Request) -> Response:
            view = await run_of(request)
            names = await asyncio.to_thread(self.figures, view)
            return JSONResponse({"figures": [f"report/{view.number}/{n}" for n in names]},
                                headers=HEADERS)

        return [
            Route(base, slash),
            Route(base + "/", index),
            Route(base + "/static/{name}", static),
            Route(base + "/api/runs", runs),
            Route(base + "/api/run/{n:int}", table),
            Route(base + "/api/run/{n:int}/instance/{iid:path}", instance),
            Route(base + "/api/run/{n:int}/image/{key}/{step:int}/{part:int}", image),
            Route(base + "/api/run/{n:int}/strip/{key}", strip),
            Route(base + "/api/run/{n:int}/figures", figures),
            Route(base + "/report/{n:int}/", report),
            Route(base + "/report/{n:int}/{name:path}", report),
        ]

    @property
    def scratch(self) -> Path:
        """Where the strips and reports are made (removed when the server stops)."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="unseen-view-"))
        return self._scratch

    async def stop(self) -> None:
        await super().stop()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _keep(self, made: tuple[str, int, int], path: Path) -> None:
        """Remember what was made for this version of a run; what older versions of that
        run made is forgotten (a running run would otherwise pile them up)."""
        for old in [k for k in self._made if k[1] == made[1] and k[2] < made[2]]:
            gone = self._made.pop(old)
            if gone.is_dir():
                shutil.rmtree(gone, ignore_errors=True)
            else:
                gone.unlink(missing_ok=True)
        self._made[made] = path

    def _report(self, view: RunView) -> Path:
        """The run's export page, made again once its journal changed."""
        from ..views.export import export_html

        made = ("report", view.number, view.version)
        folder = self._made.get(made)
        if folder is None:
            folder = self.scratch / f"report-{view.number}-{view.version}"
            result = export_html([view.run.path], folder, max_strips=10)
            self._keep(made, folder)
            self._figures[view.number] = [str(p.relative_to(folder)) for p in result.curves]
        return folder

    def figures(self, view: RunView) -> list[str]:
        """The report's curves and plots (paths under ``report/N/``)."""
        self._report(view)
        return self._figures.get(view.number, [])
