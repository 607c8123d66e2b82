"""A SceneFunRI run in the TUI: rows are instructions with their outcome (correct: a
CAcc@50 hit) and Dist; a trajectory shows its prediction red and the truth green; a step its
overlay and the region's metrics; strategies that narrow a region (their parameters have
``T``) show Dist per iteration as a sparkline (the trajectory's own, and the group's mean
from ``curves()``, computed in the background)."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from typing import Any

from PIL import Image
from rich.console import Group
from rich.text import Text

from ...engine.records import ImageRecord, StepRecord, TrajectoryRecord
from ...engine.rundir import Head, RunDir
from ...engine.types import Instance
from ...renderers.terminal import HalfBlockImage, cell_size
from ..common import OUTCOMES, box_text, image_size, outcome_text
from ..generic_pages import IMAGE_COLS, StepsTui
from ..protocol import Pane, TuiRow
from .data import light_instances
from .show import metrics_text


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


def dist_track(record: TrajectoryRecord, truth: list[float], size: tuple[int, int],
               unanswered: str = "full") -> list[float]:
    """Dist ×100 of the region after each iteration t (t = 0: the full image), by the rule
    of ``curves()``: a trajectory that stopped early keeps its last region, one that failed
    scores as unanswered from there (no Dist under ``skip``: the track ends there)."""
    from ...evals.scenefunri.report.curves import iterates_of, iteration_regions, trajectory_scores

    w, h = size
    found = iterates_of(record, [])
    if found is None:
        return []
    iterates, params = found
    inst = Instance(id=record["instance_id"], image="", width=w, height=h,
                    truth={"box": truth})
    regions = iteration_regions(record, iterates.node, iterates.length(params),
                                [0.0, 0.0, float(w), float(h)])
    scores = trajectory_scores(regions, inst, unanswered)  # type: ignore[arg-type]
    return [100 * s["dist"] for s in itertools.takewhile(lambda s: "dist" in s, scores)]


def spark_text(label: str, values: list[float]) -> str:
    from ...evals.scenefunri.report.curves import sparkline

    if not values:
        return f"{label}: —"
    best = min(range(len(values)), key=values.__getitem__)
    return (f"{label}: {sparkline(values)}  t=0 {values[0]:.1f} → t={len(values) - 1} "
            f"{values[-1]:.1f}  (best t={best}, {values[best]:.1f})")


def short_id(instance_id: str) -> str:
    """``100002-047fdadc-391a-...`` → ``047fdadc``: the first block of the uuid after the
    visit (the visit is every instance's of one room); an id of another shape, its first 12
    characters."""
    parts = instance_id.split("-")
    if len(parts) > 1 and len(parts[1]) >= 6:
        return parts[1]
    return instance_id[:12]


class SceneFunRITui(StepsTui):
    def __init__(self, run: RunDir, views: Any) -> None:
        super().__init__(run, views)
        self.instances, self.note_ = light_instances(run)
        self._curves: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()

    # rows
    def row(self, head: Head, run: int) -> TuiRow:
        inst = self.instances.get(head.instance_id)
        # the id's short part first: at 80 columns the instruction is cut, and instances
        # of one room share its opening words (`unseen show` takes any unique part of an id)
        label = f"{short_id(head.instance_id)}  {inst['instruction']}" if inst \
            else head.instance_id
        note = head.error_kind or f"Dist {pct(head.metrics.get('dist'))}"
        return TuiRow(head, run, self.views.outcome(head), label, note,
                      iterative="T" in head.params)

    def search_text(self, row: TuiRow) -> str:
        inst = self.instances.get(row.instance_id) or {}
        return f"{row.instance_id} {inst.get('instruction', '')}".lower()

    # panes
    def about(self, rows: list[TuiRow]) -> Pane:
        pane = super().about(rows)
        if self.note_ and isinstance(pane.text, Text):
            pane.text.append(f"\n{self.note_}", style="yellow")
        return pane

    def group(self, rows: list[TuiRow]) -> Pane:
        counts = Counter(r.outcome for r in rows)
        dists = [d for r in rows if (d := r.metrics.get("dist")) is not None]
        t = Text(f"{rows[0].model} · {rows[0].strategy}\n{len(rows)} trajectories: "
                 + ", ".join(f"{k} {counts[k]}" for k in OUTCOMES[1:]))
        if dists:
            t.append(f"\nmean Dist {100 * sum(dists) / len(dists):.1f}")
        if not any(r.iterative for r in rows):
            return Pane(t)
        model, strategy = rows[0].head.model, rows[0].head.strategy
        return Pane(t, curve=Text("Dist per iteration: computing…"),
                    background=lambda: self._group_curve(model, strategy),
                    background_key=(str(self.run.path), model, strategy))

    def _group_curve(self, model: str, strategy: str) -> Text:
        from ...evals.scenefunri.report.curves import curves

        with self._lock:
            if self._curves is None:
                self._curves = curves([self.run])
        vals = [r["dist"] for r in sorted(self._curves, key=lambda r: r["t"])
                if r["model"] == model and r["strategy"] == strategy]
        return Text(spark_text("mean Dist ×100 per t (curves)", vals))

    def _truth(self, row: TuiRow) -> tuple[dict[str, Any] | None, tuple[int, int] | None]:
        inst = self.instances.get(row.instance_id)
        return inst, (image_size(inst["image"]) if inst else None)

    def _track(self, row: TuiRow, record: TrajectoryRecord, inst, size) -> Text | None:
        if row.iterative and inst and size and inst.get("box"):
            from ...evals.scenefunri.report.curves import unanswered_rule

            return Text(spark_text("Dist ×100 per t", dist_track(
                record, inst["box"], size, unanswered_rule(self.run))))
        return None

    def detail(self, row: TuiRow, record: TrajectoryRecord) -> Pane:
        inst, size = self._truth(row)
        t = Text()
        self.title(row, t)
        if inst:
            t.append(f"task {inst['instruction']}\ntruth {box_text(inst['box'])}\n")
        t.append_text(outcome_text(row.outcome))
        t.append(f"  prediction {box_text(record['prediction'])}\n"
                 f"{metrics_text(record['metrics'])}\n")
        self._error(t, record)
        n = len(record["steps"])
        t.append(f"{n} step{'s' * (n != 1)} · {record['seconds']:.3f} s", style="dim")
        image = self._result(inst, record["prediction"], size) if inst and size else None
        return Pane(t, image, self._track(row, record, inst, size))

    @staticmethod
    def _result(inst: dict[str, Any], prediction: Any, size: tuple[int, int]) -> Any:
        from ...engine.images import load_image
        from ...renderers.strips import draw_result

        try:
            img = load_image(inst["image"])
        except OSError as exc:
            return Text(f"(image unreadable: {exc})")
        c, r = cell_size(size, IMAGE_COLS)
        sx, sy = 2 * c / size[0], 4 * r / size[1]

        def scale(b: Any) -> list[float] | None:
            return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] if b else None

        big = draw_result(img.resize((2 * c, 4 * r), Image.Resampling.LANCZOS),
                          scale(prediction), scale(inst.get("box")), line=2)
        small = big.resize((c, 2 * r), Image.Resampling.LANCZOS)
        return Group(Text("prediction red · truth green", style="dim"),
                     HalfBlockImage(small, IMAGE_COLS))

    def step(self, row: TuiRow, record: TrajectoryRecord, index: int) -> Pane:
        pane = super().step(row, record, index)
        inst, size = self._truth(row)
        pane.curve = self._track(row, record, inst, size)
        return pane

    def step_extra(self, row: TuiRow, record: TrajectoryRecord, s: StepRecord,
                   t: Text) -> None:
        from ...evals.scenefunri.metrics import score

        if not s["region"]:
            return
        t.append(f"region {box_text(s['region'])}\n")
        inst, size = self._truth(row)
        if inst and size and inst.get("box"):
            t.append(f"metrics {metrics_text(score(s['region'], inst['box'], *size))}\n")

    def default_images(self, row: TuiRow) -> list[ImageRecord]:
        inst = self.instances.get(row.instance_id)
        return [ImageRecord(type="image", path=inst["image"], overlay=None)] if inst else []

    def prediction(self, record: TrajectoryRecord) -> str:
        return box_text(record["prediction"])

    def metrics_line(self, record: TrajectoryRecord) -> str:
        return metrics_text(record["metrics"])
