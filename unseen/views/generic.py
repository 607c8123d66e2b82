"""The views of a benchmark that registered none: what every run directory holds, shown
without knowing what its instances are.

- **summary**: per (model, strategy) the trajectories, instances, answered %, and the mean of
  every metric the benchmark's scorer wrote (as the scorer wrote it, not ×100), then the
  unanswered by reason;
- **instance**: each matching trajectory's steps (prompt, reply, the images the model saw with
  their overlays redrawn, the parsed answer), then its status, prediction and metrics;
- **strip**: a trajectory's step images as one PNG;
- **compare**: the summary's table as a table, JSON, CSV, markdown or LaTeX;
- **tui** and **export**: ``views.generic_pages``.

The outcome of an answered trajectory is the first metric whose value is 0 or 1 (1: correct);
a benchmark without such a metric has no verdict (``answered``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from ..engine.records import TrajectoryRecord
from ..engine.rundir import Head, RunDir, RunDirError
from .common import (
    ExportResult,
    Pictures,
    kv,
    record_who,
    status_text,
    value_text,
)
from .generic_tables import metric_rows, render_rows, verdict
from .protocol import (
    CompareOptions,
    CurveOptions,
    ExportOptions,
    ExportPage,
    FigureOptions,
    Filters,
)
from .select import NoMatch, find_instance, narrow, step_number, with_step
from .steps import Rows, cost_rows, metrics_text, step_panel, strip_tiles


def select(run: RunDir, instance: str, filters: Filters) -> list[TrajectoryRecord]:
    """The matching trajectories of one instance, read and checked in full."""
    heads = run.heads()
    iid = find_instance([h.instance_id for h in heads], instance, str(run.path))
    chosen = narrow([h for h in heads if h.instance_id == iid], filters,
                    f"instance {iid!r} of {run.path}", get=getattr)
    chosen.sort(key=lambda h: (h.model, h.strategy, h.sample))
    return [run.record(h) for h in chosen]


class GenericViews:
    """Views of any benchmark's runs (see the module's docstring)."""

    def __init__(self, name: str, outcome: Callable[[Head], str] | None = None, *,
                 title: str | None = None) -> None:
        self.name, self.title = name, title or name
        self._outcome = outcome

    def outcome(self, head: Head) -> str:
        return self._outcome(head) if self._outcome is not None else verdict(head)

    # --- show ---------------------------------------------------------------------------

    def summary(self, run: RunDir, console: Console, filters: Filters) -> None:
        heads = narrow(run.heads(), filters, str(run.path), get=getattr)
        name = run.config.run if run.config is not None else run.path.name
        console.rule(f"{escape(self.title)} run {escape(name)} · {len(heads)} trajectories")
        console.print(render_rows(metric_rows(heads), "table", self.title, console.width))
        failures: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for h in heads:
            if h.error_kind:
                failures[(h.model, h.strategy)][h.error_kind] += 1
        if failures:
            console.print(Text("unanswered, by reason", style="bold"))
            for (m, s), counts in sorted(failures.items()):
                console.print(f"  {escape(m)} · {escape(s)}: " + ", ".join(
                    f"{k} {v}" for k, v in counts.most_common()), highlight=False)
        outcomes = Counter(self.outcome(h) for h in heads)
        console.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
                      + " · one instance in full: unseen show RUN INSTANCE", highlight=False)

    def instance(self, run: RunDir, instance_id: str, console: Console,
                 filters: Filters) -> None:
        records = select(run, instance_id, filters)
        if filters.step is not None:
            records = with_step(records, filters.step)
        pictures = Pictures(console, filters.images)
        for r in records:
            console.rule(f"{escape(r['instance_id'])} · {escape(record_who(r))} · "
                         f"{escape(r['strategy'])} · sample {r['sample']}")
            steps = [s for s in r["steps"]
                     if filters.step is None or step_number(s) == filters.step]
            for s in steps:
                console.print(step_panel(console, pictures, r, s, filters.full))
            if filters.step is None:
                rows: Rows = [("status", Text(status_text(r),
                                        style="red" if r["error"] else "green"))]
                if r["error"]:
                    rows.append(("error", Text(r["error"]["message"], style="red")))
                rows += [("prediction", Text(value_text(r["prediction"]), style="bold")),
                         ("metrics", Text(metrics_text(r["metrics"]))), *cost_rows(r)]
                console.print(Panel(kv(rows), title="result", title_align="left",
                                    border_style="red" if r["error"] else "green"))

    def strip_png(self, run: RunDir, instance_id: str, out: Path, filters: Filters):
        from ..renderers.strips import strip

        records = select(run, instance_id, filters)
        if len(records) > 1:
            raise NoMatch(f"--png draws one trajectory; {len(records)} match: narrow with "
                          "--strategy, --model, --sample")
        r = records[0]
        tiles = strip_tiles(r, filters.step)
        if not tiles:
            raise NoMatch(f"{r['instance_id']}: no step of this trajectory sent an image")
        title = (f"{r['instance_id']} · {record_who(r, loud=False)} · {r['strategy']} · "
                 f"sample {r['sample']} · {status_text(r)} · {value_text(r['prediction'])}")
        _, layout = strip(tiles, out, title=title)
        return layout

    # --- tables ---------------------------------------------------------------------------

    def compare(self, runs: list[RunDir], options: CompareOptions, fmt: str,
                width: int | None) -> str | RenderableType:
        if options.baseline or options.paper:
            raise RunDirError(f"--baseline and --paper apply to SceneFunRI runs, not to "
                              f"{self.title} runs")
        return render_rows(metric_rows(h for run in runs for h in run.heads()), fmt,
                           self.title, width)

    def curve(self, runs: list[RunDir], options: CurveOptions, notes: list[str]):
        raise RunDirError(f"{runs[0].path} is a {self.title} run: `unseen curve` draws "
                          "SceneFunRI regions per iteration; see `unseen show` and "
                          "`unseen compare`")

    def figure(self, runs: list[RunDir], options: FigureOptions):
        raise RunDirError(f"{runs[0].path} is a {self.title} run: `unseen figure` draws "
                          "SceneFunRI boxes; see `unseen show RUN INSTANCE --png FILE`")

    # --- tui and export -------------------------------------------------------------------

    def tui(self, run: RunDir):
        from .generic_pages import GenericTui

        return GenericTui(run, self)

    def export(self, runs: list[RunDir], out_dir: Path, options: ExportOptions,
               result: ExportResult) -> ExportPage:
        from .generic_pages import export_page

        return export_page(self, runs, out_dir, options, result)
