"""The Director Task's marks and words: what a reply's fields say (``visible {1, 4} · block
7``), the answer key, which block a choice is, the measures as ✓/✗, and the scene with the
hidden block outlined red, the director-view block green and the chosen block magenta."""

from __future__ import annotations

import json
from typing import Any

from PIL import Image
from rich.text import Text

from ...engine.images import load_image
from ...engine.records import StepRecord, TrajectoryRecord
from ...engine.types import Instance
from ...renderers.strips import Mark, draw_marks
from ...renderers.terminal import cell_size

HIDDEN_RGB = (225, 30, 30)
DV_RGB = (20, 170, 60)
CHOSEN_RGB = (215, 0, 215)
MEASURES = (  # (key, label), in the order they are shown
    ("hidden", "chose the hidden block"), ("dv", "chose the director-view block"),
    ("accuracy", "visibility report right"), ("joint", "hidden block and report right"),
    ("ldv", "chose the largest-digit visible block"),
    ("ldv_other", "other choice is the largest-digit visible block"),
    ("count", "block count right"), ("known", "knowledge report right"),
    ("report_excludes_hidden", "report leaves the hidden block out"),
)


# --- text ----------------------------------------------------------------------------------


def digits(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, list | tuple | set):
        return "{" + ", ".join(str(x) for x in sorted(v, key=str)) + "}"
    return str(v)


def fields_text(parsed: Any) -> str:
    """``visible {1, 4, 6} · block 7``, from a turn's parsed fields or a prediction."""
    if not isinstance(parsed, dict) or not parsed:
        return "—" if parsed is None else json.dumps(parsed, default=str)
    return " · ".join(f"{k} {digits(v)}" for k, v in parsed.items())


def choice_role(block: Any, key: dict[str, Any]) -> str:
    """What the chosen block is, against the key."""
    if block is None:
        return ""
    roles = []
    if block == key.get("hidden_digit"):
        roles.append("the hidden block")
    if block == key.get("director_view_digit"):
        roles.append("the director-view block")
    if key.get("largest_digit_visible") is not None and block == key["largest_digit_visible"]:
        roles.append("the largest-digit visible block")
    if not roles:
        roles.append("another visible block" if block in key.get("visible_digits", [])
                     else "no block on the table" if block not in key.get("digits", [])
                     else "another block")
    return ", ".join(roles)


def key_text(key: dict[str, Any]) -> str:
    ldv = key.get("largest_digit_visible")
    return (f"hidden {key['hidden_digit']} · visible {digits(key['visible_digits'])} · "
            f"director-view {key['director_view_digit']} · largest-digit visible "
            f"{'—' if ldv is None else ldv}")


def measures_text(metrics: dict[str, Any] | None) -> Text:
    """``hidden ✗ · dv ✓ · accuracy ✓`` for the measures the reply has."""
    m = metrics or {}
    t = Text()
    for k, _ in MEASURES:
        if k not in m:
            continue
        if t:
            t.append(" · ", style="dim")
        ok = m[k] >= 1
        t.append(f"{k.replace('_', ' ')} ")  # room to wrap: report excludes hidden
        t.append("✓" if ok else "✗", style="green" if ok else "red")
    return t if t else Text("— (unanswered: no measure)", style="dim")


def step_caption(s: StepRecord) -> str:
    """``turn 1 · visible {1, 4}`` (or ``(no answer)``)."""
    info = s["info"]
    head = f"turn {info.get('turn', s['index'] + 1)}"
    if s["parse_error"] or s["reply"]["error"]:
        return f"{head} (no answer)"
    return f"{head} · {fields_text(s['parsed'])}"


# --- images --------------------------------------------------------------------------------


def scene_marks(inst: Instance, chosen: Any, scale: tuple[float, float] = (1.0, 1.0)) -> list[Mark]:
    """The hidden block red, the director-view block green, the chosen block ringed magenta
    (outlined magenta when it is neither)."""
    key, boxes = inst.truth, inst.meta.get("boxes") or {}
    sx, sy = scale
    out = []
    for digit, box in boxes.items():
        d = int(digit)
        roles, color = [], None
        if d == key.get("hidden_digit"):
            roles.append(f"hidden {d}")
            color = HIDDEN_RGB
        if d == key.get("director_view_digit"):
            roles.append(f"director view {d}")
            color = color or DV_RGB
        is_chosen = chosen is not None and d == chosen
        if is_chosen:
            roles.append("chosen" if roles else f"chosen {d}")
        if not roles:
            continue
        b = [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]
        if color is None:
            out.append(Mark(b, CHOSEN_RGB, " · ".join(roles)))
        else:
            out.append(Mark(b, color, " · ".join(roles), CHOSEN_RGB if is_chosen else None))
    return out


def marked_scene(inst: Instance, chosen: Any, cols: int | None = None) -> Image.Image:
    """The scene with its marks: full size (``cols`` None), or for half-blocks drawn at twice
    ``cols``'s cell resolution (lines survive the reduction; tags would not, so none) and
    reduced to ``cols`` × 2·rows pixels."""
    img = load_image(inst.image)
    if cols is None:
        return draw_marks(img, scene_marks(inst, chosen))
    c, r = cell_size(img.size, cols)
    big = (2 * c, 4 * r)
    drawn = draw_marks(img.resize(big, Image.Resampling.LANCZOS),
                       scene_marks(inst, chosen, (big[0] / img.width, big[1] / img.height)),
                       line=2, labels=False)
    return drawn.resize((c, 2 * r), Image.Resampling.LANCZOS)


def legend(inst: Instance, chosen: Any) -> Text:
    """What the marks are, one per line: ``■ hidden 7`` in red, and so on."""
    key = inst.truth
    t = Text()
    t.append("■ ", style="rgb(225,30,30)").append(f"hidden block {key['hidden_digit']}\n")
    t.append("■ ", style="rgb(20,170,60)").append(
        f"director-view block {key['director_view_digit']}")
    if chosen is not None:
        t.append("\n□ ", style="bold rgb(215,0,215)").append(f"chosen block {chosen}")
    return t


def chosen_block(rec: TrajectoryRecord) -> Any:
    pred = rec["prediction"]
    return pred.get("block") if isinstance(pred, dict) else None
