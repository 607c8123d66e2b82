"""A Director trajectory as one PNG: the marked scene at full size, a text panel beside it
(the turns' questions and parsed answers, the report and choice against the answer key, the
measures)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

from ...engine.records import TrajectoryRecord
from ...engine.rundir import RunDir
from ...engine.types import Instance
from ...renderers.strips import StripLayout, wrap_text
from ...renderers.textures import font
from ..common import record_who
from ..select import NoMatch
from .marks import (
    DV_RGB,
    HIDDEN_RGB,
    MEASURES,
    choice_role,
    chosen_block,
    digits,
    fields_text,
    marked_scene,
)
from .run import DirectorRun, batch, condition, select


def _question_lines(prompt: str) -> list[str]:
    """The prompt's paragraphs that ask something (``Question A: …``), as lines."""
    paras = [p for p in (prompt or "").split("\n\n")
             if "Question" in p and not p.startswith("Reply with")]
    return [line for p in paras for line in p.splitlines()]


def png_text(run: DirectorRun, r: TrajectoryRecord, inst: Instance) -> list[tuple[str, tuple]]:
    """The PNG's text panel: (line, colour) pairs."""
    dark, dim, red, green = (20, 20, 20), (110, 110, 110), HIDDEN_RGB, DV_RGB
    key = inst.truth
    pred = r["prediction"] if isinstance(r["prediction"], dict) else {}
    m = r["metrics"]
    out: list[tuple[str, tuple]] = [
        (f"{r['instance_id']} · {record_who({**r, 'model': run.model(r)})}", dark),
        (f"condition {condition(r)} · batch {batch(r)} · sample {r['sample']}", dark), ("", dark)]
    steps = r["steps"]
    for i, s in enumerate(steps):
        info = s["info"]
        if i:
            out.append(("", dark))
        out.append((f"turn {info.get('turn', s['index'] + 1)} of {len(steps)}", dim))
        out += [(f"  {line}", dim) for line in _question_lines(s["prompt"])]
        reply = s["reply"]
        if reply["error"]:
            out.append((f"  → error {reply['error'].get('kind')}", red))
        elif s["parse_error"]:
            out.append((f"  → unreadable: {s['parse_error']}", red))
        else:
            out.append((f"  → {fields_text(s['parsed'])}", dark))
    out.append(("", dark))
    if r["error"]:
        out.append((f"unanswered ({r['error'].get('kind')})", red))
    if "visible" in pred:
        ok = m.get("accuracy", 0) >= 1
        out.append((f"report  visible {digits(pred['visible'])} {'✓' if ok else '✗'}",
                    green if ok else red))
    if "block" in pred:
        b = pred["block"]
        out.append((f"choice  block {b} ({choice_role(b, key)})",
                    red if b == key["hidden_digit"] else green if b == key["director_view_digit"]
                    else (170, 120, 0)))
    out.append(("", dark))
    out.append(("answer key", dim))
    out.append((f"hidden block {key['hidden_digit']}", red))
    out.append((f"director-view block {key['director_view_digit']}", green))
    out.append((f"visible {digits(key['visible_digits'])}", dark))
    ldv = key.get("largest_digit_visible")
    out.append((f"largest-digit visible {'—' if ldv is None else ldv}", dark))
    out.append(("", dark))
    shown = [f"{k} {'✓' if m[k] >= 1 else '✗'}" for k, _ in MEASURES if k in m]
    if shown:
        out.append(("measures  " + " · ".join(shown), dark))
    return out


def write_png(run_dir: str | Path | RunDir, scene: str, out: Path, *, strategy: str | None = None,
              model: str | None = None, sample: int | None = None,
              panel: int = 460) -> StripLayout:
    """One trajectory as a PNG: the marked scene at full size, a text panel beside it.
    Returns a ``StripLayout`` whose one tile is the scene."""
    run = DirectorRun.open(run_dir)
    records, _ = select(run, scene, strategy=strategy, model=model, sample=sample)
    if len(records) > 1:
        listed = "; ".join(f"{run.model(r)} {condition(r)} (batch {batch(r)}) sample "
                           f"{r['sample']}" for r in records[:4]) + (" …" if len(records) > 4 else "")
        raise NoMatch(f"--png draws one trajectory; {len(records)} match ({listed}): narrow "
                         "with --strategy, --model, --sample")
    r = records[0]
    inst, why = run.scene(scene)
    if inst is None:
        raise NoMatch(f"cannot draw {scene!r}: {why}")
    img = marked_scene(inst, chosen_block(r))
    pad, size = 12, 14
    f = font(size)
    line_h = size + 5
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    lines: list[tuple[str, tuple]] = []
    for text, color in png_text(run, r, inst):
        lines += [(piece, color) for piece in wrap_text(probe, text, f, panel - pad, 3)]
    height = max(img.height, len(lines) * line_h) + 2 * pad
    width = img.width + panel + 3 * pad
    canvas = Image.new("RGB", (width, height), "white")
    canvas.paste(img, (pad, pad))
    d = ImageDraw.Draw(canvas)
    x = img.width + 2 * pad
    for i, (text, color) in enumerate(lines):
        d.text((x, pad + i * line_h), text, fill=color, font=f)
    canvas.save(out, format="PNG")
    return StripLayout(width=width, height=height, tiles=[(pad, pad, img.width, img.height)],
                       scales=[(1.0, 1.0)])
