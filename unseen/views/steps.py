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


def parsed_text(step: dict[str, Any], params: dict[str, Any]) -> str:
    """A step's parsed answer: ``choice A (eliminate), confidence 0.955``, ``box [..]``, or
    its fields with numbers rounded."""
    parsed = step.get("parsed")
    if isinstance(parsed, dict) and "choice" in parsed:
        mode = params.get("mode")
        text = f"choice {parsed['choice']}" + (f" ({mode})" if mode else "")
        extra = {k: v for k, v in parsed.items() if k != "choice" and v is not None}
        return text + "".join(f", {k} {value_text(v)}" for k, v in extra.items())
    if _is_box(parsed):
        return "box " + box_text(parsed)
    return value_text(parsed)


def step_caption(step: dict[str, Any], params: dict[str, Any]) -> str:
    """A short caption: ``t=2 eliminate A`` for a choice, else ``step 1 reflect [x1, …]``
    (steps numbered from 1, as iterations are)."""
    info = step.get("info") or {}
    parsed = step.get("parsed")
    head = f"t={info['t']}" if "t" in info else f"step {step_number(step)} {step['name']}"
    if step.get("parse_error") or (step.get("reply") or {}).get("error"):
        return f"{head} (no answer)"
    if isinstance(parsed, dict) and "choice" in parsed:
        return f"{head} {params.get('mode', 'choose')} {parsed['choice']}"
    if isinstance(parsed, dict) and isinstance(parsed.get("eliminate"), list):  # grid cells
        gone = ", ".join(str(c) for c in parsed["eliminate"]) or "none"
        return f"{head} eliminate cells {gone}"
    if step.get("region") or _is_box(parsed):
        return f"{head} {box_text(step.get('region') or parsed)}"
    return f"{head} {value_text(parsed)}"


def _image_line(p: dict[str, Any]) -> str:
    spec = p.get("overlay") or {}
    what = Path(p["path"]).name
    if spec.get("crop"):
        what += f", crop {box_text(spec['crop'])}"
    if spec.get("labels"):
        what += ", overlay " + " ".join(
            f"{lab} {box_text(b)}" for lab, b in zip(spec["labels"], spec["boxes"], strict=False))
    return what


def answer_rows(s: dict[str, Any], lines: int | None, width: int, parsed: Text) -> Rows:
    """A step's reply (or its error) and reasoning folded after ``lines``, then the parsed
    answer (or why it could not be read)."""
    reply = s.get("reply") or {}
    rows: Rows = []
    if reply.get("error"):
        err = reply["error"]
        rows.append(("error", Text(f"{err.get('kind')}: {err.get('message', '')}", style="red")))
    else:
        rows.append(("reply", Text(fold(reply.get("text") or "", lines, width))))
    if reply.get("reasoning"):
        rows.append(("reasoning", Text(fold(reply["reasoning"], lines, width), style="italic")))
    if s.get("parse_error"):
        rows.append(("error", Text(f"parse: {s['parse_error']}", style="red")))
    elif not reply.get("error"):
        rows.append(("parsed", parsed))
    return rows


def _cut(reply: dict[str, Any]) -> bool:
    return str(reply.get("finish_reason") or "").lower() in LENGTH_STOPS


def step_panel(console: Console, pictures: Pictures, rec: dict[str, Any], s: dict[str, Any],
               full: bool, extra: Callable[[dict[str, Any]], Rows] | None = None) -> Panel:
    """One step as a panel; ``extra(step)`` adds a benchmark's rows after the region."""
    reply = s.get("reply") or {}
    info = s.get("info") or {}
    width = pictures.text_width(console)
    fold_at = None if full else PROMPT_LINES
    short = None if full else REPLY_LINES
    rows: Rows = [("prompt", Text(fold(s.get("prompt") or "", fold_at, width)))]
    parts = s.get("images") or []
    if parts:
        rows.append(("image", Text("\n".join(_image_line(p) for p in parts))))
    if s.get("messages", 1) > 1:
        rows.append(("messages", Text(f"{s['messages']} (the conversation so far, then this "
                                      "prompt)")))
    rows += answer_rows(s, short, width, Text(parsed_text(s, rec.get("params") or {})))
    if s.get("region"):
        rows.append(("region", Text(box_text(s["region"]))))
    if extra is not None:
        rows += extra(s)
    shown_info = {k: v for k, v in info.items() if k not in _HIDDEN_INFO}
    if shown_info:
        rows.append(("info", Text(", ".join(f"{k}={value_text(v)}"
                                            for k, v in shown_info.items()))))
    rows.append(("tokens", Text(usage_text(reply))))
    if reply.get("finish_reason") and reply.get("finish_reason") != "stop":
        rows.append(("stopped", Text(str(reply["finish_reason"]),
                                     style="yellow" if _cut(reply) else "")))
    if served := reply.get("served"):  # what the provider says it served
        rows.append(("served", Text(", ".join(f"{k}={v}" for k, v in served.items()))))
    timing = f"latency {reply.get('latency_s') or 0:.3f} s · step {s.get('seconds') or 0:.3f} s"
    rows.append(("time", Text(timing + (" · cached" if reply.get("cached") else ""))))
    pics = [pictures.step(p) for p in parts] if pictures.on else []
    title = f"step {step_number(s)} · {s.get('name', '')}"
    if "t" in info:
        title += f" · t={info['t']}" + (f", {info['axis']} cut" if info.get("axis") else "")
    bad = bool(s.get("parse_error") or reply.get("error"))
    return Panel(pictures.layout(pics, kv(rows), console.width), title=escape(title),
                 title_align="left", border_style="red" if bad else "blue")


def cost_rows(rec: dict[str, Any]) -> Rows:
    """Tokens over the steps, calls (cached ones apart), seconds and, for a real model, US
    dollars (its tokens at its price; ``no price`` without one)."""
    steps = rec.get("steps") or []
    tot: Counter = Counter()
    for s in steps:
        for k, v in ((s.get("reply") or {}).get("usage") or {}).items():
            if isinstance(v, int | float):
                tot[k] += v
    calls = sum(1 for s in steps if not (s.get("reply") or {}).get("cached"))
    return [("tokens", Text(usage_text({"usage": tot}))),
            ("cost", Text(f"{calls} call{'s' * (calls != 1)} ({len(steps) - calls} cached) · "
                          f"{rec.get('seconds') or 0:.3f} s" + _usd_text(rec, tot)))]


def _usd_text(rec: dict[str, Any], usage: dict[str, Any]) -> str:
    from ..backends.prices import price_for
    from ..engine.rundir import kind_of
    from ..evals import costs

    if kind_of(str(rec.get("backend", "")), bool(rec.get("simulated"))) != "model":
        return ""
    price = price_for(str(rec.get("model", "")))
    if price is None:
        return f" · {costs.NO_PRICE}"
    return f" · ${costs.usd(costs.cost_of(usage, price))} ({price.describe()})"


def metrics_text(m: dict[str, Any] | None) -> str:
    """Every metric, as the record has it: ``hit 1 · iou 0.412``."""
    if not m:
        return "—"
    return " · ".join(f"{k} {value_text(v)}" for k, v in m.items())


def prompt_and_reply(t: Text, s: dict[str, Any]) -> None:
    """A step's prompt, then its reply (or error) and reasoning, for the TUI."""
    reply = s.get("reply") or {}
    t.append("prompt\n", style="bold cyan")
    t.append((s.get("prompt") or "") + "\n")
    if s.get("messages", 1) > 1:
        t.append(f"({s['messages']} messages: the dialogue so far, then this prompt)\n",
                 style="dim")
    if reply.get("error"):
        err = reply["error"]
        t.append(f"error {err.get('kind')}: {err.get('message', '')}\n", style="red")
    else:
        t.append("reply\n", style="bold cyan")
        t.append((reply.get("text") or "") + "\n")
    if reply.get("reasoning"):
        t.append("reasoning\n", style="bold cyan")
        t.append(reply["reasoning"] + "\n", style="italic")


def usage_line(t: Text, reply: dict[str, Any]) -> None:
    u = reply.get("usage") or {}
    t.append(f"tokens in {u.get('input_tokens', 0)} · out {u.get('output_tokens', 0)} · "
             f"latency {reply.get('latency_s') or 0:.3f} s"
             + (" · cached" if reply.get("cached") else ""), style="dim")


def column_steps(t: Text, rec: dict[str, Any], caption: Callable[[dict[str, Any]], str]) -> None:
    """The compare view's steps: caption, then the reply's first four lines."""
    for s in rec.get("steps") or []:
        t.append(f"\n{caption(s)}\n", style="bold cyan")
        reply = s.get("reply") or {}
        text = (reply.get("error") or {}).get("message") or reply.get("text") or ""
        lines = text.splitlines()
        t.append("\n".join(lines[:4]) + (" …" if len(lines) > 4 else "") + "\n")


def strip_tiles(rec: dict[str, Any], step: int | None, default_image: str | None = None):
    """A strip tile per step (its first image, overlay redrawn; ``default_image`` for a step
    that sent none), or only step number ``step`` (from 1)."""
    from ..renderers.strips import Tile

    params = rec.get("params") or {}
    tiles, have = [], []
    for s in rec.get("steps") or []:
        parts = s.get("images") or ([{"path": default_image}] if default_image else [])
        if parts:
            have.append(step_number(s))
        if parts and (step is None or step_number(s) == step):
            tiles.append(Tile(model_view(parts[0]), step_caption(s, params)))
    if step is not None and not tiles:
        raise NoMatch(f"no step {step} with an image in {rec['model']} {rec['strategy']} "
                      f"sample {rec['sample']} (steps with an image: {numbers_text(have)})")
    return tiles
