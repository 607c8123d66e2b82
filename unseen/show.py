"""``unseen show``: a run's summary, or its trajectories step by step, in the terminal or as
one PNG strip.

- **Summary** (no instance): the comparison table of ``report.summarize``/``render`` (per model
  and strategy), unanswered trajectories by reason, then the trajectories worst first
  (unanswered first, then by Dist, highest first).
- **Steps** (an instance): for each matching trajectory (``--strategy``, ``--model``,
  ``--sample`` narrow them), one panel per step: the image the model saw with its overlay
  redrawn (from the journal's spec), the prompt (folded after six lines unless ``full``), the
  reply and reasoning (folded), the parsed answer, the region after the step with its four
  metrics against the truth (×100), tokens, latency and whether the reply came from the cache.
  A last panel draws the prediction in red and the truth in green. ``step`` keeps one step.
- **Strip** (``write_strip``): the same sequence as one PNG (``renderers/strips.py``).

Images are drawn in the terminal only when the console is a terminal and ``images`` is on:
half-blocks by default, the kitty protocol where the terminal announces it
(``renderers/terminal.py``). For half-blocks the overlay is drawn at twice the cell
resolution and scaled down, so its lines and labels survive the reduction; the PNG strip
scales the full-resolution drawing, exactly what the model was sent.

Director Task study runs (``"benchmark": "director"`` in ``run.json``) are shown by
``show_director``: the three entry points below hand them over.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from PIL import Image
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from . import show_director
from .engine.images import load_image
from .engine.journal import checked, read_run_json
from .engine.types import Instance
from .evals.scenefunri.dataset import DatasetError, find_instance
from .evals.scenefunri.metrics import score
from .evals.scenefunri.report import RunDirError, current_records, journal_of, render, summarize
from .renderers.overlay import draw
from .renderers.strips import Tile, draw_result, strip
from .renderers.terminal import DEFAULT_CELLS, cell_size, image_protocol, terminal_image
from .show_director import is_director

PROMPT_LINES = 6
REPLY_LINES = 4
SIDE_BY_SIDE_TEXT = 44  # the least text width that puts the image beside the text
KITTY_MAX_PX = 800
_HIDDEN_INFO = {"t", "axis", "candidates"}  # shown in the panel title or not at all


# --- reading a run -------------------------------------------------------------------------


def run_config(run_dir: Path) -> dict[str, Any]:
    """``run.json`` (empty when absent); refuses a run directory of another benchmark (the
    entry points below hand Director runs to ``show_director`` before this)."""
    journal_of(run_dir)
    path = Path(run_dir) / "run.json"
    config = read_run_json(run_dir) if path.is_file() else {}
    bench = config.get("benchmark", "scenefunri")
    if bench == "director-coding":
        study = Path(run_dir).resolve().parent.parent
        raise RunDirError(f"{run_dir}: the coded traces of a Director study; see them with "
                          f"`unseen director codes {study}` or `unseen show {study} SCENE`")
    if bench != "scenefunri":
        raise RunDirError(f"{run_dir}: a {bench} run; this view reads SceneFunRI runs only")
    return config


def _instance(config: dict[str, Any], instance_id: str) -> tuple[Instance | None, str]:
    """The dataset's instance, or None with the reason (a moved or missing dataset)."""
    data = config.get("data")
    if not data:
        return None, "run.json names no dataset"
    try:
        return find_instance(data, instance_id), ""
    except (DatasetError, OSError, ValueError) as exc:
        return None, str(exc)


def _strategy_match(records: list[dict[str, Any]], strategy: str | None):
    """Exact label when some record has it, else by name (``spoe`` matches ``spoe:T=4``)."""
    if not strategy:
        return lambda r: True
    if any(r["strategy"] == strategy for r in records):
        return lambda r: r["strategy"] == strategy
    return lambda r: r["strategy"].split(":", 1)[0] == strategy


def select(run_dir: Path, instance: str | None, *, strategy: str | None = None,
           model: str | None = None, sample: int | None = None) -> list[dict[str, Any]]:
    """The current records of ``instance`` (all when None) that pass the filters, in a stable
    order (model, strategy, sample); a one-line ValueError when none does."""
    records = list(current_records([run_dir]))
    if instance is not None:
        ids = {r["instance_id"] for r in records}
        if instance not in ids:
            raise ValueError(f"no instance {instance!r} in {run_dir} "
                             f"({len(ids)} instances, e.g. {', '.join(sorted(ids)[:3])})")
        records = [r for r in records if r["instance_id"] == instance]
    smatch = _strategy_match(records, strategy)
    chosen = [r for r in records if smatch(r) and (not model or r["model"] == model)
              and (sample is None or r["sample"] == sample)]
    if not chosen:
        what = f"of instance {instance!r} " if instance is not None else ""
        raise ValueError(
            f"no trajectory {what}in {run_dir} matches (models: "
            f"{', '.join(sorted({r['model'] for r in records}))}; strategies: "
            f"{', '.join(sorted({r['strategy'] for r in records}))}; samples: "
            f"{', '.join(str(s) for s in sorted({r['sample'] for r in records}))})")
    chosen.sort(key=lambda r: (r["model"], r["strategy"], r["sample"], r["instance_id"]))
    if instance is not None:  # their steps are shown: checked in full
        journal = journal_of(run_dir)
        chosen = [checked(r, journal) for r in chosen]
    return chosen


# --- small formatters ------------------------------------------------------------------------


def _box(b: Any) -> str:
    return "none" if not b else "[" + ", ".join(f"{v:.0f}" for v in b) + "]"


def _fold(text: str, lines: int | None, width: int = 0) -> str:
    """``text`` wrapped at ``width`` (when > 0), cut after ``lines`` lines (None: all)."""
    out: list[str] = []
    for raw in (text or "").splitlines():
        out.extend(textwrap.wrap(raw, width, break_long_words=True, replace_whitespace=False)
                   if width > 0 and raw.strip() else [raw])
    if lines is None or len(out) <= lines:
        return "\n".join(out)
    rest = len(out) - lines
    return "\n".join(out[:lines]) + f"\n… {rest} more line{'s' * (rest != 1)} (--full)"


def _metrics_text(m: dict[str, float] | None) -> str:
    if not m:
        return "—"
    parts = []
    if "cacc75" in m and "cacc50" in m:
        parts.append(f"CAcc@75/50 {100 * m['cacc75']:.0f}/{100 * m['cacc50']:.0f}")
    parts += [f"{label} {100 * m[key]:.1f}" for key, label in (("iou", "IoU"), ("dist", "Dist"))
              if key in m]
    return "  ".join(parts)


def _region_metrics(region: Any, inst: Instance | None) -> dict[str, float] | None:
    if not region or inst is None or not inst.truth.get("box"):
        return None
    return score(region, inst.truth["box"], inst.width, inst.height)


def _parsed_text(step: dict[str, Any], params: dict[str, Any]) -> str:
    parsed = step.get("parsed")
    if isinstance(parsed, dict) and "choice" in parsed:
        mode = params.get("mode")
        text = f"choice {parsed['choice']}" + (f" ({mode})" if mode else "")
        extra = {k: v for k, v in parsed.items() if k != "choice" and v is not None}
        return text + "".join(f", {k} {v}" for k, v in extra.items())
    if isinstance(parsed, list | tuple) and len(parsed) == 4 and all(
            isinstance(v, int | float) for v in parsed):
        return "box " + _box(parsed)
    return json.dumps(parsed, default=str)


def step_caption(step: dict[str, Any], params: dict[str, Any]) -> str:
    """A short caption: "t=2 eliminate A" for a choice, else "step 1 reflect [x1, …]"."""
    info = step.get("info") or {}
    parsed = step.get("parsed")
    head = f"t={info['t']}" if "t" in info else f"step {step['index']} {step['name']}"
    if step.get("parse_error") or (step.get("reply") or {}).get("error"):
        return f"{head} (no answer)"
    if isinstance(parsed, dict) and "choice" in parsed:
        return f"{head} {params.get('mode', 'choose')} {parsed['choice']}"
    if isinstance(parsed, dict) and not step.get("region"):  # a Director turn's fields
        return show_director.step_caption(step)
    return f"{head} {_box(step.get('region') or parsed)}"


def _outcome(r: dict[str, Any]) -> str:
    if r.get("error"):
        return f"{r['status']} ({r['error']['kind']})"
    return r["status"]


# --- images ------------------------------------------------------------------------------------


def model_view(part: dict[str, Any]) -> Image.Image:
    """The image of a step's image part as the model saw it (overlay redrawn), full size."""
    img = load_image(part["path"])
    spec = part.get("overlay")
    return draw(img, spec) if spec else img


def _small_view(part: dict[str, Any], cols: int) -> Image.Image:
    """The model's view for half-blocks: drawn at twice the cell resolution (lines and labels
    stay readable once scaled down), then reduced to ``cols`` × 2·rows pixels."""
    img = load_image(part["path"])
    spec = dict(part.get("overlay") or {})
    if "crop" in spec:
        img = img.crop(tuple(round(v) for v in spec.pop("crop")))
    c, r = cell_size(img.size, cols)
    big = (2 * c, 4 * r)
    sx, sy = big[0] / img.width, big[1] / img.height
    small = img.resize(big, Image.Resampling.LANCZOS)
    if spec.get("boxes"):
        spec["boxes"] = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in spec["boxes"]]
        small = draw(small, spec)
    return small.resize((c, 2 * r), Image.Resampling.LANCZOS)


def _result_view(inst: Instance, prediction: Any, cols: int | None) -> Image.Image:
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


def _thumb(img: Image.Image) -> Image.Image:
    if img.width <= KITTY_MAX_PX:
        return img
    return img.resize((KITTY_MAX_PX, round(img.height * KITTY_MAX_PX / img.width)),
                      Image.Resampling.LANCZOS)


class _Pictures:
    """Terminal images for one console: protocol and width chosen once."""

    def __init__(self, console: Console, on: bool) -> None:
        self.on = on and console.is_terminal
        self.protocol = image_protocol()
        self.cols = max(8, min(console.width - 4, DEFAULT_CELLS))

    def step(self, part: dict[str, Any]) -> RenderableType:
        try:
            if self.protocol == "kitty":
                return terminal_image(_thumb(model_view(part)), self.cols, "kitty")
            return terminal_image(_small_view(part, self.cols), self.cols, "halfblock")
        except OSError as exc:
            return Text(f"(image unreadable: {exc})", style="red")

    def result(self, inst: Instance, prediction: Any) -> RenderableType:
        try:
            if self.protocol == "kitty":
                return terminal_image(_thumb(_result_view(inst, prediction, None)), self.cols,
                                      "kitty")
            return terminal_image(_result_view(inst, prediction, self.cols), self.cols,
                                  "halfblock")
        except OSError as exc:
            return Text(f"(image unreadable: {exc})", style="red")


# --- the summary -------------------------------------------------------------------------------


def show_summary(console: Console, run_dir: Path, *, strategy: str | None = None,
                 model: str | None = None, worst: int = 20) -> None:
    """Per (model, strategy) metrics and failures, then trajectories worst first."""
    if is_director(run_dir):
        return show_director.show_summary(console, run_dir, strategy=strategy, model=model,
                                          worst=worst)
    config = run_config(run_dir)
    records = select(run_dir, None, strategy=strategy, model=model)
    keep = {(r["model"], r["strategy"]) for r in records}
    console.rule(f"run {escape(str(config.get('run', Path(run_dir).name)))} · "
                 f"{len(records)} trajectories · data {escape(str(config.get('data', '?')))}")
    rows = [row for row in summarize([run_dir]) if (row["model"], row["strategy"]) in keep]
    console.print(render(rows, "table", width=console.width))

    failures: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in records:
        if r.get("error"):
            failures[(r["model"], r["strategy"])][r["error"]["kind"]] += 1
    if failures:
        table = Table(title="unanswered, by reason")
        for col in ("model", "strategy", "unanswered", "reasons"):
            table.add_column(col, justify="right" if col == "unanswered" else "left")
        for (m, s), counts in sorted(failures.items()):
            table.add_row(escape(m), escape(s), str(sum(counts.values())),
                          ", ".join(f"{k} {v}" for k, v in counts.most_common()))
        console.print(table)

    console.print(_instance_table(records, [(r["model"], r["strategy"]) for r in rows], worst))


def _instance_table(records: list[dict[str, Any]], order: list[tuple[str, str]],
                    worst: int) -> Table:
    """One row per instance, one column per (model, strategy): Dist×100 (the mean over
    samples), or the reason it went unanswered; worst first: most unanswered, then the
    highest mean Dist."""
    cells: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list))
    for r in records:
        cells[r["instance_id"]][(r["model"], r["strategy"])].append(r)
    cols = [c for c in order if any(c in by for by in cells.values())]

    def badness(inst: str) -> tuple:
        recs = [r for rs in cells[inst].values() for r in rs]
        dists = [(r.get("metrics") or {}).get("dist") for r in recs]
        dists = [d for d in dists if d is not None]
        unanswered = sum(r["status"] != "answered" for r in recs)
        return (-unanswered / len(recs), -(sum(dists) / len(dists) if dists else float("inf")),
                inst)

    ids = sorted(cells, key=badness)
    table = Table(title=f"instances, worst first (most unanswered, then highest Dist): "
                        f"{min(worst, len(ids))} of {len(ids)}",
                  caption="cells: Dist×100 (lower is better) or why unanswered · one in full: "
                          "unseen show RUN INSTANCE [--strategy S] [--model M]")
    table.add_column("instance", no_wrap=True)
    for m, st in cols:
        table.add_column(f"{escape(m)}\n{escape(st)}", justify="right")
    for inst in ids[:worst]:
        row: list[RenderableType] = [escape(inst)]
        for c in cols:
            recs = cells[inst].get(c, [])
            if not recs:
                row.append(Text("—", style="dim"))
                continue
            failed = [r for r in recs if r["status"] != "answered"]
            dists = [(r.get("metrics") or {}).get("dist") for r in recs if r["status"] == "answered"]
            dists = [d for d in dists if d is not None]
            if len(failed) == len(recs):
                kinds = sorted({(r.get("error") or {}).get("kind", "?") for r in failed})
                row.append(Text("✗ " + ",".join(kinds), style="red"))
                continue
            text = Text(f"{100 * sum(dists) / len(dists):.1f}" if dists else "?")
            if failed:
                text.append(f" ({len(failed)}✗)", style="red")
            row.append(text)
        table.add_row(*row)
    return table


# --- one trajectory, step by step ------------------------------------------------------------


def _kv(rows: Iterable[tuple[str, RenderableType]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for k, v in rows:
        grid.add_row(k, v)
    return grid


def _layout(pictures: _Pictures, images: list[RenderableType], text: Table,
            width: int) -> RenderableType:
    if not images:
        return text
    inner = width - 4  # panel border and padding
    if inner - pictures.cols - 2 >= SIDE_BY_SIDE_TEXT:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(width=pictures.cols, no_wrap=True)
        grid.add_column()
        grid.add_row(Group(*images), text)
        return grid
    return Group(*images, text)


def _text_width(console: Console, pictures: _Pictures) -> int:
    inner = console.width - 4
    label = 10  # the key column and its gap
    if pictures.on and inner - pictures.cols - 2 >= SIDE_BY_SIDE_TEXT:
        return inner - pictures.cols - 2 - label
    return inner - label


def _usage_text(reply: dict[str, Any]) -> str:
    u = reply.get("usage") or {}
    return (f"in {u.get('input_tokens', 0)} · out {u.get('output_tokens', 0)} · "
            f"reasoning {u.get('reasoning_tokens', 0)}")


def _step_panel(console: Console, pictures: _Pictures, r: dict[str, Any], s: dict[str, Any],
                inst: Instance | None, full: bool) -> Panel:
    reply = s.get("reply") or {}
    info = s.get("info") or {}
    width = _text_width(console, pictures)
    fold = None if full else PROMPT_LINES
    short = None if full else REPLY_LINES
    rows: list[tuple[str, RenderableType]] = [("prompt", Text(_fold(s["prompt"], fold, width)))]
    parts = s.get("images") or []
    seen = []
    for p in parts:
        spec = p.get("overlay") or {}
        what = Path(p["path"]).name
        if spec.get("crop"):
            what += f", crop {_box(spec['crop'])}"
        if spec.get("labels"):
            what += ", overlay " + " ".join(
                f"{lab} {_box(b)}" for lab, b in zip(spec["labels"], spec["boxes"], strict=False))
        seen.append(what)
    if seen:
        rows.append(("image", Text("\n".join(seen))))
    if s.get("messages", 1) > 1:
        rows.append(("messages", Text(f"{s['messages']} (the conversation so far, then this prompt)")))
    if reply.get("error"):
        err = reply["error"]
        rows.append(("error", Text(f"{err['kind']}: {err['message']}", style="red")))
    else:
        rows.append(("reply", Text(_fold(reply.get("text", ""), short, width))))
    if reply.get("reasoning"):
        rows.append(("reasoning", Text(_fold(reply["reasoning"], short, width), style="italic")))
    if s.get("parse_error"):
        rows.append(("error", Text(f"parse: {s['parse_error']}", style="red")))
    elif not reply.get("error"):
        rows.append(("parsed", Text(_parsed_text(s, r.get("params") or {}))))
    if s.get("region"):
        region = s["region"]
        rows.append(("region", Text(_box(region))))
        rows.append(("metrics", Text(_metrics_text(_region_metrics(region, inst)))))
    extra = {k: v for k, v in info.items() if k not in _HIDDEN_INFO}
    if extra:
        rows.append(("info", Text(", ".join(f"{k}={v}" for k, v in extra.items()))))
    rows.append(("tokens", Text(_usage_text(reply))))
    timing = f"latency {reply.get('latency_s', 0):.3f} s · step {s.get('seconds', 0):.3f} s"
    rows.append(("time", Text(timing + (" · cached" if reply.get("cached") else ""))))

    pics = [pictures.step(p) for p in parts] if pictures.on else []
    title = f"step {s['index']} · {s['name']}"
    if "t" in info:
        title += f" · t={info['t']}" + (f", {info['axis']} cut" if info.get("axis") else "")
    bad = bool(s.get("parse_error") or reply.get("error"))
    return Panel(_layout(pictures, pics, _kv(rows), console.width), title=escape(title),
                 title_align="left", border_style="red" if bad else "blue")


def _result_panel(console: Console, pictures: _Pictures, r: dict[str, Any],
                  inst: Instance | None, note: str) -> Panel:
    m = r.get("metrics") or {}
    rows: list[tuple[str, RenderableType]] = [
        ("status", Text(_outcome(r), style="red" if r.get("error") else "green")),
    ]
    if r.get("error"):
        rows.append(("error", Text(r["error"].get("message", ""), style="red")))
    rows.append(("prediction", Text(_box(r.get("prediction")), style="bold red")))
    if inst is not None:
        rows.append(("truth", Text(_box(inst.truth.get("box")), style="bold green")))
    rows.append(("metrics", Text(_metrics_text(m) + ("  (unanswered: full-image Dist)"
                                                     if r.get("error") and "dist" in m else ""))))
    steps = r.get("steps") or []
    tot = Counter()
    for s in steps:
        for k, v in ((s.get("reply") or {}).get("usage") or {}).items():
            tot[k] += v
    calls = sum(1 for s in steps if not (s.get("reply") or {}).get("cached"))
    rows.append(("tokens", Text(_usage_text({"usage": tot}))))
    rows.append(("cost", Text(f"{calls} call{'s' * (calls != 1)} ({len(steps) - calls} cached) · "
                              f"{r.get('seconds', 0):.3f} s")))
    if note:
        rows.append(("note", Text(note, style="yellow")))
    pics = [pictures.result(inst, r.get("prediction"))] if pictures.on and inst else []
    return Panel(_layout(pictures, pics, _kv(rows), console.width),
                 title="result · [red]prediction[/] · [green]truth[/]", title_align="left",
                 border_style="red" if r.get("error") else "green")


def show_instance(console: Console, run_dir: Path, instance: str, *, strategy: str | None = None,
                  model: str | None = None, sample: int | None = None, step: int | None = None,
                  full: bool = False, images: bool = True) -> None:
    """Every matching trajectory of one instance, step by step."""
    if is_director(run_dir):
        return show_director.show_scene(console, run_dir, instance, strategy=strategy,
                                        model=model, sample=sample, step=step, full=full,
                                        images=images)
    config = run_config(run_dir)
    records = select(run_dir, instance, strategy=strategy, model=model, sample=sample)
    if step is not None:
        have = sorted({s["index"] for r in records for s in r.get("steps") or []})
        if step not in have:
            which = ("the matching trajectory" if len(records) == 1
                     else f"the {len(records)} matching trajectories")
            raise ValueError(f"no step {step} in {which} (steps: "
                             f"{', '.join(map(str, have)) or 'none'})")
        records = [r for r in records if any(s["index"] == step for s in r.get("steps") or [])]
    inst, note = _instance(config, instance)
    pictures = _Pictures(console, images)
    for r in records:
        sim = " [magenta](SIMULATED)[/]" if r.get("simulated") else (
            " (human)" if r.get("backend", "").startswith("human") else "")
        console.rule(f"{escape(r['instance_id'])} · {escape(r['model'])}{sim} · "
                     f"{escape(r['strategy'])} · sample {r['sample']}")
        head = Text()
        if inst is not None:
            head.append("task ", style="dim").append(inst.text.get("instruction", ""))
            head.append("   truth ", style="dim").append(_box(inst.truth.get("box")), style="green")
            head.append(f"   image {inst.width}×{inst.height}", style="dim")
        else:
            head.append(f"dataset unavailable: {note}", style="yellow")
        console.print(head)
        steps = r.get("steps") or []
        chosen = [s for s in steps if step is None or s["index"] == step]
        if not steps:
            console.print("[yellow]no steps journaled[/]")
        for s in chosen:
            console.print(_step_panel(console, pictures, r, s, inst, full))
        if step is None:
            console.print(_result_panel(console, pictures, r, inst, note if inst is None else ""))


# --- one trajectory as a PNG strip -------------------------------------------------------------


def write_strip(run_dir: Path, instance: str, out: Path, *, strategy: str | None = None,
                model: str | None = None, sample: int | None = None, step: int | None = None,
                height: int = 240):
    """Write one trajectory's steps (or only ``step``) and its result as a PNG strip; returns
    the ``StripLayout``. Several matching trajectories are an error: narrow them. A Director
    run's scene is drawn by ``show_director.write_png`` (its ``step`` is ignored)."""
    if is_director(run_dir):
        return show_director.write_png(run_dir, instance, out, strategy=strategy, model=model,
                                       sample=sample)
    config = run_config(run_dir)
    records = select(run_dir, instance, strategy=strategy, model=model, sample=sample)
    if len(records) > 1:
        listed = "; ".join(f"{r['model']} {r['strategy']} sample {r['sample']}"
                           for r in records[:4]) + (" …" if len(records) > 4 else "")
        raise ValueError(f"--png draws one trajectory; {len(records)} match ({listed}): "
                         "narrow with --strategy, --model, --sample")
    r = records[0]
    inst, note = _instance(config, instance)
    if inst is None:
        raise ValueError(f"cannot draw {instance!r}: {note}")
    return strip_record(r, inst, out, step=step, height=height)


def strip_record(r: dict[str, Any], inst, out: Path, *, step: int | None = None,
                 height: int = 240):
    """Draw one journal record as a strip: a tile per step (or only ``step``), then the
    result tile with the prediction red and the truth green. Returns the ``StripLayout``."""
    params = r.get("params") or {}
    tiles = []
    for s in r.get("steps") or []:
        if step is not None and s["index"] != step:
            continue
        parts = s.get("images") or [{"path": inst.image}]
        tiles.append(Tile(model_view(parts[0]), step_caption(s, params)))
    if step is not None and not tiles:
        raise ValueError(f"no step {step} in {r['model']} {r['strategy']} sample {r['sample']}")
    m = r.get("metrics") or {}
    if r.get("error"):
        caption = f"unanswered ({r['error']['kind']}) · truth green"
    else:
        caption = (f"prediction red · truth green · IoU {100 * m.get('iou', 0):.1f} · "
                   f"Dist {100 * m.get('dist', 0):.1f}")
    tiles.append(Tile(_result_view(inst, r.get("prediction"), None), caption))
    sim = " (simulated)" if r.get("simulated") else ""
    title = (f"{r['instance_id']} · {r['model']}{sim} · {r['strategy']} · sample "
             f"{r['sample']} · \u201c{inst.text.get('instruction', '')}\u201d")
    _, layout = strip(tiles, out, height=height, title=title)
    return layout
