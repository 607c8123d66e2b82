"""A trajectory as the page shows it, in plain JSON: every step's prompt, reply, reasoning,
parsed answer, region, tokens and time, as the terminal views word them (``views.steps``),
and the record's outcome, prediction and metrics. Text is sent as text: the page puts it in
the document with ``textContent``, never as HTML."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import Any, cast

from rich.text import Text

from ..engine.records import StepRecord, TrajectoryRecord
from ..views.common import (
    box_text,
    model_view,
    record_who,
    status_text,
    thumb,
    usage_text,
    value_text,
)
from ..views.protocol import Filters, TuiRow
from ..views.select import step_number
from ..views.steps import parsed_text, step_caption

MAX_TEXT = 200_000  # characters of one prompt or reply sent (the rest is cut, and says so)


def _cut(text: Any) -> str:
    text = str(text or "")
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… {len(text) - MAX_TEXT} more characters (see unseen show)"


def _benchmark_lines(tui: Any, row: TuiRow, rec: dict[str, Any], s: dict[str, Any],
                     region: str) -> list[str]:
    """What the run's benchmark adds to a step in the TUI (``step_extra``: SceneFunRI's
    metrics of the region against the truth), as lines of text; the region is shown apart."""
    extra = getattr(tui, "step_extra", None)
    if extra is None:
        return []
    text = Text()
    extra(row, rec, s, text)
    return [line for line in text.plain.splitlines()
            if line.strip() and line != f"region {region}"]


def step_json(rec: dict[str, Any], s: dict[str, Any], extra: list[str] | None = None
              ) -> dict[str, Any]:
    params = rec.get("params") or {}
    reply = s.get("reply") or {}
    err = reply.get("error") or {}
    usage = reply.get("usage") or {}
    return {
        "number": step_number(cast(StepRecord, s)), "name": str(s.get("name", "")),
        "caption": step_caption(cast(StepRecord, s), params),
        "prompt": _cut(s.get("prompt")), "messages": s.get("messages", 1),
        "reply": _cut(reply.get("text")), "reasoning": _cut(reply.get("reasoning")),
        "error": f"{err.get('kind')}: {err.get('message', '')}" if err else "",
        "parse_error": str(s.get("parse_error") or ""),
        "parsed": "" if err else parsed_text(cast(StepRecord, s), params),
        "region": box_text(s["region"]) if s.get("region") else "",
        "images": len(s.get("images") or []),
        "tokens": usage_text(reply["usage"]) if reply.get("usage") else "",
        "tokens_in": usage.get("input_tokens", 0), "tokens_out": usage.get("output_tokens", 0),
        "latency_s": reply.get("latency_s") or 0, "seconds": s.get("seconds") or 0,
        "cached": bool(reply.get("cached")), "finish": str(reply.get("finish_reason") or ""),
        "info": {str(k): value_text(v) for k, v in (s.get("info") or {}).items()},
        "benchmark": extra or [],
    }


def trajectory_json(row: TuiRow, rec: dict[str, Any], tui: Any = None) -> dict[str, Any]:
    """One trajectory: who, what, its outcome and every step (with what ``tui``, the run's
    benchmark views in the TUI, adds to each)."""
    metrics = rec.get("metrics") or {}
    return {
        "key": row.head.key, "instance": row.instance_id, "label": row.label,
        "model": record_who(cast(TrajectoryRecord, rec)), "strategy": row.strategy, "sample": row.sample,
        "outcome": row.outcome, "note": row.note, "status": status_text(cast(TrajectoryRecord, rec)),
        "simulated": bool(rec.get("simulated")),
        "error": str((rec.get("error") or {}).get("message") or ""),
        "prediction": value_text(rec.get("prediction")),
        "metrics": {str(k): value_text(v) for k, v in metrics.items()},
        "seconds": rec.get("seconds") or 0,
        "steps": [step_json(rec, s, _benchmark_lines(
            tui, row, rec, s, box_text(s["region"]) if s.get("region") else ""))
            for s in rec.get("steps") or []],
    }


def step_png(rec: dict[str, Any], step: int, part: int) -> bytes | None:
    """Image ``part`` of step number ``step`` as the model saw it (its overlay redrawn),
    reduced for a page; None when there is no such image."""
    for s in rec.get("steps") or []:
        if step_number(s) == step:
            parts = s.get("images") or []
            if not 0 <= part < len(parts):
                return None
            buf = BytesIO()
            thumb(model_view(parts[part]).convert("RGB")).save(buf, "PNG")
            return buf.getvalue()
    return None


def strip_png(views: Any, run: Any, row: TuiRow, out: Path) -> Path:
    """The trajectory as its benchmark draws it in one picture (``strip_png``: SPoE's region
    narrowing step by step, the Director's scene with the choice marked)."""
    head = row.head
    views.strip_png(run, head.instance_id, out,
                    Filters(strategy=head.strategy, model=head.model, sample=head.sample))
    return out
