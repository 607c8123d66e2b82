"""A dataset card for a SceneFunRI folder (``unseen data stats``).

What it reports, from ``instances.jsonl`` (and ``build.json`` when the folder is a build
output):

- ``instances``, ``images`` (distinct files), ``scenes`` and ``videos`` (distinct
  ``meta.visit``/``meta.scene`` and ``meta.video``, where the meta has them);
- ``affordances``: instances per ``meta.affordance``;
- ``instruction_words``: min, median, mean, max of the words per instruction;
- ``box_area``: quantiles of the box's share of the image, (x2 − x1)(y2 − y1) / (w·h);
- ``centre_grid``: 3x3 counts of box centres ((x1 + x2)/2w, (y1 + y2)/2h), rows top to
  bottom, columns left to right; a centre on a line goes to the cell below or right of it;
- ``rules``: the fixed-rule references' scores (×100), ``center`` (the centred box of half
  the width and height), ``prior`` (the mean normalized box of the *other* instances) and
  ``fixed`` (the best constant box on a 5 % grid, learned leave-one-scene-out: ``fixed.py``):
  the rules of ``backends/baseline.py``, recomputed here because evals do not import
  backends (the tests check both agree);
- ``fixed_boxes``: the boxes ``fixed`` learned, each with the held-out scenes (folds) and
  instances it answered, most used first (``fixed_unavailable``: why there are none, for a
  single instance);
- ``funnel``: for a build output, visits, frames, (frame, description) pairs, candidates and
  kept instances with every drop reason (the paper's 1,232 → 855 is its candidates → kept).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from ....engine.rules import LearnerError
from ..data.build import BUILD_FILE, PAIR_DROPS
from ..data.dataset import Dataset, DatasetError, load_dataset
from ..fixed import Fold, folds, pixel_box
from ..metrics import aggregate, score

QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9,
             "max": 1.0}
MAX_BOX_ROWS = 8  # the table and md list the most used learned boxes; json has them all
FUNNEL_COUNTS = ("visits", "frames", "frames_skipped", "descriptions", "descriptions_unusable",
                 "pairs", "candidates", "kept")


class StatsError(DatasetError):
    """A file of the folder that cannot be described; one line naming it (and the line)."""


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default): position q·(n − 1)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def grid_cell(x: float, y: float) -> tuple[int, int]:
    """(row, column) of a normalized point in the 3x3 grid, rows from the top."""
    return min(2, max(0, int(y * 3))), min(2, max(0, int(x * 3)))


def normalized_boxes(ds: Dataset) -> list[list[float]]:
    """Each instance's box as shares of its image's width and height."""
    return [[b[0] / i.width, b[1] / i.height, b[2] / i.width, b[3] / i.height]
            for i in ds.instances for b in [i.truth["box"]]]


def fixed_folds(ds: Dataset) -> tuple[list[Fold], str | None]:
    """``baseline:fixed``'s folds, and why there are none (a single instance)."""
    try:
        return folds(ds.instances), None
    except LearnerError as exc:
        return [], str(exc)


def rule_scores(ds: Dataset, learned: list[Fold] | None = None) -> dict[str, dict[str, float]]:
    """CAcc@75, CAcc@50, mIoU and Dist (×100) of ``baseline:center``, ``baseline:prior`` and
    ``baseline:fixed`` (``learned``: its folds, when already computed)."""
    norm = normalized_boxes(ds)
    n = len(norm)
    total = [sum(b[k] for b in norm) for k in range(4)]
    learned = fixed_folds(ds)[0] if learned is None else learned
    fixed = {iid: f.box for f in learned for iid in f.instances}
    rows: dict[str, list[dict[str, float]]] = {"center": [], "prior": [], "fixed": []}
    for inst, mine in zip(ds.instances, norm, strict=True):
        w, h = inst.width, inst.height
        gt = inst.truth["box"]
        rows["center"].append(score([w / 4, h / 4, 3 * w / 4, 3 * h / 4], gt, w, h))
        if n > 1:  # leave-one-out mean, as the backend computes it
            m = [(total[k] - mine[k]) / (n - 1) for k in range(4)]
            rows["prior"].append(score([m[0] * w, m[1] * h, m[2] * w, m[3] * h], gt, w, h))
        if inst.id in fixed:  # the box learned without this instance's scene, as answered
            rows["fixed"].append(score(pixel_box(fixed[inst.id], w, h), gt, w, h))
    return {rule: aggregate(r) for rule, r in rows.items() if r}


def fixed_summary(learned: list[Fold]) -> list[dict[str, Any]]:
    """The distinct boxes ``baseline:fixed`` learned, with the folds and instances of each."""
    by_box: dict[tuple[float, ...], dict[str, Any]] = {}
    for f in learned:
        e = by_box.setdefault(tuple(f.box), {"box": list(f.box), "folds": 0, "instances": 0})
        e["folds"] += 1
        e["instances"] += len(f.instances)
    return sorted(by_box.values(), key=lambda e: (-e["instances"], e["box"]))


def _line_of(text: str, key: str) -> int:
    """The line where ``"key"`` first appears (1 if nowhere), for an error to point at."""
    at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def read_funnel(folder: Path) -> dict[str, Any] | None:
    """The build's funnel from ``build.json``, or None when the folder has none."""
    path = folder / BUILD_FILE
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
    except UnicodeDecodeError as e:
        raise StatsError(f"{path}:1: not UTF-8 text ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise StatsError(f"{path}:{e.lineno}: bad JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(doc, dict):
        raise StatsError(f"{path}:1: expected a JSON object")
    out: dict[str, Any] = {}
    for key in FUNNEL_COUNTS:
        v = doc.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise StatsError(f"{path}:{_line_of(text, key)}: {key!r} must be a count, got {v!r}")
        out[key] = v
    dropped = doc.get("dropped", {})
    if not isinstance(dropped, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in dropped.values()):
        raise StatsError(f"{path}:{_line_of(text, 'dropped')}: 'dropped' must map reasons "
                         "to counts")
    out["dropped"] = dict(sorted(dropped.items(), key=lambda kv: -kv[1]))
    if isinstance(doc.get("frame_rule"), str):
        out["frame_rule"] = doc["frame_rule"]
    return out


def describe(folder: str | Path, ds: Dataset | None = None) -> dict[str, Any]:
    """The card of a SceneFunRI folder (see the module docstring); ``ds``: the folder's
    data set when already loaded."""
    folder = Path(folder)
    ds = load_dataset(folder) if ds is None else ds
    insts = ds.instances
    norm = normalized_boxes(ds)
    card: dict[str, Any] = {"folder": str(folder), "instances": len(insts),
                            "images": len({i.image for i in insts})}
    for name, keys in (("scenes", ("visit", "scene")), ("videos", ("video",))):
        values = {str(v) for i in insts for k in keys if (v := i.meta.get(k)) is not None}
        if values:
            card[name] = len(values)
    labels = Counter(str(i.meta["affordance"]) for i in insts if "affordance" in i.meta)
    card["affordances"] = dict(labels.most_common())
    words = [len(i.text["instruction"].split()) for i in insts]
    card["instruction_words"] = {"min": min(words), "median": statistics.median(words),
                                 "mean": statistics.fmean(words), "max": max(words)}
    areas = [(b[2] - b[0]) * (b[3] - b[1]) for b in norm]
    card["box_area"] = {k: quantile(areas, q) for k, q in QUANTILES.items()}
    grid = [[0] * 3 for _ in range(3)]
    for b in norm:
        r, c = grid_cell((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
        grid[r][c] += 1
    card["centre_grid"] = grid
    card["centre_cells_used"] = sum(v > 0 for row in grid for v in row)
    learned, why = fixed_folds(ds)
    card["rules"] = rule_scores(ds, learned)
    card["fixed_boxes"] = fixed_summary(learned)
    if why:
        card["fixed_unavailable"] = why
    card["funnel"] = read_funnel(folder)
    return card


# --- rendering ----------------------------------------------------------------------------

RULE_NOTE = ("fixed rules: center = the centred box of half the width and height; prior = "
             "the mean box of the other instances (leave-one-out); fixed = the best constant "
             "box by CAcc@50 (ties: Dist) on a grid of 5 % of the width and height, learned "
             "on the other scenes (leave-one-scene-out)")


def _n(v: float) -> str:
    return f"{v:g}"


def _sections(card: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each block, shared by the table and Markdown renderings."""
    counts = [[k, str(card[k])] for k in ("instances", "images", "scenes", "videos") if k in card]
    w = card["instruction_words"]
    counts.append(["instruction words", f"min {w['min']} · median {_n(w['median'])} · "
                   f"mean {w['mean']:.1f} · max {w['max']}"])
    out = [("SceneFunRI data", ["", "value"], counts)]
    if card["affordances"]:
        out.append(("affordances", ["label", "instances"],
                    [[k, str(v)] for k, v in card["affordances"].items()]))
    out.append(("box area (share of the image)", list(QUANTILES),
                [[f"{100 * v:.2f} %" for v in card["box_area"].values()]]))
    grid = card["centre_grid"]
    out.append((f"box centres in a 3x3 grid ({card['centre_cells_used']} of 9 cells)",
                ["", "left", "middle", "right"],
                [[name, *map(str, row)] for name, row in zip(("top", "middle", "bottom"), grid,
                                                              strict=True)]))
    out.append(("fixed-rule references (×100)", ["rule", "CAcc@75", "CAcc@50", "mIoU", "Dist"],
                [[f"{rule} (rule)", *(f"{m[k]:.1f}" for k in ("cacc75", "cacc50", "miou", "dist"))]
                 for rule, m in card["rules"].items()]))
    if card.get("fixed_boxes"):
        out.append(("boxes baseline:fixed learned (shares of the image)",
                    ["box [x1, y1, x2, y2]", "held-out scenes", "instances"],
                    [["[" + ", ".join(f"{v:.2f}" for v in e["box"]) + "]", str(e["folds"]),
                      str(e["instances"])] for e in card["fixed_boxes"][:MAX_BOX_ROWS]]))
    f = card.get("funnel")
    if f:
        rows = [["visits", str(f["visits"])], ["frames", str(f["frames"])]]
        if f["frames_skipped"]:
            rows.append(["  frames without pose or intrinsics (skipped)", str(f["frames_skipped"])])
        if f["descriptions"]:
            rows.append(["descriptions", str(f["descriptions"])])
        if f["descriptions_unusable"]:
            rows.append(["  naming only 'exclude' annotations", str(f["descriptions_unusable"])])
        drops = f["dropped"]
        rows.append(["(frame, description) pairs", str(f["pairs"])])
        rows += [[f"  dropped: {k}", str(v)] for k, v in drops.items() if k in PAIR_DROPS]
        rows.append(["candidates", str(f["candidates"])])
        rows += [[f"  dropped: {k}", str(v)] for k, v in drops.items() if k not in PAIR_DROPS]
        rows.append(["kept", str(f["kept"])])
        out.append(("build funnel", ["stage", "count"], rows))
    return out


def render_stats(card: dict[str, Any], fmt: str = "table") -> Any:
    """``json`` or ``md`` text, or a rich renderable for ``table``."""
    if fmt == "json":
        return json.dumps(card, indent=2)
    blocks = _sections(card)
    notes = [RULE_NOTE]
    if card.get("fixed_unavailable"):
        notes.append(f"no fixed row: {card['fixed_unavailable']}")
    if card.get("funnel") and card["funnel"].get("frame_rule"):
        notes.append("frame per description: " + card["funnel"]["frame_rule"])
    if fmt == "md":
        lines = [f"# {card['folder']}", ""]
        for title, header, rows in blocks:
            lines += [f"## {title}", "", "| " + " | ".join(header) + " |",
                      "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
            lines.append("")
        return "\n".join(lines + [f"*{n}*" for n in notes]) + "\n"
    if fmt == "table":
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        tables: list[Any] = []
        for title, header, rows in blocks:
            t = Table(title=title, title_justify="left", show_header=any(header))
            for k, h in enumerate(header):
                t.add_column(h, justify="left" if k == 0 else "right")
            for r in rows:
                t.add_row(*r)
            tables.append(t)
        return Group(*tables, *(Text(n, style="dim") for n in notes))
    raise ValueError(f"unknown format {fmt!r}; choose table, json or md")
