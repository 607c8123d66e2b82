"""``unseen export RUN_DIR... --html DIR``: a static report that opens in a browser, no server.

``DIR/index.html`` is the page the runs' benchmark views make (``BenchmarkViews.export``),
framed here: one title, the shared CSS (``common.CSS``) and the benchmark's own, the
sections with their headings, and contents where the benchmark asks for them. No
JavaScript. Every image lies in ``DIR/img/`` and is referenced by a relative path, so the
folder can be moved or zipped whole; every text from the runs is HTML-escaped. Runs of
several benchmarks are refused: export each kind into its own folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .common import ExportResult, e, page
from .protocol import ExportOptions, ExportPage
from .registry import open_runs


def export_html(run_dirs: Sequence[str | Path], out_dir: str | Path, *, baseline: str | None = None,
                max_strips: int = 30, pool: bool = False) -> ExportResult:
    """Write ``out_dir/index.html`` and its images under ``out_dir/img/``."""
    views, runs = open_runs(list(run_dirs), "export")
    out_dir = Path(out_dir)
    result = ExportResult(index=out_dir / "index.html")
    built = views.export(runs, out_dir, ExportOptions(baseline=baseline, max_strips=max_strips,
                                                       pool=pool),
                         result)
    result.index.write_text(render(built), encoding="utf-8")
    return result


def render(built: ExportPage) -> str:
    """The page: its sections under their headings, contents after the first when asked."""
    body: list[str] = []
    for i, s in enumerate(built.sections):
        if s.title:
            anchor = f' id="{e(s.anchor)}"' if s.anchor else ""
            body.append(f"<h2{anchor}>{e(s.title)}</h2>")
        body.append(s.html)
        if i == 0 and built.nav:
            links = []
            for t in built.sections:
                if t.title and t.anchor:
                    links.append(f'<li><a href="#{e(t.anchor)}">{e(t.title)}</a></li>')
                links += [f'<li><a href="#{e(a)}">{e(x)}</a></li>' for a, x in t.nav]
            body.append(f"<nav><ul>{''.join(links)}</ul></nav>")
    return page(built.title, body, built.css)
