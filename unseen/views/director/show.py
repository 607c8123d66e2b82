"""``unseen show`` for Director Task study runs.

- **Summary** (no scene): one row per (model, batch, condition): replies, answered, the rates
  of choosing the hidden block and the director-view block, visibility-report accuracy, the
  joint rate (each over the answered replies it applies to), and failures by reason; then the
  scenes with their key and outcomes, the most hidden-block choices first.
- **Scene** (a scene id): for each matching trajectory, the scene image with the hidden block
  outlined red, the director-view block green and the chosen block ringed magenta; each
  turn's prompt (folded unless ``full``), reply, reasoning and parsed fields; then the
  report and choice against the answer key, the scored measures (✓/✗), and the trace's codes
  where ``unseen director code`` ran.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich import box as rich_box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...engine.records import StepRecord, TrajectoryRecord
from ...engine.rundir import RunDir
from ...engine.types import Instance
from ..common import (
    PROMPT_LINES,
    REPLY_LINES,
    Pictures,
    error_kind,
    fold,
    kv,
    record_who,
    usage_text,
)
from ..protocol import Filters
from ..select import step_number, with_step
from ..steps import answer_rows
from .marks import (
    choice_role,
    chosen_block,
    digits,
    fields_text,
    legend,
    marked_scene,
    measures_text,
)
from .run import DirectorRun, batch, condition, select

MAX_SHOWN = 12  # trajectories of one scene drawn before "… more: narrow"
SCENE_ROWS = 20  # scenes listed by the summary


COMPACT: dict[str, Any] = {"box": rich_box.SIMPLE_HEAD, "show_edge": False, "padding": (0, 1),
                            "collapse_padding": True}


def _rate(recs: list[TrajectoryRecord], key: str) -> tuple[float, int] | None:
    vals = [r["metrics"][key] for r in recs
            if r["status"] == "answered" and key in r["metrics"]]
    return (100 * sum(vals) / len(vals), len(vals)) if vals else None


def _pct(v: tuple[float, int] | None) -> Text:
    return Text("—", style="dim") if v is None else Text(f"{v[0]:.1f}")


def summary(run_dir: RunDir, console: Console, filters: Filters) -> None:
    """Rates per (model, batch, condition), then the scenes with their outcomes."""
    strategy, model, worst = filters.strategy, filters.model, filters.worst
    run = DirectorRun.open(run_dir)
    records, _ = select(run, None, strategy=strategy, model=model, first_batch=False)
    design = run.study.get("design") or {}
    sets = ", ".join(f"{k} {v.get('n', '?')}" for k, v in (run.study.get("scenes") or {}).items())
    console.rule(f"Director study {escape(str(design.get('name', '?')))} · run "
                 f"{escape(_name(run))} · {len(records)} replies"
                 + (f" · scenes {escape(sets)}" if sets else ""))
    groups: dict[tuple, list[TrajectoryRecord]] = defaultdict(list)
    for r in records:
        groups[(run.model(r), run.order(r["params"]))].append(r)
    console.print(_rates_table(groups, records, console.width))
    for part in _cost_parts(run, records):
        console.print(part)
    console.print(_scene_table(run, records, worst))


def _cost_parts(run: DirectorRun, records: list[TrajectoryRecord]) -> list[RenderableType]:
    """What each real model's replies cost, in US dollars (none for simulated, rule and
    human replies; ``no price`` for a model without one)."""
    from ...backends.prices import price_for
    from ...evals.costs import batched_specs, record_usage
    from ...evals.director.analysis import costs as cost_rows

    rows = cost_rows.model_costs(
        ({"model": run.model(r), "backend": r["backend"],
          "simulated": r["simulated"], "served_model": r["model"],
          "usage": record_usage(r) if "steps" in r else {}} for r in records), price_for,
        batched_specs(run.run.config.backends if run.run.config is not None else []))
    if not rows:
        return []
    table = Table(title="cost per model", title_justify="left", **COMPACT)
    for j, h in enumerate(cost_rows.HEADERS):
        table.add_column(h, justify="left" if j == 0 else "right", overflow="fold")
    for c in rows:
        table.add_row(*map(escape, cost_rows.cells(c)))
    return [table, Text(cost_rows.note(rows), style="dim")]


def _rates_table(groups: dict[tuple, list[TrajectoryRecord]], records: list[TrajectoryRecord],
                 width: int | None) -> Table:
    """One row per (model, batch, condition), its columns picked by ``width``: failures by
    reason in a column where it fits, else summed up under the table; then the measures
    beyond the four the paper reports (ldv, count, known), left out and named."""
    simulated = {r["backend"] for r in records if r["simulated"]}
    extra = [k for k in ("ldv", "count", "known")
             if any(k in r["metrics"] for r in records)]
    rates = {key: {k: _rate(recs, k) for k in ("hidden", "dv", "accuracy", "joint", *extra)}
             for key, recs in groups.items()}  # once, for every width tried below
    failed = Counter(error_kind(r) for r in records
                     if r["status"] != "answered")

    def build(per_row: bool, extras: list[str]) -> Table:
        notes = ["ans: answered/asked · rates: % of the answered replies each applies to · "
                 "hidden: chose the hidden block · dv: the director-view block · acc: "
                 "visibility report right · joint: hidden block and report right"
                 + (" · ldv: the largest-digit visible block" if "ldv" in extras else "")
                 + (" · *: a simulated respondent" if simulated else "")]
        if failed and not per_row:
            notes.append("unanswered, by reason: " + ", ".join(
                f"{k} {v}" for k, v in failed.most_common()) + " (per row in a wider terminal)")
        if len(extras) < len(extra):
            notes.append(f"left out at this width: {', '.join(extra[len(extras):])}; "
                         "`unseen director analyze RUN` has every measure")
        table = Table(title="per model, batch and condition", title_justify="left", **COMPACT,
                      caption="\n".join(notes), caption_justify="left")
        table.add_column("model", overflow="fold")
        table.add_column("batch", overflow="fold")
        table.add_column("condition", no_wrap=True)
        table.add_column("ans", justify="right", no_wrap=True)
        for col in ("hidden", "dv", "acc", "joint", *extras):
            table.add_column(col, justify="right", no_wrap=True, min_width=max(len(col), 3))
        if per_row:
            table.add_column("failures", overflow="fold")
        for (name, order), recs in sorted(groups.items()):
            answered = sum(r["status"] == "answered" for r in recs)
            fails = Counter(error_kind(r) for r in recs
                            if r["status"] != "answered")
            sim = any(r["backend"] in simulated for r in recs)
            human = all(r["backend"].startswith("human") for r in recs)
            row: list[RenderableType] = [Text(name) + (Text("*", style="magenta") if sim else Text(" (human)")
                                 if human else Text()),
                   escape(order[1]), escape(order[3]),
                   Text(f"{answered}/{len(recs)}", style="" if answered == len(recs)
                        else "yellow"),
                   *(_pct(rates[(name, order)][k]) for k in ("hidden", "dv", "accuracy",
                                                              "joint", *extras))]
            if per_row:
                row.append(Text(", ".join(f"{k} {v}" for k, v in fails.most_common()) or "—",
                                style="red" if fails else "dim"))
            table.add_row(*row)
        return table

    tries = [(True, extra), (False, extra), *((False, extra[:k]) for k in range(len(extra)))]
    probe = Console(width=10_000)
    for per_row, extras in tries:
        table = build(per_row, extras)
        if width is None or Measurement.get(probe, probe.options, table).maximum <= width:
            return table
    return table


def _scene_table(run: DirectorRun, records: list[TrajectoryRecord], worst: int) -> Table:
    scenes, note = run.scenes()
    by: dict[str, list[TrajectoryRecord]] = defaultdict(list)
    for r in records:
        by[r["instance_id"]].append(r)

    def counts(recs):
        ans = [r for r in recs if r["status"] == "answered"]
        blocks = [r["metrics"] for r in ans if "hidden" in r["metrics"]]
        reports = [r["metrics"]["accuracy"] for r in ans
                   if "accuracy" in r["metrics"]]
        return (len(ans), sum(m["hidden"] for m in blocks), sum(m["dv"] for m in blocks),
                len(blocks), sum(reports), len(reports))

    stats = {sid: counts(recs) for sid, recs in by.items()}

    def badness(sid: str) -> tuple:
        _, hid, dv, nb, _, _ = stats[sid]
        return (-(hid / nb) if nb else 0, (dv / nb) if nb else 1, sid)

    ids = sorted(by, key=badness)
    table = Table(title=f"scenes, most hidden-block choices first: {min(worst, len(ids))} of "
                        f"{len(ids)}", title_justify="left", **COMPACT,
                  caption="key: the hidden, director-view (dv) and visible blocks · →hidden, →dv: "
                          "replies that chose that block · report: right visibility reports · "
                          "choices: block×replies · one scene in full: unseen show RUN SCENE "
                          "[--strategy CONDITION] [--model M] [--sample K]"
                          + (f"\nkey unavailable: {note}" if note else ""),
                  caption_justify="left")
    table.add_column("scene", no_wrap=True)
    for col in ("hidden", "dv"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("visible")
    for col in ("n", "→hidden", "→dv", "report"):
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    table.add_column("choices")
    table.add_column("failed", overflow="fold")
    for sid in ids[:worst]:
        recs = by[sid]
        n_ans, hid, dv, nb, rep, nr = stats[sid]
        inst = scenes.get(sid)
        key = inst.truth if inst else {}
        choices = Counter(c for c in (chosen_block(r) for r in recs) if c is not None)
        ctext = Text()
        for digit, k in sorted(choices.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            style = ("red" if digit == key.get("hidden_digit") else
                     "green" if digit == key.get("director_view_digit") else "yellow")
            ctext.append(f"{' ' if ctext else ''}{digit}×{k}", style=style)
        fails = Counter(error_kind(r) for r in recs
                        if r["status"] != "answered")
        table.add_row(
            escape(sid), Text(str(key.get("hidden_digit", "?")), style="red"),
            Text(str(key.get("director_view_digit", "?")), style="green"),
            digits(key.get("visible_digits")) if key else "?", str(len(recs)),
            Text(f"{hid:.0f}/{nb}", style="red" if hid else "") if nb else Text("—", style="dim"),
            Text(f"{dv:.0f}/{nb}") if nb else Text("—", style="dim"),
            Text(f"{rep:.0f}/{nr}") if nr else Text("—", style="dim"),
            ctext or Text("—", style="dim"),
            Text(", ".join(f"{k} {v}" for k, v in fails.most_common()), style="red")
            if fails else Text("—", style="dim"))
    return table


# --- one scene, turn by turn -------------------------------------------------------------------


def _rec_title(run: DirectorRun, r: TrajectoryRecord) -> str:
    named = record_who({**r, "model": run.model(r)})  # the study's name, marked as `who` marks
    return (f"{r['instance_id']} · {named} · {condition(r)} · batch {batch(r)} · "
            f"sample {r['sample']}")


def _name(run: DirectorRun) -> str:
    return run.run.config.run if run.run.config is not None else run.path.name


def _scene_panel(console: Console, pictures, r: TrajectoryRecord, inst: Instance | None,
                 note: str) -> Panel:
    chosen = chosen_block(r)
    rows: list[tuple[str, RenderableType]] = []
    if inst is None:
        rows.append(("scene", Text(f"unavailable: {note}", style="yellow")))
        return Panel(kv(rows), title="scene", title_align="left", border_style="yellow")
    rows.append(("marks", legend(inst, chosen)))
    rows.append(("blocks", Text(f"{digits(inst.truth['digits'])} on the table")))
    rows.append(("image", Text(f"{Path(inst.image).name} · {inst.width}×{inst.height}")))
    turns = len(r["steps"])
    rows.append(("condition", Text(f"{condition(r)} · {turns} turn{'s' * (turns != 1)} · "
                                   f"batch {batch(r)}")))
    pics: list[RenderableType] = []
    if pictures.on:
        pics = [pictures.draw(lambda: marked_scene(inst, chosen),
                              lambda cols: marked_scene(inst, chosen, cols))]
    return Panel(pictures.layout(pics, kv(rows), console.width),
                 title="scene · [red]hidden[/] · [green]director view[/] · [magenta]chosen[/]",
                 title_align="left", border_style="blue")


def fold_prompt(prompt: str, lines: int | None, width: int) -> str:
    """A Director prompt folded: its first paragraph, when it is the intro every condition
    shares, cut to one line; the rest (insert, stated line, questions, format) whole up to
    ``lines`` + 6 lines; ``lines`` None: all of it."""
    from ...evals.director.task.prompts import templates

    if lines is None:
        return fold(prompt, None, width)
    first, sep, rest = (prompt or "").partition("\n\n")
    if not (sep and first.startswith(templates()["intro"][:60])):
        return fold(prompt, lines + 6, width)  # a later turn: no intro
    head = fold(first, 1, width).replace("(--full)", "of the shared intro (--full)")
    return head + "\n\n" + fold(rest, lines + 6, width)


def _turn_panel(console: Console, s: StepRecord, n_turns: int, full: bool) -> Panel:
    width = console.width - 4 - 10
    fold_at = None if full else PROMPT_LINES
    short = None if full else REPLY_LINES
    reply = s["reply"]
    info = s["info"]
    rows: list[tuple[str, RenderableType]] = [("prompt", Text(fold_prompt(s["prompt"],
                                                                          fold_at, width)))]
    if s["messages"] > 1:
        rows.append(("messages", Text(f"{s['messages']} (the dialogue so far, then this prompt)")))
    rows += answer_rows(s, short, width, Text(fields_text(s["parsed"]), style="bold"))
    timing = f"latency {reply['latency_s']:.3f} s"
    rows.append(("tokens", Text(usage_text(reply["usage"]) + " · " + timing
                                + (" · cached" if reply["cached"] else ""), style="dim")))
    asks = ", ".join(info.get("fields") or [])
    title = f"turn {info.get('turn', s['index'] + 1)} of {n_turns}" + (
        f" · asks {asks}" if asks else "")
    bad = bool(s["parse_error"] or reply["error"])
    return Panel(kv(rows), title=escape(title), title_align="left",
                 border_style="red" if bad else "blue")


def _result_panel(r: TrajectoryRecord, inst: Instance | None, code: Any = None) -> Panel:
    pred = r["prediction"] if isinstance(r["prediction"], dict) else {}
    rows: list[tuple[str, RenderableType]] = []
    status = r["status"] + (f" ({r['error']['kind']})" if r["error"] else "")
    rows.append(("status", Text(status, style="red" if r["error"] else "green")))
    if r["error"]:
        rows.append(("error", Text(r["error"]["message"], style="red")))
    key = inst.truth if inst else None
    m = r["metrics"]
    for f, mkey in (("visible", "accuracy"), ("known", "known"), ("count", "count")):
        if f in pred:
            t = Text(f"{f} {digits(pred[f])}")
            if mkey in m:
                t.append("  ✓ right" if m[mkey] >= 1 else "  ✗ wrong",
                         style="green" if m[mkey] >= 1 else "red")
            rows.append(("report", t))
    if "block" in pred:
        block = pred["block"]
        t = Text(f"block {block}", style="bold")
        if key:
            role = choice_role(block, key)
            t.append(f"  {role}", style="red" if block == key["hidden_digit"] else
                     "green" if block == key["director_view_digit"] else "yellow")
        rows.append(("choice", t))
    if key:
        k = Text()
        k.append(f"hidden {key['hidden_digit']}", style="red").append(" · ")
        k.append(f"visible {digits(key['visible_digits'])}").append(" · ")
        k.append(f"director-view {key['director_view_digit']}", style="green").append(" · ")
        ldv = key.get("largest_digit_visible")
        k.append(f"largest-digit visible {'—' if ldv is None else ldv}")
        rows.append(("key", k))
        rows.append(("strata", Text(
            f"hidden block has the top digit: {'yes' if m.get('hidden_top_digit') else 'no'} · "
            f"apparent-size flag: {'yes' if key.get('apparent_size_flag') else 'no'}",
            style="dim")))
    else:
        rows.append(("key", Text("unavailable (scene folder not found)", style="yellow")))
    rows.append(("measures", measures_text(m)))
    if code is not None:
        t = Text(f"reading {code.reading.replace('_', ' ')} · director sees the block: "
                 f"{code.sees.replace('_', ' ')} · works out the view: "
                 f"{'yes' if code.works_out else 'no'}", style="magenta")
        if code.reading_quote:
            t.append(f"\n“{code.reading_quote}”", style="italic")
        rows.append(("trace codes", t))
    good = r["status"] == "answered"
    return Panel(kv(rows), title="result · report, choice and the answer key",
                 title_align="left", border_style="green" if good else "red")


def scene_view(run_dir: RunDir, scene: str, console: Console, filters: Filters) -> None:
    """Every matching trajectory of one scene (at most ``MAX_SHOWN``), turn by turn."""
    strategy, model, sample, step = filters.strategy, filters.model, filters.sample, filters.step
    full, images = filters.full, filters.images
    run = DirectorRun.open(run_dir)
    records, note = select(run, scene, strategy=strategy, model=model, sample=sample)
    if step is not None:
        with_step(records, step, "steps, one per turn")
    inst, why = run.scene(scene)
    pictures = Pictures(console, images)
    from ...evals.director.coding.items import codes_by_key

    codes = codes_by_key(run.path)  # the trace's codes, where `unseen director code` ran
    if note:
        console.print(Text(note, style="yellow"))
    if len(records) > MAX_SHOWN:
        console.print(Text(f"{len(records)} trajectories match; showing the first {MAX_SHOWN} "
                           "(narrow with --strategy, --model, --sample)", style="yellow"))
    for r in records[:MAX_SHOWN]:
        console.rule(escape(_rec_title(run, r)))
        console.print(_scene_panel(console, pictures, r, inst, why))
        steps = r["steps"]
        if not steps:
            console.print("[yellow]no turns journaled[/]")
        for s in steps:
            if step is None or step_number(s) == step:
                console.print(_turn_panel(console, s, len(steps), full))
        console.print(_result_panel(r, inst, codes.get(r["key"])))
