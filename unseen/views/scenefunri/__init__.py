"""SceneFunRI's views: ``show`` (``show.py``), the TUI (``tui.py``), the HTML page
(``export.py``) and ``compare``, ``curve`` and ``figure`` (the tables and plots of
``evals.scenefunri``). Registered under the entry-point group ``unseen.views`` as
``scenefunri``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

from ...engine.errors import UnseenError
from ...engine.journal import RESUMABLE_ERRORS
from ...engine.rundir import Head, RunDir, RunDirError, run_serving_lines
from ..common import ExportResult
from ..protocol import (
    CompareOptions,
    CurveOptions,
    ExportOptions,
    ExportPage,
    FigureOptions,
    Filters,
)
from . import show

FORMATS = ("table", "json", "csv", "md", "latex")


class SceneFunRIViews:
    title = "SceneFunRI"

    def outcome(self, head: Head) -> str:
        """correct: a CAcc@50 hit."""
        if head.status == "answered":
            return "correct" if (head.metrics.get("cacc50") or 0) >= 1 else "wrong"
        return "error" if head.error_kind in RESUMABLE_ERRORS else "unanswered"

    def summary(self, run: RunDir, console: Console, filters: Filters) -> None:
        show.summary(run, console, filters)

    def instance(self, run: RunDir, instance_id: str, console: Console,
                 filters: Filters) -> None:
        show.instance(run, instance_id, console, filters)

    def strip_png(self, run: RunDir, instance_id: str, out: Path, filters: Filters):
        return show.strip_png(run, instance_id, out, filters)

    def compare(self, runs: list[RunDir], options: CompareOptions, fmt: str,
                width: int | None) -> str | RenderableType:
        from ...evals.scenefunri import render, summarize
        from ...evals.scenefunri.report.paper import paper_rows

        if fmt not in FORMATS:
            raise RunDirError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
        from ...backends.prices import price_for

        rows = summarize(runs, baseline=default_baseline(runs, options.baseline),
                         seed=options.seed, pool=options.pool, prices=price_for)
        if options.paper:
            rows += paper_rows()
        return render(rows, fmt, width=width)

    def curve(self, runs: list[RunDir], options: CurveOptions,
              notes: list[str]) -> str | RenderableType:
        from ...evals.scenefunri.report.curves import (
            CURVE_METRICS,
            curve_table,
            curves,
            direct_baselines,
            with_baselines,
        )

        if options.metric not in CURVE_METRICS:
            raise RunDirError(f"unknown metric {options.metric!r}; choose "
                              f"{', '.join(CURVE_METRICS)}")
        if options.fmt not in ("table", "json", "png"):
            raise RunDirError(f"unknown format {options.fmt!r}; choose table, json or png")
        rows = curves(runs, ceiling=options.ceiling, notes=notes)
        for run in runs:  # how the models were asked, under the curve as under a table
            notes += [line for line in run_serving_lines(run.config) if line not in notes]
        if not any(r["model"] != "oracle (ceiling)" for r in rows):
            raise RunDirError("no iterative region strategy (such as spoe) with an answered "
                              "trajectory in these runs")
        base = direct_baselines(runs)
        if options.fmt == "json":
            return json.dumps(with_baselines(rows, base), indent=2)
        if options.fmt == "png":
            from ...renderers.plots import curve_png

            path = curve_png(rows, options.metric,
                             options.out or Path(f"curve-{options.metric}.png"), base)
            return Text(f"wrote {path}")
        return curve_table(rows, options.metric, base)

    def figure(self, runs: list[RunDir], options: FigureOptions) -> Any:
        from ...evals.scenefunri.report.summary import figure_cells
        from ...renderers.figures import prediction_grid

        ids = options.instances
        if ids is None:
            from ...evals.scenefunri.report.picks import instance_dist, pick

            if options.pick is None:
                raise RunDirError("name the instances, or how to pick them (worst, best or "
                                  "random N)")
            how, n = options.pick
            scores = instance_dist(runs, sample=options.sample, models=options.models,
                                   strategies=options.strategies)
            ids = pick(scores, how, n, options.seed)
            if not ids:
                raise RunDirError("no scored trajectories match (check --model, --strategy, "
                                  "--sample)")
            options.said.append(f"{how} {len(ids)}: " + ", ".join(
                f"{i} (Dist {scores[i]:.1f})" for i in ids))
        insts, rows = figure_cells(runs, ids, sample=options.sample,
                                   models=options.models, strategies=options.strategies)
        if not rows:
            raise RunDirError("no trajectories of these instances match (check --model, "
                              "--strategy, --sample)")
        return prediction_grid(insts, rows, options.out, dpi=options.dpi)

    def tui(self, run: RunDir):
        from .tui import SceneFunRITui

        return SceneFunRITui(run, self)

    def export(self, runs: list[RunDir], out_dir: Path, options: ExportOptions,
               result: ExportResult) -> ExportPage:
        from .export import export

        return export(runs, out_dir, options, result)


VIEWS = SceneFunRIViews()


def default_baseline(runs: list[RunDir], baseline: str | None) -> str | None:
    """The strategy paired against: the one asked for; with none asked, ``direct`` where the
    runs hold it beside another strategy, as ``unseen run`` prints them; "" asks for none."""
    if baseline is not None:
        return baseline or None
    labels: set[str] = set()
    for run in runs:
        try:
            config = run.config
        except UnseenError:  # a run.json written by hand: its journal says
            config = None
        labels |= ({str(e.get("label")) for e in config.strategies} if config is not None
                   else {str(r.get("strategy")) for r in run.records()})
    return "direct" if "direct" in labels and len(labels) > 1 else None
