"""``unseen show`` for SceneFunRI runs: the summary, one instance step by step, one PNG strip.

- **Summary**: the comparison table of ``report.summarize``/``render`` (per model and
  strategy), unanswered trajectories by reason, then the instances worst first (most
  unanswered, then the highest Dist), one column per (model, strategy). Columns are picked
  by the terminal's width: full headings where they fit, else lettered ones with a legend,
  ids cut to their end, and the columns that still do not fit left out (and named).
- **Steps**: for each matching trajectory, one panel per step (``views.steps``) with the
  region's four metrics against the truth (×100), then a panel with the prediction in red and
  the truth in green.
- **Strip**: the same sequence as one PNG (``renderers/strips.py``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image
from rich import box as rich_box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...engine.images import load_image
from ...engine.records import StepRecord, TrajectoryRecord
from ...engine.rundir import Head, RunDir, who
from ...engine.types import Instance
from ...evals.scenefunri.metrics import score
from ...evals.scenefunri.report.formats import render
from ...evals.scenefunri.report.summary import box_checked, summarize
from ...renderers.strips import Tile, draw_result, strip
from ...renderers.terminal import cell_size
from ..common import (
    Pictures,
    box_text,
    fold_label,
    kv,
    letters,
    pack,
    record_who,
    short_id,
    status_text,
)
from ..protocol import Filters
from ..select import NoMatch, find_instance, narrow, step_number, with_step
from ..steps import cost_rows, step_panel, strip_tiles
from .data import data_of, instance_of, light_instances

SHORT_ID = 18  # an id cut to its end, where the full ones leave no room
MIN_INSTRUCTION = 24  # the least width worth an instruction column
COMPACT: dict[str, Any] = {"box": rich_box.SIMPLE_HEAD, "show_edge": False, "padding": (0, 1),
                           "collapse_padding": True, "pad_edge": False}


def metrics_text(m: dict[str, float] | None) -> str:
    """``CAcc@75/50 0/100  IoU 41.2  Dist 3.1`` (×100)."""
    if not m:
        return "—"
    parts = []
    if "cacc75" in m and "cacc50" in m:
        parts.append(f"CAcc@75/50 {100 * m['cacc75']:.0f}/{100 * m['cacc50']:.0f}")
    parts += [f"{label} {100 * m[key]:.1f}" for key, label in (("iou", "IoU"), ("dist", "Dist"))
              if m.get(key) is not None]
    return "  ".join(parts)


# --- selecting --------------------------------------------------------------------------------


def select(run: RunDir, instance: str | None, filters: Filters) -> list[TrajectoryRecord]:
    """The current records of ``instance`` (all when None) that pass the filters, in a stable
    order (model, strategy, sample), checked in full; a one-line error when none does."""
    heads = chosen_heads(run, instance, filters)
    return [box_checked(run, run.record(h)) for h in heads]


def chosen_heads(run: RunDir, instance: str | None, filters: Filters,
                 from_records: bool = False) -> list[Head]:
    heads = run.heads(from_records=from_records)
    where = str(run.path)
    if instance is not None:
        iid = find_instance([h.instance_id for h in heads], instance, where)
        heads = [h for h in heads if h.instance_id == iid]
        where = f"instance {iid!r} of {run.path}"
    chosen = narrow(heads, filters, where, get=getattr)
    chosen.sort(key=lambda h: (h.model, h.strategy, h.sample, h.instance_id))
    return chosen


# --- the summary ------------------------------------------------------------------------------


def summary(run: RunDir, console: Console, filters: Filters) -> None:
    """Per (model, strategy) metrics and failures, then instances worst first."""
    # the tables read every record whole: the heads come from that pass, not one of their own
    heads = chosen_heads(run, None, filters, from_records=True)
    keep = {(h.model, h.strategy) for h in heads}
    name = run.config.run if run.config is not None else run.path.name
    console.rule(f"run {escape(name)} · {len(heads)} trajectories · data "
                 f"{escape(data_of(run) or '?')}")
    from ...backends.prices import price_for

    rows = [row for row in summarize([run], prices=price_for)
            if (row["model"], row["strategy"]) in keep]
    console.print(render(rows, "table", width=console.width))
    failures: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for h in heads:
        if h.error_kind:
            failures[(who(h.model, h.kind), h.strategy)][h.error_kind] += 1
    if failures:
        table = Table(title="unanswered, by reason", title_justify="left", **COMPACT)
        table.add_column("model", overflow="fold")
        table.add_column("strategy", overflow="fold")
        table.add_column("unanswered", justify="right", no_wrap=True)
        table.add_column("reasons", overflow="fold")
        for (m, s), counts in sorted(failures.items()):
            table.add_row(escape(m), escape(fold_label(s)), str(sum(counts.values())),
                          ", ".join(f"{k} {v}" for k, v in counts.most_common()))
        console.print(table)
    for line in notes_lines(heads):
        console.print(line, soft_wrap=True)
    instructions, _ = light_instances(run)
    console.print(instance_table(heads, [(r["model"], r["strategy"]) for r in rows],
                                 filters.worst, console.width, instructions))


def notes_lines(heads: list[Head]) -> list[Text]:
    """What the runner noted beyond the status (``Trajectory.notes``), per (model,
    strategy): replies cut at a length limit, and answers kept from an earlier step."""
    cut: Counter = Counter()
    kept: Counter = Counter()
    for h in heads:
        who_ = (who(h.model, h.kind), h.strategy)
        cut[who_] += int(h.notes.get("length_stops", 0))
        kept[who_] += bool(h.notes.get("fallback"))
    lines = []
    for (m, s), n in sorted(cut.items()):
        if n:
            lines.append(Text(f"{m} · {s}: {n} replies stopped at a length limit",
                              style="yellow"))
    for (m, s), n in sorted(kept.items()):
        if n:
            lines.append(Text(f"{m} · {s}: {n} trajectories answered with an earlier step's "
                              "answer (the last step gave none usable)", style="yellow"))
    return lines


def _cell(heads: list[Head]) -> RenderableType:
    if not heads:
        return Text("—", style="dim")
    failed = [h for h in heads if h.status != "answered"]
    dists = [h.metrics.get("dist") for h in heads if h.status == "answered"]
    found = [d for d in dists if d is not None]
    if len(failed) == len(heads):
        kinds = sorted({h.error_kind or "?" for h in failed})
        return Text("✗ " + ",".join(kinds), style="red")
    text = Text(f"{100 * sum(found) / len(found):.1f}" if found else "?")
    if failed:
        text.append(f" ({len(failed)}✗)", style="red")
    return text


def worst_key(instance_id: str, outcomes: Sequence[tuple[str, float | None]]) -> tuple:
    """The sort key of an instance, worst first: most unanswered (a share of its
    trajectories), then the highest mean Dist; ``outcomes`` are (status, dist) pairs. The
    HTML export orders its instances and step strips by it too."""
    dists = [d for _, d in outcomes if d is not None]
    unanswered = sum(status != "answered" for status, _ in outcomes)
    return (-unanswered / max(1, len(outcomes)),
            -(sum(dists) / len(dists) if dists else float("inf")), instance_id)


def instance_table(heads: list[Head], order: list[tuple[str, str]], worst: int,
                   width: int | None, instructions: dict[str, dict[str, Any]]) -> Table:
    """One row per instance, one column per (model, strategy): Dist×100 (the mean over
    samples), or the reason it went unanswered; worst first: most unanswered, then the
    highest mean Dist. Fitted to ``width`` (None: every column, full headings)."""
    cells: dict[str, dict[tuple[str, str], list[Head]]] = defaultdict(lambda: defaultdict(list))
    for h in heads:
        cells[h.instance_id][(h.model, h.strategy)].append(h)
    cols = [c for c in order if any(c in by for by in cells.values())]
    named = {h.model: who(h.model, h.kind) for h in heads}  # "center (rule)", as tables say

    def badness(inst: str) -> tuple:
        hs = [h for g in cells[inst].values() for h in g]
        return worst_key(inst, [(h.status, h.metrics.get("dist")) for h in hs])

    ids = sorted(cells, key=badness)[:worst]
    body = {i: [_cell(cells[i].get(c, [])) for c in cols] for i in ids}
    total = len(cells)

    def build(n_cols: int, keyed: bool, id_width: int | None, text_width: int = 0) -> Table:
        kept = cols[:n_cols]
        notes = ["cells: Dist×100 (lower is better) or why unanswered · one in full: "
                 "unseen show RUN INSTANCE [--strategy S] [--model M] (any unique part of an "
                 "id will do)"]
        if keyed:
            notes.append(pack([f"{k} {named[m]} · {fold_label(s)}"
                               for k, (m, s) in zip(letters(len(kept)), kept, strict=True)],
                              width))
        if n_cols < len(cols):
            notes.append(f"left out at this width: {len(cols) - n_cols} columns ("
                         + ", ".join(f"{named[m]} · {s}" for m, s in cols[n_cols:])
                         + "); narrow with --model or --strategy")
        table = Table(title=f"instances, worst first (most unanswered, then highest Dist): "
                            f"{len(ids)} of {total}", title_justify="left",
                      caption=Text("\n".join(notes)), caption_justify="left")
        table.add_column("instance", no_wrap=True)
        heads_ = letters(n_cols) if keyed else [f"{named[m]}\n{fold_label(s)}"
                                                for m, s in kept]
        for h in heads_:
            table.add_column(escape(h), justify="right", no_wrap=True)
        if text_width:
            table.add_column("instruction", no_wrap=True, overflow="ellipsis",
                             max_width=text_width)
        for i in ids:
            iid = short_id(i, id_width) if id_width else i
            row: list[RenderableType] = [escape(iid), *body[i][:n_cols]]
            if text_width:
                row.append(escape((instructions.get(i) or {}).get("instruction", "")))
            table.add_row(*row)
        return table

    if width is None:
        return build(len(cols), False, None)
    probe = Console(width=10_000)

    def wide(t: Table) -> int:
        return Measurement.get(probe, probe.options, t).maximum

    longest = max((len(i) for i in ids), default=8)
    short = SHORT_ID if longest > SHORT_ID else None
    n = len(cols)
    # (columns, lettered headings, id width, with the instruction): the first that fits wins
    tries = [(n, False, None, True), (n, True, None, True), (n, True, short, True),
             (n, False, None, False), (n, True, None, False), (n, True, short, False)]
    tries += [(k, True, short, False) for k in range(n - 1, 0, -1)]
    for k, keyed, idw, text in tries:
        if text and not instructions:
            continue
        table = build(k, keyed, idw)
        spare = width - wide(table) - 3  # the instruction column's border and padding
        if text and spare >= MIN_INSTRUCTION:
            return build(k, keyed, idw, spare)
        if not text and spare >= -3:
            return table
    return table


# --- one trajectory, step by step --------------------------------------------------------------


def result_view(inst: Instance, prediction: Any, cols: int | None) -> Image.Image:
    """The image with the prediction red and the truth green: full size (``cols`` None), or
    drawn at twice ``cols``'s cell resolution and reduced for half-blocks."""
    img = load_image(inst.image)
    truth = inst.truth.get("box")
    if cols is None:
        return draw_result(img, prediction, truth)
    c, r = cell_size(img.size, cols)
    sx, sy = 2 * c / img.width, 4 * r / img.height

    def scale(b: Any) -> list[float] | None:
        return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] if b else None

    big = draw_result(img.resize((2 * c, 4 * r), Image.Resampling.LANCZOS), scale(prediction),
                      scale(truth), line=2)
    return big.resize((c, 2 * r), Image.Resampling.LANCZOS)


def _region_rows(inst: Instance | None):
    def rows(s: StepRecord) -> list[tuple[str, RenderableType]]:
        region = s["region"]
        if not region or inst is None or not inst.truth.get("box"):
            return [("metrics", Text("—"))] if region else []
        m = score(region, inst.truth["box"], inst.width, inst.height)
        return [("metrics", Text(metrics_text(m)))]
    return rows


def _result_panel(console: Console, pictures: Pictures, r: TrajectoryRecord,
                  inst: Instance | None, note: str) -> Panel:
    m = r["metrics"]
    rows: list[tuple[str, RenderableType]] = [
        ("status", Text(status_text(r), style="red" if r["error"] else "green"))]
    if r["error"]:
        rows.append(("error", Text(r["error"]["message"], style="red")))
    rows.append(("prediction", Text(box_text(r["prediction"]), style="bold red")))
    if inst is not None:
        rows.append(("truth", Text(box_text(inst.truth.get("box")), style="bold green")))
    rows.append(("metrics", Text(metrics_text(m) + ("  (unanswered: full-image Dist)"
                                                    if r["error"] and "dist" in m else ""))))
    rows += cost_rows(r)
    if note:
        rows.append(("note", Text(note, style="yellow")))
    pics = []
    if pictures.on and inst is not None:
        pred = r["prediction"]
        pics = [pictures.draw(lambda: result_view(inst, pred, None),
                              lambda cols: result_view(inst, pred, cols))]
    return Panel(pictures.layout(pics, kv(rows), console.width),
                 title="result · [red]prediction[/] · [green]truth[/]", title_align="left",
                 border_style="red" if r["error"] else "green")


def instance(run: RunDir, instance_id: str, console: Console, filters: Filters) -> None:
    """Every matching trajectory of one instance, step by step."""
    records = select(run, instance_id, filters)
    step = filters.step
    if step is not None:
        records = with_step(records, step)
    inst, note = instance_of(run, records[0]["instance_id"])
    pictures = Pictures(console, filters.images)
    extra = _region_rows(inst)
    for r in records:
        name = escape(record_who(r)).replace("(SIMULATED)", "[magenta](SIMULATED)[/]")
        console.rule(f"{escape(r['instance_id'])} · {name} · {escape(r['strategy'])} · "
                     f"sample {r['sample']}")
        head = Text()
        if inst is not None:
            head.append("task ", style="dim").append(inst.text.get("instruction", ""))
            head.append("   truth ", style="dim").append(box_text(inst.truth.get("box")),
                                                        style="green")
            head.append(f"   image {inst.width}×{inst.height}", style="dim")
        else:
            head.append(f"dataset unavailable: {note}", style="yellow")
        console.print(head)
        steps = r["steps"]
        if not steps:
            console.print("[yellow]no steps journaled[/]")
        for s in steps:
            if step is None or step_number(s) == step:
                console.print(step_panel(console, pictures, r, s, filters.full, extra))
        if step is None:
            console.print(_result_panel(console, pictures, r, inst, note if inst is None else ""))


# --- one trajectory as a PNG strip -------------------------------------------------------------


def strip_png(run: RunDir, instance_id: str, out: Path, filters: Filters, height: int = 240):
    """One trajectory's steps (or only ``filters.step``) and its result as a PNG strip;
    several matching trajectories are an error: narrow them."""
    records = select(run, instance_id, filters)
    if len(records) > 1:
        listed = "; ".join(f"{r['model']} {r['strategy']} sample {r['sample']}"
                           for r in records[:4]) + (" …" if len(records) > 4 else "")
        raise NoMatch(f"--png draws one trajectory; {len(records)} match ({listed}): "
                      "narrow with --strategy, --model, --sample")
    r = records[0]
    inst, note = instance_of(run, r["instance_id"])
    if inst is None:
        raise NoMatch(f"cannot draw {instance_id!r}: {note}")
    return strip_record(r, inst, out, step=filters.step, height=height)


def strip_record(r: TrajectoryRecord, inst: Instance, out: Path, *, step: int | None = None,
                 height: int = 240):
    """Draw one journal record as a strip: a tile per step (or only ``step``), then the
    result tile with the prediction red and the truth green. Returns the ``StripLayout``."""
    tiles = strip_tiles(r, step, inst.image)
    m = r["metrics"]
    if r["error"]:
        caption = f"unanswered ({r['error']['kind']}) · truth green"
    else:
        caption = (f"prediction red · truth green · IoU {100 * (m.get('iou') or 0):.1f} · "
                   f"Dist {100 * (m.get('dist') or 0):.1f}")
    tiles.append(Tile(result_view(inst, r["prediction"], None), caption))
    title = (f"{r['instance_id']} · {record_who(r)} · {r['strategy']} · sample "
             f"{r['sample']} · \u201c{inst.text.get('instruction', '')}\u201d")
    _, layout = strip(tiles, out, height=height, title=title)
    return layout
