"""A trajectory's steps as every benchmark's views show them: one panel per step (the image
the model saw with its overlay redrawn, the prompt folded, the reply and reasoning, the
parsed answer, the region, tokens and time), the TUI's text of a step, captions, and the
steps as a PNG strip. A benchmark adds its own rows (SceneFunRI: a region's metrics against
the truth) through ``extra``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from ..engine.records import ImageRecord, ReplyRecord, StepRecord, TrajectoryRecord
from ..engine.types import LENGTH_STOPS
from .common import (
    PROMPT_LINES,
    REPLY_LINES,
    Pictures,
    box_text,
    fold,
    kv,
    model_view,
    usage_text,
    value_text,
)
from .select import NoMatch, numbers_text, step_number

_HIDDEN_INFO = {"t", "axis", "candidates"}  # shown in the panel title or not at all
Rows = list[tuple[str, RenderableType]]


def _is_box(v: Any) -> bool:
    return isinstance(v, list | tuple) and len(v) == 4 and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in v)


def parsed_text(step: StepRecord, params: dict[str, Any]) -> str:
    """A step's parsed answer: ``choice A (eliminate), confidence 0.955``, ``box [..]``, or
    its fields with numbers rounded."""
    parsed = step["parsed"]
    if isinstance(parsed, dict) and "choice" in parsed:
        mode = params.get("mode")
        text = f"choice {parsed['choice']}" + (f" ({mode})" if mode else "")
        extra = {k: v for k, v in parsed.items() if k != "choice" and v is not None}
        return text + "".join(f", {k} {value_text(v)}" for k, v in extra.items())
    if _is_box(parsed):
        return "box " + box_text(parsed)
    return value_text(parsed)


def step_caption(step: StepRecord, params: dict[str, Any]) -> str:
    """A short caption: ``t=2 eliminate A`` for a choice, else ``step 1 reflect [x1, …]``
    (steps numbered from 1, as iterations are)."""
    info, parsed = step["info"], step["parsed"]
    head = f"t={info['t']}" if "t" in info else f"step {step_number(step)} {step['name']}"
    if step["parse_error"] or step["reply"]["error"]:
        return f"{head} (no answer)"
    if isinstance(parsed, dict) and "choice" in parsed:
        return f"{head} {params.get('mode', 'choose')} {parsed['choice']}"
    if isinstance(parsed, dict) and isinstance(parsed.get("eliminate"), list):  # grid cells
        gone = ", ".join(str(c) for c in parsed["eliminate"]) or "none"
        return f"{head} eliminate cells {gone}"
    if step["region"] or _is_box(parsed):
        return f"{head} {box_text(step['region'] or parsed)}"
    return f"{head} {value_text(parsed)}"


def _image_line(p: ImageRecord) -> str:
    spec = p["overlay"] or {}
    what = Path(p["path"]).name
    if spec.get("crop"):
        what += f", crop {box_text(spec['crop'])}"
    if spec.get("labels"):
        what += ", overlay " + " ".join(
            f"{lab} {box_text(b)}" for lab, b in zip(spec["labels"], spec["boxes"], strict=False))
    return what


def answer_rows(s: StepRecord, lines: int | None, width: int, parsed: Text) -> Rows:
    """A step's reply (or its error) and reasoning folded after ``lines``, then the parsed
    answer (or why it could not be read)."""
    reply = s["reply"]
    rows: Rows = []
    if (err := reply["error"]) is not None:
        rows.append(("error", Text(f"{err['kind']}: {err['message']}", style="red")))
    else:
        rows.append(("reply", Text(fold(reply["text"], lines, width))))
    if reply["reasoning"]:
        rows.append(("reasoning", Text(fold(reply["reasoning"], lines, width), style="italic")))
    if s["parse_error"]:
        rows.append(("error", Text(f"parse: {s['parse_error']}", style="red")))
    elif not reply["error"]:
        rows.append(("parsed", parsed))
    return rows


def _cut(reply: ReplyRecord) -> bool:
    return str(reply["finish_reason"] or "").lower() in LENGTH_STOPS


def step_panel(console: Console, pictures: Pictures, rec: TrajectoryRecord, s: StepRecord,
               full: bool, extra: Callable[[StepRecord], Rows] | None = None) -> Panel:
    """One step as a panel; ``extra(step)`` adds a benchmark's rows after the region."""
    reply, info = s["reply"], s["info"]
    width = pictures.text_width(console)
    fold_at = None if full else PROMPT_LINES
    short = None if full else REPLY_LINES
    rows: Rows = [("prompt", Text(fold(s["prompt"], fold_at, width)))]
    parts = s["images"]
    if parts:
        rows.append(("image", Text("\n".join(_image_line(p) for p in parts))))
    if s["messages"] > 1:
        rows.append(("messages", Text(f"{s['messages']} (the conversation so far, then this "
                                      "prompt)")))
    rows += answer_rows(s, short, width, Text(parsed_text(s, rec["params"])))
    if s["region"]:
        rows.append(("region", Text(box_text(s["region"]))))
    if extra is not None:
        rows += extra(s)
    shown_info = {k: v for k, v in info.items() if k not in _HIDDEN_INFO}
    if shown_info:
        rows.append(("info", Text(", ".join(f"{k}={value_text(v)}"
                                            for k, v in shown_info.items()))))
    rows.append(("tokens", Text(usage_text(reply["usage"]))))
    if reply["finish_reason"] and reply["finish_reason"] != "stop":
        rows.append(("stopped", Text(str(reply["finish_reason"]),
                                     style="yellow" if _cut(reply) else "")))
    if served := reply["served"]:  # what the provider says it served
        rows.append(("served", Text(", ".join(f"{k}={v}" for k, v in served.items()))))
    timing = f"latency {reply['latency_s']:.3f} s · step {s['seconds']:.3f} s"
    rows.append(("time", Text(timing + (" · cached" if reply["cached"] else ""))))
    pics = [pictures.step(p) for p in parts] if pictures.on else []
    title = f"step {step_number(s)} · {s['name']}"
    if "t" in info:
        title += f" · t={info['t']}" + (f", {info['axis']} cut" if info.get("axis") else "")
    bad = bool(s["parse_error"] or reply["error"])
    return Panel(pictures.layout(pics, kv(rows), console.width), title=escape(title),
                 title_align="left", border_style="red" if bad else "blue")


def cost_rows(rec: TrajectoryRecord) -> Rows:
    """Tokens over the steps, calls (cached ones apart), seconds and, for a real model, US
    dollars (its tokens at its price; ``no price`` without one)."""
    steps = rec["steps"]
    tot: Counter = Counter(input_tokens=0, output_tokens=0, reasoning_tokens=0,
                           cached_input_tokens=0)
    for s in steps:
        for k, v in s["reply"]["usage"].items():
            if isinstance(v, int | float):
                tot[k] += int(v)  # token counts
    calls = sum(1 for s in steps if not s["reply"]["cached"])
    return [("tokens", Text(usage_text(tot))),
            ("cost", Text(f"{calls} call{'s' * (calls != 1)} ({len(steps) - calls} cached) · "
                          f"{rec['seconds']:.3f} s" + _usd_text(rec, tot)))]


def _usd_text(rec: TrajectoryRecord, usage: dict[str, Any]) -> str:
    from ..backends.prices import price_for
    from ..engine.rundir import kind_of
    from ..evals import costs

    if kind_of(rec["backend"], rec["simulated"]) != "model":
        return ""
    price = price_for(rec["model"])
    if price is None:
        return f" · {costs.NO_PRICE}"
    return f" · ${costs.usd(costs.cost_of(usage, price))} ({price.describe()})"


def metrics_text(m: dict[str, Any] | None) -> str:
    """Every metric, as the record has it: ``hit 1 · iou 0.412``."""
    if not m:
        return "—"
    return " · ".join(f"{k} {value_text(v)}" for k, v in m.items())


def prompt_and_reply(t: Text, s: StepRecord) -> None:
    """A step's prompt, then its reply (or error) and reasoning, for the TUI."""
    reply = s["reply"]
    t.append("prompt\n", style="bold cyan")
    t.append(s["prompt"] + "\n")
    if s["messages"] > 1:
        t.append(f"({s['messages']} messages: the dialogue so far, then this prompt)\n",
                 style="dim")
    if (err := reply["error"]) is not None:
        t.append(f"error {err['kind']}: {err['message']}\n", style="red")
    else:
        t.append("reply\n", style="bold cyan")
        t.append(reply["text"] + "\n")
    if reply["reasoning"]:
        t.append("reasoning\n", style="bold cyan")
        t.append(reply["reasoning"] + "\n", style="italic")


def usage_line(t: Text, reply: ReplyRecord) -> None:
    u = reply["usage"]
    t.append(f"tokens in {u['input_tokens']} · out {u['output_tokens']} · "
             f"latency {reply['latency_s']:.3f} s"
             + (" · cached" if reply["cached"] else ""), style="dim")


def column_steps(t: Text, rec: TrajectoryRecord, caption: Callable[[StepRecord], str]) -> None:
    """The compare view's steps: caption, then the reply's first four lines."""
    for s in rec["steps"]:
        t.append(f"\n{caption(s)}\n", style="bold cyan")
        reply = s["reply"]
        text = err["message"] if (err := reply["error"]) else reply["text"]
        lines = text.splitlines()
        t.append("\n".join(lines[:4]) + (" …" if len(lines) > 4 else "") + "\n")


def strip_tiles(rec: TrajectoryRecord, step: int | None, default_image: str | None = None):
    """A strip tile per step (its first image, overlay redrawn; ``default_image`` for a step
    that sent none), or only step number ``step`` (from 1)."""
    from ..renderers.strips import Tile

    params = rec["params"]
    tiles, have = [], []
    for s in rec["steps"]:
        parts = s["images"] or ([ImageRecord(type="image", path=default_image, overlay=None)]
                                if default_image else [])
        if parts:
            have.append(step_number(s))
        if parts and (step is None or step_number(s) == step):
            tiles.append(Tile(model_view(parts[0]), step_caption(s, params)))
    if step is not None and not tiles:
        raise NoMatch(f"no step {step} with an image in {rec['model']} {rec['strategy']} "
                      f"sample {rec['sample']} (steps with an image: {numbers_text(have)})")
    return tiles
