"""A Director study run in the TUI: (model, condition) → scenes → turns, the model named as
the study names it; a row's outcome is the director-view block (a right report where no
block is asked); the image pane shows the scene with the hidden block outlined red, the
director-view block green and the chosen block magenta."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from ...engine.records import TrajectoryRecord
from ...engine.rundir import Head, RunDir
from ...renderers.terminal import HalfBlockImage
from ..common import OUTCOMES, outcome_text, shown_now
from ..generic_pages import IMAGE_COLS
from ..protocol import Pane, TuiRow
from ..steps import column_steps, prompt_and_reply, usage_line
from .marks import choice_role, fields_text, key_text, legend, marked_scene, measures_text
from .marks import step_caption as turn_caption
from .run import DirectorRun


def label_parts(label: str) -> dict[str, str]:
    """``director:batch=q,condition=move`` → {"batch": "q", "condition": "move"}."""
    _, _, rest = label.partition(":")
    return dict(kv.split("=", 1) for kv in rest.split(",") if "=" in kv)


def note(head: Head) -> str:
    """``block 7 · hidden`` / ``block 6 · dir-view`` / ``visible ✓`` for a row."""
    if head.status != "answered":
        return head.error_kind or ""
    pred = head.prediction if isinstance(head.prediction, dict) else {}
    m = head.metrics
    parts = []
    if "block" in pred:
        role = " hidden" if m.get("hidden") else " dir-view" if m.get("dv") else ""
        parts.append(f"block {pred['block']}{role}")
    for f, k in (("visible", "accuracy"), ("known", "known"), ("count", "count")):
        if m.get(k) is not None and f in pred:
            parts.append(f"{f} {'✓' if m[k] >= 1 else '✗'}")
    return " · ".join(parts)


class DirectorTui:
    def __init__(self, run: RunDir, views: Any) -> None:
        self.views = views
        self.study = DirectorRun.open(run)
        self.name = run.config.run if run.config is not None else run.path.name
        self.scenes, self.note_ = self.study.scenes()
        safe = shown_now()
        self.keys = {sid: safe(key_text(i.truth)) for sid, i in self.scenes.items()}
        self._safe = safe

    def row(self, head: Head, run: int) -> TuiRow:
        return TuiRow(head, run, self.views.outcome(head), head.instance_id, note(head),
                      self.study.model(head))

    def search_text(self, row: TuiRow) -> str:
        return f"{row.instance_id} {self.keys.get(row.instance_id, '')}".lower()

    def group_label(self, model: str, strategy: str) -> str:
        parts = label_parts(strategy)
        return (f"{escape(self._safe(parts.get('condition', strategy)))} "
                f"[dim]batch {escape(self._safe(parts.get('batch', '?')))}[/]")

    def about(self, rows: list[TuiRow]) -> Pane:
        run = self.study.run
        design = self.study.design.get("name", "?")
        return Pane(Text(f"Director study {design} · run {self.name}\n{run.path}\nscenes "
                         f"{run.config.data if run.config else '?'}\n{len(rows)} replies"
                         + (f"\n{self.note_}" if self.note_ else "")))

    def group(self, rows: list[TuiRow]) -> Pane:
        parts = label_parts(rows[0].strategy)
        counts = Counter(r.outcome for r in rows)
        t = Text(f"{rows[0].model} · {parts.get('condition', rows[0].strategy)} · batch "
                 f"{parts.get('batch', '?')}\n{len(rows)} trajectories: "
                 + ", ".join(f"{k} {counts[k]}" for k in OUTCOMES[1:]))
        for key, name in (("hidden", "hidden block"), ("dv", "director-view block"),
                          ("accuracy", "visibility report")):
            vals = [r.metrics[key] for r in rows
                    if r.status == "answered" and r.metrics.get(key) is not None]
            if vals:
                t.append(f"\n{name}: {100 * sum(vals) / len(vals):.1f}% of {len(vals)} answered")
        return Pane(t)

    def _image(self, row: TuiRow, chosen: Any) -> Any:
        inst = self.scenes.get(row.instance_id)
        if inst is None:
            return Text(f"(scene unavailable: {self.note_ or 'not in its folder'})")
        try:
            small = marked_scene(inst, chosen, IMAGE_COLS)
        except OSError as exc:
            return Text(f"(image unreadable: {exc})")
        return Group(legend(inst, chosen), HalfBlockImage(small, IMAGE_COLS))

    def _head(self, row: TuiRow, rec: TrajectoryRecord, t: Text) -> None:
        parts = label_parts(row.strategy)
        t.append(f"{row.instance_id} · {row.model} · {parts.get('condition', row.strategy)} · "
                 f"batch {parts.get('batch', '?')} · sample {row.sample}\n", style="bold")
        t.append_text(outcome_text(row.outcome))
        pred = rec["prediction"]
        t.append(f"  {fields_text(pred)}")
        inst = self.scenes.get(row.instance_id)
        if inst is not None and isinstance(pred, dict) and "block" in pred:
            t.append(f" ({choice_role(pred['block'], inst.truth)})")
        t.append("\n")
        if inst is not None:
            t.append(f"key {self.keys[row.instance_id]}\n", style="dim")
        t.append("measures ").append_text(measures_text(rec["metrics"]))
        t.append("\n")
        if rec["error"]:
            t.append(f"{rec['error'].get('kind')}: {rec['error'].get('message', '')}\n",
                     style="red")

    def detail(self, row: TuiRow, record: TrajectoryRecord) -> Pane:
        t = Text()
        self._head(row, record, t)
        n = len(record["steps"])
        t.append(f"{n} turn{'s' * (n != 1)} · {record['seconds']:.3f} s", style="dim")
        pred = record["prediction"]
        return Pane(t, self._image(row, pred.get("block") if isinstance(pred, dict) else None))

    def step_labels(self, row: TuiRow, record: TrajectoryRecord) -> list[str]:
        return [turn_caption(s) for s in record["steps"]]

    def step(self, row: TuiRow, record: TrajectoryRecord, index: int) -> Pane:
        s = record["steps"][index]
        reply = s["reply"]
        info = s["info"]
        n = len(record["steps"])
        t = Text()
        t.append(f"turn {info.get('turn', s['index'] + 1)} of {n}", style="bold")
        if info.get("fields"):
            t.append(f" · asks {', '.join(info['fields'])}", style="bold")
        parts = label_parts(row.strategy)
        t.append(f"   {row.instance_id} · {row.model} · {parts.get('condition', row.strategy)}\n",
                 style="dim")
        prompt_and_reply(t, s)
        if s["parse_error"]:
            t.append(f"parse error: {s['parse_error']}\n", style="red")
        elif not reply["error"]:
            t.append("parsed ", style="bold cyan").append(fields_text(s["parsed"]) + "\n")
        usage_line(t, reply)
        parsed = s["parsed"]
        return Pane(t, self._image(row, parsed.get("block") if isinstance(parsed, dict)
                                   else None))

    def column(self, row: TuiRow, record: TrajectoryRecord) -> Text:
        t = Text()
        self._head(row, record, t)
        column_steps(t, record, turn_caption)
        return t
