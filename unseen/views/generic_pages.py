"""The generic views' TUI and HTML page (``views.generic``), and the TUI's step panes that
SceneFunRI's views build on (:class:`StepsTui`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from ..engine.records import ImageRecord, StepRecord, TrajectoryRecord
from ..engine.rundir import Head, RunDir
from ..renderers.terminal import HalfBlockImage
from .common import (
    MARK,
    ExportResult,
    banner,
    e,
    fold_label,
    outcome_text,
    shown_now,
    slug,
    small_view,
    strip_figure,
    value_text,
    who,
)
from .generic_tables import metric_rows, rows_html
from .protocol import ExportOptions, ExportPage, Pane, Section, TuiRow
from .select import step_number
from .steps import (
    column_steps,
    metrics_text,
    parsed_text,
    prompt_and_reply,
    step_caption,
    strip_tiles,
    usage_line,
)

IMAGE_COLS = 60  # the TUI's image pane, in cells


class StepsTui:
    """A run in the TUI, shown from its records alone: rows labelled by instance id, a
    trajectory's prediction and metrics, each step's prompt, reply and image."""

    def __init__(self, run: RunDir, views: Any) -> None:
        self.run, self.views = run, views
        self.name = run.config.run if run.config is not None else run.path.name
        self._safe = shown_now()

    # rows
    def row(self, head: Head, run: int) -> TuiRow:
        return TuiRow(head, run, self.views.outcome(head), head.instance_id, self.note(head))

    def note(self, head: Head) -> str:
        return head.error_kind or ""

    def search_text(self, row: TuiRow) -> str:
        return row.instance_id.lower()

    def group_label(self, model: str, strategy: str) -> str:
        return escape(self._safe(fold_label(strategy)))

    # panes
    def about(self, rows: list[TuiRow]) -> Pane:
        data = self.run.config.data if self.run.config is not None else "?"
        return Pane(Text(f"{self.views.title} run {self.name}\n{self.run.path}\ndata {data}\n"
                         f"{len(rows)} trajectories"))

    def group(self, rows: list[TuiRow]) -> Pane:
        counts = Counter(r.outcome for r in rows)
        t = Text(f"{rows[0].model} · {rows[0].strategy}\n{len(rows)} trajectories: "
                 + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
        sums: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            for k, v in r.metrics.items():
                if isinstance(v, int | float):
                    sums[k].append(v)
        for k, v in sums.items():
            t.append(f"\nmean {k} {value_text(sum(v) / len(v))} over {len(v)}")
        return Pane(t)

    def title(self, row: TuiRow, t: Text) -> None:
        t.append(f"{row.instance_id} · {who(row.model, row.head.kind)} · {row.strategy} · "
                 f"sample {row.sample}\n", style="bold")

    def detail(self, row: TuiRow, record: TrajectoryRecord) -> Pane:
        t = Text()
        self.title(row, t)
        t.append_text(outcome_text(row.outcome))
        t.append(f"  prediction {value_text(record['prediction'])}\n")
        t.append(f"metrics {metrics_text(record['metrics'])}\n")
        self._error(t, record)
        n = len(record["steps"])
        t.append(f"{n} step{'s' * (n != 1)} · {record['seconds']:.3f} s", style="dim")
        parts = [p for s in record["steps"] for p in s["images"]]
        return Pane(t, self.pictures(parts[-1:]) if parts else None)

    @staticmethod
    def _error(t: Text, record: TrajectoryRecord) -> None:
        if record["error"]:
            t.append(f"{record['error'].get('kind')}: {record['error'].get('message', '')}\n",
                     style="red")

    def step_labels(self, row: TuiRow, record: TrajectoryRecord) -> list[str]:
        params = record["params"]
        return [step_caption(s, params) for s in record["steps"]]

    def step(self, row: TuiRow, record: TrajectoryRecord, index: int) -> Pane:
        s = record["steps"][index]
        reply = s["reply"]
        info = s["info"]
        t = Text()
        t.append(f"step {step_number(s, index)} · {s['name']}"
                 + (f" · t={info['t']}" if "t" in info else ""), style="bold")
        t.append(f"   {row.instance_id} · {row.model} · {row.strategy}\n", style="dim")
        prompt_and_reply(t, s)
        if s["parse_error"]:
            t.append(f"parse error: {s['parse_error']}\n", style="red")
        elif not reply["error"]:
            t.append(f"parsed {parsed_text(s, record['params'])}\n")
        self.step_extra(row, record, s, t)
        usage_line(t, reply)
        return Pane(t, self.pictures(s["images"] or self.default_images(row)))

    def step_extra(self, row: TuiRow, record: TrajectoryRecord, s: StepRecord,
                   t: Text) -> None:
        if s["region"]:
            t.append(f"region {value_text(s['region'])}\n")

    def default_images(self, row: TuiRow) -> list[ImageRecord]:
        return []

    @staticmethod
    def pictures(parts: list[ImageRecord]) -> Any:
        """The images of ``parts`` as half-blocks, overlays redrawn."""
        if not parts:
            return None
        try:
            return Group(*(HalfBlockImage(small_view(p, IMAGE_COLS), IMAGE_COLS)
                           for p in parts))
        except OSError as exc:
            return Text(f"(image unreadable: {exc})")

    def prediction(self, record: TrajectoryRecord) -> str:
        return value_text(record["prediction"])

    def metrics_line(self, record: TrajectoryRecord) -> str:
        return metrics_text(record["metrics"])

    def column(self, row: TuiRow, record: TrajectoryRecord) -> Text:
        t = Text()
        t.append(f"{fold_label(row.strategy, 12)}\n", style="bold")
        t.append_text(outcome_text(row.outcome))
        t.append(f"\nprediction {self.prediction(record)}\n{self.metrics_line(record)}\n")
        self._error(t, record)
        params = record["params"]
        column_steps(t, record, lambda s: step_caption(s, params))
        return t


class GenericTui(StepsTui):
    def note(self, head: Head) -> str:
        if head.error_kind:
            return head.error_kind
        return " · ".join(f"{k} {value_text(v)}" for k, v in list(head.metrics.items())[:2])


# --- the HTML page ----------------------------------------------------------------------------


def simulated_models(heads: list[Head]) -> list[str]:
    """The models a simulation answered (rules are rules, not simulated respondents)."""
    return sorted({h.model for h in heads if h.kind == "sim"})


def export_page(views: Any, runs: list[RunDir], out_dir: Path, options: ExportOptions,
                result: ExportResult) -> ExportPage:
    """Banner, the metric table, each instance's outcomes, and step strips."""
    heads = [(k, h) for k, run in enumerate(runs) for h in run.heads()]
    rows = metric_rows(h for _, h in heads)
    result.table_rows, result.trajectories = len(rows), len(heads)
    img = out_dir / "img"
    img.mkdir(parents=True, exist_ok=True)
    by_inst: dict[tuple[int, str], list[Head]] = defaultdict(list)
    for k, h in heads:
        by_inst[(k, h.instance_id)].append(h)
    inst_rows, figures = [], []
    for (k, iid), hs in sorted(by_inst.items()):
        cells = []
        for h in sorted(hs, key=lambda h: (h.model, h.strategy, h.sample)):
            label = f"{who(h.model, h.kind)} · {h.strategy}" + (f" · s{h.sample}"
                                                                 if h.sample else "")
            outcome = views.outcome(h)
            bad = "" if outcome in ("correct", "answered") else " class=bad"
            status = h.status + (f" ({h.error_kind})" if h.error_kind else "")
            cell = (f"{e(label)}: <span{bad}>{e(MARK.get(outcome, ''))} {e(status)} · "
                    f"{e(value_text(h.prediction))}</span>")
            if len(result.strips) < options.max_strips:
                record = runs[k].record(h)
                tiles = strip_tiles(record, None)
                if tiles:
                    from ..renderers.strips import strip

                    n = len(result.strips)
                    name = f"strip-{n:03d}-{slug(iid)}-{slug(h.model)}-{slug(h.strategy)}.png"
                    strip(tiles, img / name, height=200, title=f"{iid} · {label}")
                    result.strips.append(img / name)
                    cell += f' <a href="#strip-{n}">steps</a>'
                    figures.append(strip_figure(n, name, f"{iid} · {label}"))
            cells.append(cell)
        run = f" <span class=note>({e(runs[k].path.name)})</span>" if len(runs) > 1 else ""
        inst_rows.append(f"<tr><td class='l id'>{e(iid)}{run}</td>"
                         f"<td class='l text'>{'<br>'.join(cells)}</td></tr>")
    if len(result.strips) < result.trajectories:
        result.notes.append(f"step strips for the first {len(result.strips)} of "
                            f"{result.trajectories} trajectories (those with images); any "
                            "other: unseen show RUN INSTANCE --png FILE")
    sections = [
        Section("", f"<h1>{e(views.title)} report</h1><p class=note>runs: "
                    f"{e(', '.join(str(r.path) for r in runs))}</p>"
                + banner(simulated_models([h for _, h in heads]))),
        Section("Comparison", rows_html(rows) + "<p class=note>metrics: the mean over "
                "trajectories, as the benchmark's scorer writes them</p>", "comparison"),
        Section("Instances", "".join(f"<p class=note>{e(n)}</p>" for n in result.notes)
                + '<div class=wrap><table class="instances"><thead><tr><th class=l>instance'
                "</th><th class=l>trajectories: outcome · prediction</th></tr></thead><tbody>"
                + "\n".join(inst_rows) + "</tbody></table></div>", "instances"),
    ]
    if figures:
        sections.append(Section("Step strips", "\n".join(figures), "strips"))
    return ExportPage(f"{views.title} report", sections)
