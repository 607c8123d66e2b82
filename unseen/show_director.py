"""``unseen show`` for Director Task study runs (``run.json`` has ``"benchmark": "director"``).

- **Summary** (no scene): one row per (model, batch, condition): replies, answered, the rates
  of choosing the hidden block and the director-view block, visibility-report accuracy, the
  joint rate (each over the answered replies it applies to), and failures by reason; then the
  scenes with their key and outcomes, the most hidden-block choices first.
- **Scene** (a scene id): for each matching trajectory, the scene image with the hidden block
  outlined red, the director-view block green and the chosen block ringed magenta; each
  turn's prompt (folded unless ``full``), reply, reasoning and parsed fields; then the
  report and choice against the answer key, and the scored measures (✓/✗).
- **PNG** (``write_png``): one trajectory as the marked scene beside a text panel.

Models are named as the study names them (``study.json``'s aliases: ``gpt-x=sim:strong``
shows as ``gpt-x``); ``--model`` takes that name, the provider's model or the backend spec.
``--strategy`` takes a label (``director:batch=q,condition=move``, the ``director:`` may be
left out) or a condition name (``move/twoturn``); a condition asked in several batches keeps
the first batch of the design, and says so.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw
from rich import box as rich_box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .engine.errors import UserFileError
from .engine.images import load_image
from .engine.journal import checked, latest, read_run_json
from .engine.types import Instance
from .engine.userfiles import read_json_object
from .evals.director.dataset import SceneSetError, load_scenes
from .evals.director.measures import STUDY_FILE, model_names, read_study
from .evals.scenefunri.report import RunDirError, journal_of
from .renderers.strips import Mark, StripLayout, _wrap, draw_marks
from .renderers.terminal import cell_size, terminal_image
from .renderers.textures import font

HIDDEN_RGB = (225, 30, 30)
DV_RGB = (20, 170, 60)
CHOSEN_RGB = (215, 0, 215)
MAX_SHOWN = 12  # trajectories of one scene drawn before "… more: narrow"
SCENE_ROWS = 20  # scenes listed by the summary
MEASURES = (  # (key, label), in the order they are shown
    ("hidden", "chose the hidden block"), ("dv", "chose the director-view block"),
    ("accuracy", "visibility report right"), ("joint", "hidden block and report right"),
    ("ldv", "chose the largest-digit visible block"),
    ("ldv_other", "other choice is the largest-digit visible block"),
    ("count", "block count right"), ("known", "knowledge report right"),
    ("report_excludes_hidden", "report leaves the hidden block out"),
)


def is_director(run_dir: str | Path) -> bool:
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        return False
    try:  # a damaged run.json is the SceneFunRI view's to report
        return read_json_object(path).get("benchmark") == "director"
    except UserFileError:
        return False


# --- a run ---------------------------------------------------------------------------------


@dataclass
class DirectorRun:
    """A study run: its config, design, model names and (lazily) its scenes."""

    path: Path
    config: dict[str, Any]
    study: dict[str, Any]
    _sets: dict[str, tuple[dict[str, Instance], str]] = field(default_factory=dict)

    @classmethod
    def open(cls, run_dir: str | Path) -> DirectorRun:
        run_dir = Path(run_dir)
        journal_of(run_dir)
        config = read_run_json(run_dir)
        if config.get("benchmark") != "director":
            raise RunDirError(f"{run_dir}: not a Director Task run")
        path = run_dir / STUDY_FILE
        study = read_study(path) if path.is_file() else {}
        return cls(run_dir, config, study)

    @property
    def aliases(self) -> dict[str, str]:
        return model_names(self.study)

    def model(self, rec: dict[str, Any]) -> str:
        """The model's name in the study (its alias), else the provider's."""
        return self.aliases.get(rec.get("backend", ""), rec.get("model", "?"))

    @property
    def batches(self) -> list[str]:
        return [b["name"] for b in (self.study.get("design") or {}).get("batch", [])]

    def order(self, rec: dict[str, Any]) -> tuple:
        """Design order: batch, then the batch's condition order."""
        p = rec.get("params") or {}
        design = (self.study.get("design") or {}).get("batch", [])
        names = [b["name"] for b in design]
        bi = names.index(p.get("batch")) if p.get("batch") in names else len(names)
        conds = design[bi]["conditions"] if bi < len(design) else []
        ci = conds.index(p.get("condition")) if p.get("condition") in conds else len(conds)
        return bi, p.get("batch", ""), ci, p.get("condition", "")

    def records(self) -> list[dict[str, Any]]:
        return [r for r in latest(journal_of(self.path)).values()
                if "condition" in (r.get("params") or {})]

    def _folder_candidates(self, name: str) -> list[Path]:
        out = []
        entry = (self.study.get("scenes") or {}).get(name) or {}
        if entry.get("path"):
            out.append(Path(entry["path"]))
        if self.config.get("data"):
            out.append(Path(self.config["data"]) / name)
        out.append(self.path / "scenes" / name)
        return out

    def scene_set(self, name: str) -> tuple[dict[str, Instance], str]:
        """The scenes of set ``name`` by id, or ({}, why not)."""
        if name not in self._sets:
            why = f"no folder for scene set {name!r}"
            for folder in self._folder_candidates(name):
                try:
                    insts, _ = load_scenes(folder)
                except (SceneSetError, OSError) as exc:
                    why = str(exc)
                    continue
                self._sets[name] = ({i.id: i for i in insts}, "")
                break
            else:
                self._sets[name] = ({}, why)
        return self._sets[name]

    def scene(self, scene_id: str) -> tuple[Instance | None, str]:
        scenes, why = self.scene_set(scene_id.rsplit("-", 1)[0])
        inst = scenes.get(scene_id)
        return inst, ("" if inst else why or f"scene {scene_id!r} is not in its set's folder")

    def scenes(self) -> tuple[dict[str, Instance], str]:
        """Every scene set the study names (a note on the ones that could not be read)."""
        out: dict[str, Instance] = {}
        notes = []
        for name in (self.study.get("scenes") or {}):
            got, why = self.scene_set(name)
            out.update(got)
            if why:
                notes.append(why)
        return out, "; ".join(notes)


# --- selecting trajectories --------------------------------------------------------------------


def _condition(rec: dict[str, Any]) -> str:
    return (rec.get("params") or {}).get("condition", "?")


def _batch(rec: dict[str, Any]) -> str:
    return (rec.get("params") or {}).get("batch", "")


def select(run: DirectorRun, scene: str | None, *, strategy: str | None = None,
           model: str | None = None, sample: int | None = None,
           first_batch: bool = True) -> tuple[list[dict[str, Any]], str]:
    """The current records of ``scene`` (all when None) that pass the filters, in design order,
    and a note (the batch kept when a condition is asked in several); a one-line ValueError
    when nothing matches."""
    records = run.records()
    if not records:
        raise ValueError(f"{run.path}: no Director trajectories journaled yet")
    if scene is not None:
        ids = sorted({r["instance_id"] for r in records})
        if scene not in ids:
            raise ValueError(f"no scene {scene!r} in {run.path} ({len(ids)} scenes, e.g. "
                             f"{', '.join(ids[:3])})")
        journal = journal_of(run.path)  # their steps are shown: checked in full
        records = [checked(r, journal) for r in records if r["instance_id"] == scene]
    if model:
        names = sorted({run.model(r) for r in records})
        records = [r for r in records if model in (run.model(r), r.get("model"), r.get("backend"))]
        if not records:
            raise ValueError(f"no model {model!r} in {run.path} (models: {', '.join(names)})")
    note = ""
    if strategy:
        labels = {r["strategy"] for r in records}
        label = strategy if strategy in labels else f"director:{strategy}"
        if label in labels:
            records = [r for r in records if r["strategy"] == label]
        else:
            by_cond = [r for r in records if _condition(r) == strategy]
            if not by_cond:
                conds = sorted({_condition(r) for r in records})
                raise ValueError(
                    f"no condition or strategy {strategy!r} in {run.path} (conditions: "
                    f"{', '.join(conds)}; or a label such as {min(labels)})")
            batches = sorted({_batch(r) for r in by_cond},
                             key=lambda b: run.order({"params": {"batch": b}})[0])
            if first_batch and len(batches) > 1:
                note = (f"condition {strategy} is asked in batches {', '.join(batches)}: "
                        f"showing batch {batches[0]}; for another, --strategy "
                        f"director:batch={batches[1]},condition={strategy}")
                by_cond = [r for r in by_cond if _batch(r) == batches[0]]
            records = by_cond
    if sample is not None:
        have = sorted({r["sample"] for r in records})
        records = [r for r in records if r["sample"] == sample]
        if not records:
            raise ValueError(f"no sample {sample} among the matching trajectories (samples: "
                             f"{', '.join(map(str, have))})")
    records.sort(key=lambda r: (run.model(r), run.order(r), r["sample"], r["instance_id"]))
    return records, note


# --- text ----------------------------------------------------------------------------------


def _digits(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, list | tuple | set):
        return "{" + ", ".join(str(x) for x in sorted(v, key=str)) + "}"
    return str(v)


def fields_text(parsed: Any) -> str:
    """``visible {1, 4, 6} · block 7``, from a turn's parsed fields or a prediction."""
    if not isinstance(parsed, dict) or not parsed:
        return "—" if parsed is None else json.dumps(parsed, default=str)
    return " · ".join(f"{k} {_digits(v)}" for k, v in parsed.items())


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
    return (f"hidden {key['hidden_digit']} · visible {_digits(key['visible_digits'])} · "
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
        t.append(f"{k} ")
        t.append("✓" if ok else "✗", style="green" if ok else "red")
    return t if t else Text("— (unanswered: no measure)", style="dim")


def step_caption(s: dict[str, Any]) -> str:
    """``turn 1 · visible {1, 4}`` (or ``(no answer)``)."""
    info = s.get("info") or {}
    head = f"turn {info.get('turn', s.get('index', 0) + 1)}"
    if s.get("parse_error") or (s.get("reply") or {}).get("error"):
        return f"{head} (no answer)"
    return f"{head} · {fields_text(s.get('parsed'))}"


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


def _chosen(rec: dict[str, Any]) -> Any:
    pred = rec.get("prediction")
    return pred.get("block") if isinstance(pred, dict) else None


# --- the summary -------------------------------------------------------------------------------


_COMPACT: dict[str, Any] = {"box": rich_box.SIMPLE_HEAD, "show_edge": False, "padding": (0, 1),
                            "collapse_padding": True}


def _rate(recs: list[dict[str, Any]], key: str) -> tuple[float, int] | None:
    vals = [(r.get("metrics") or {})[key] for r in recs
            if r.get("status") == "answered" and key in (r.get("metrics") or {})]
    return (100 * sum(vals) / len(vals), len(vals)) if vals else None


def _pct(v: tuple[float, int] | None) -> Text:
    return Text("—", style="dim") if v is None else Text(f"{v[0]:.1f}")


def show_summary(console: Console, run_dir: Path, *, strategy: str | None = None,
                 model: str | None = None, worst: int = SCENE_ROWS) -> None:
    """Rates per (model, batch, condition), then the scenes with their outcomes."""
    run = DirectorRun.open(run_dir)
    records, _ = select(run, None, strategy=strategy, model=model, first_batch=False)
    design = run.study.get("design") or {}
    sets = ", ".join(f"{k} {v.get('n', '?')}" for k, v in (run.study.get("scenes") or {}).items())
    console.rule(f"Director study {escape(str(design.get('name', '?')))} · run "
                 f"{escape(str(run.config.get('run', run.path.name)))} · {len(records)} replies"
                 + (f" · scenes {escape(sets)}" if sets else ""))
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(run.model(r), run.order(r))].append(r)
    simulated = {r.get("backend") for r in records if r.get("simulated")}
    extra = [k for k in ("ldv", "count", "known") if any(k in (r.get("metrics") or {}) for r in records)]
    table = Table(title="per model, batch and condition", title_justify="left", **_COMPACT,
                  caption="ans: answered/asked · rates: % of the answered replies each applies "
                          "to · hidden: chose the hidden "
                          "block · dv: the director-view block · acc: visibility report right · "
                          "joint: hidden block and report right"
                          + (" · ldv: the largest-digit visible block" if "ldv" in extra else "")
                          + (" · *: a simulated respondent" if simulated else ""),
                  caption_justify="left")
    table.add_column("model", overflow="fold")
    table.add_column("batch", overflow="fold")
    table.add_column("condition", no_wrap=True)
    table.add_column("ans", justify="right", no_wrap=True)
    for col in ("hidden", "dv", "acc", "joint", *extra):
        table.add_column(col, justify="right", no_wrap=True, min_width=max(len(col), 3))
    table.add_column("failures", overflow="fold")
    for (name, order), recs in sorted(groups.items()):
        answered = sum(r["status"] == "answered" for r in recs)
        fails = Counter((r.get("error") or {}).get("kind", "?") for r in recs
                        if r["status"] != "answered")
        sim = any(r.get("backend") in simulated for r in recs)
        human = all(r.get("backend", "").startswith("human") for r in recs)
        table.add_row(
            Text(name) + (Text("*", style="magenta") if sim else Text(" (human)") if human
                          else Text()),
            escape(order[1]), escape(order[3]),
            Text(f"{answered}/{len(recs)}", style="" if answered == len(recs) else "yellow"),
            *(_pct(_rate(recs, k)) for k in ("hidden", "dv", "accuracy", "joint", *extra)),
            Text(", ".join(f"{k} {v}" for k, v in fails.most_common()) or "—",
                 style="red" if fails else "dim"))
    console.print(table)
    console.print(_scene_table(run, records, worst))


def _scene_table(run: DirectorRun, records: list[dict[str, Any]], worst: int) -> Table:
    scenes, note = run.scenes()
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by[r["instance_id"]].append(r)

    def counts(recs):
        ans = [r for r in recs if r["status"] == "answered"]
        blocks = [(r.get("metrics") or {}) for r in ans if "hidden" in (r.get("metrics") or {})]
        reports = [(r.get("metrics") or {})["accuracy"] for r in ans
                   if "accuracy" in (r.get("metrics") or {})]
        return (len(ans), sum(m["hidden"] for m in blocks), sum(m["dv"] for m in blocks),
                len(blocks), sum(reports), len(reports))

    stats = {sid: counts(recs) for sid, recs in by.items()}

    def badness(sid: str) -> tuple:
        _, hid, dv, nb, _, _ = stats[sid]
        return (-(hid / nb) if nb else 0, (dv / nb) if nb else 1, sid)

    ids = sorted(by, key=badness)
    table = Table(title=f"scenes, most hidden-block choices first: {min(worst, len(ids))} of "
                        f"{len(ids)}", title_justify="left", **_COMPACT,
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
        choices = Counter(c for c in (_chosen(r) for r in recs) if c is not None)
        ctext = Text()
        for digit, k in sorted(choices.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            style = ("red" if digit == key.get("hidden_digit") else
                     "green" if digit == key.get("director_view_digit") else "yellow")
            ctext.append(f"{' ' if ctext else ''}{digit}×{k}", style=style)
        fails = Counter((r.get("error") or {}).get("kind", "?") for r in recs
                        if r["status"] != "answered")
        table.add_row(
            escape(sid), Text(str(key.get("hidden_digit", "?")), style="red"),
            Text(str(key.get("director_view_digit", "?")), style="green"),
            _digits(key.get("visible_digits")) if key else "?", str(len(recs)),
            Text(f"{hid:.0f}/{nb}", style="red" if hid else "") if nb else Text("—", style="dim"),
            Text(f"{dv:.0f}/{nb}") if nb else Text("—", style="dim"),
            Text(f"{rep:.0f}/{nr}") if nr else Text("—", style="dim"),
            ctext or Text("—", style="dim"),
            Text(", ".join(f"{k} {v}" for k, v in fails.most_common()), style="red")
            if fails else Text("—", style="dim"))
    return table


# --- one scene, turn by turn -------------------------------------------------------------------


def _rec_title(run: DirectorRun, r: dict[str, Any]) -> str:
    sim = " (SIMULATED)" if r.get("simulated") else (
        " (human)" if r.get("backend", "").startswith("human") else "")
    return (f"{r['instance_id']} · {run.model(r)}{sim} · {_condition(r)} · batch {_batch(r)} · "
            f"sample {r['sample']}")


def _scene_panel(console: Console, pictures, r: dict[str, Any], inst: Instance | None,
                 note: str) -> Panel:
    from .show import _kv, _layout

    chosen = _chosen(r)
    rows: list[tuple[str, RenderableType]] = []
    if inst is None:
        rows.append(("scene", Text(f"unavailable: {note}", style="yellow")))
        return Panel(_kv(rows), title="scene", title_align="left", border_style="yellow")
    rows.append(("marks", legend(inst, chosen)))
    rows.append(("blocks", Text(f"{_digits(inst.truth['digits'])} on the table")))
    rows.append(("image", Text(f"{Path(inst.image).name} · {inst.width}×{inst.height}")))
    turns = len(r.get("steps") or [])
    rows.append(("condition", Text(f"{_condition(r)} · {turns} turn{'s' * (turns != 1)} · "
                                   f"batch {_batch(r)}")))
    pics: list[RenderableType] = []
    if pictures.on:
        try:
            if pictures.protocol == "kitty":
                from .show import _thumb

                pics = [terminal_image(_thumb(marked_scene(inst, chosen)), pictures.cols, "kitty")]
            else:
                pics = [terminal_image(marked_scene(inst, chosen, pictures.cols), pictures.cols,
                                       "halfblock")]
        except OSError as exc:
            pics = [Text(f"(image unreadable: {exc})", style="red")]
    return Panel(_layout(pictures, pics, _kv(rows), console.width),
                 title="scene · [red]hidden[/] · [green]director view[/] · [magenta]chosen[/]",
                 title_align="left", border_style="blue")


def fold_prompt(prompt: str, lines: int | None, width: int) -> str:
    """A Director prompt folded: its first paragraph, when it is the intro every condition
    shares, cut to one line; the rest (insert, stated line, questions, format) whole up to
    ``lines`` + 6 lines; ``lines`` None: all of it."""
    from .evals.director.prompts import templates
    from .show import _fold

    if lines is None:
        return _fold(prompt, None, width)
    first, sep, rest = (prompt or "").partition("\n\n")
    if not (sep and first.startswith(templates()["intro"][:60])):
        return _fold(prompt, lines + 6, width)  # a later turn: no intro
    head = _fold(first, 1, width).replace("(--full)", "of the shared intro (--full)")
    return head + "\n\n" + _fold(rest, lines + 6, width)


def _turn_panel(console: Console, s: dict[str, Any], n_turns: int, full: bool) -> Panel:
    from .show import PROMPT_LINES, REPLY_LINES, _fold, _kv, _usage_text

    width = console.width - 4 - 10
    fold = None if full else PROMPT_LINES
    short = None if full else REPLY_LINES
    reply = s.get("reply") or {}
    info = s.get("info") or {}
    rows: list[tuple[str, RenderableType]] = [("prompt", Text(fold_prompt(s.get("prompt", ""),
                                                                          fold, width)))]
    if s.get("messages", 1) > 1:
        rows.append(("messages", Text(f"{s['messages']} (the dialogue so far, then this prompt)")))
    if reply.get("error"):
        err = reply["error"]
        rows.append(("error", Text(f"{err.get('kind')}: {err.get('message', '')}", style="red")))
    else:
        rows.append(("reply", Text(_fold(reply.get("text") or "", short, width))))
    if reply.get("reasoning"):
        rows.append(("reasoning", Text(_fold(reply["reasoning"], short, width), style="italic")))
    if s.get("parse_error"):
        rows.append(("error", Text(f"parse: {s['parse_error']}", style="red")))
    elif not reply.get("error"):
        rows.append(("parsed", Text(fields_text(s.get("parsed")), style="bold")))
    timing = f"latency {reply.get('latency_s') or 0:.3f} s"
    rows.append(("tokens", Text(_usage_text(reply) + " · " + timing
                                + (" · cached" if reply.get("cached") else ""), style="dim")))
    asks = ", ".join(info.get("fields") or [])
    title = f"turn {info.get('turn', s.get('index', 0) + 1)} of {n_turns}" + (
        f" · asks {asks}" if asks else "")
    bad = bool(s.get("parse_error") or reply.get("error"))
    return Panel(_kv(rows), title=escape(title), title_align="left",
                 border_style="red" if bad else "blue")


def _result_panel(r: dict[str, Any], inst: Instance | None, code: Any = None) -> Panel:
    from .show import _kv

    pred = r.get("prediction") if isinstance(r.get("prediction"), dict) else {}
    rows: list[tuple[str, RenderableType]] = []
    status = r.get("status", "?") + (f" ({r['error'].get('kind')})" if r.get("error") else "")
    rows.append(("status", Text(status, style="red" if r.get("error") else "green")))
    if r.get("error"):
        rows.append(("error", Text(r["error"].get("message", ""), style="red")))
    key = inst.truth if inst else None
    m = r.get("metrics") or {}
    for f, mkey in (("visible", "accuracy"), ("known", "known"), ("count", "count")):
        if f in pred:
            t = Text(f"{f} {_digits(pred[f])}")
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
        k.append(f"visible {_digits(key['visible_digits'])}").append(" · ")
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
    good = r.get("status") == "answered"
    return Panel(_kv(rows), title="result · report, choice and the answer key",
                 title_align="left", border_style="green" if good else "red")


def show_scene(console: Console, run_dir: Path, scene: str, *, strategy: str | None = None,
               model: str | None = None, sample: int | None = None, step: int | None = None,
               full: bool = False, images: bool = True) -> None:
    """Every matching trajectory of one scene (at most ``MAX_SHOWN``), turn by turn."""
    from .show import _Pictures

    run = DirectorRun.open(run_dir)
    records, note = select(run, scene, strategy=strategy, model=model, sample=sample)
    if step is not None:
        have = sorted({s["index"] for r in records for s in r.get("steps") or []})
        if step not in have:
            raise ValueError(f"no step {step} in the matching trajectories (steps, one per "
                             f"turn: {', '.join(map(str, have)) or 'none'})")
    inst, why = run.scene(scene)
    pictures = _Pictures(console, images)
    from .evals.director.coding.items import codes_by_key

    codes = codes_by_key(run_dir)  # the trace's codes, where `unseen director code` ran
    if note:
        console.print(Text(note, style="yellow"))
    if len(records) > MAX_SHOWN:
        console.print(Text(f"{len(records)} trajectories match; showing the first {MAX_SHOWN} "
                           "(narrow with --strategy, --model, --sample)", style="yellow"))
    for r in records[:MAX_SHOWN]:
        console.rule(escape(_rec_title(run, r)))
        console.print(_scene_panel(console, pictures, r, inst, why))
        steps = r.get("steps") or []
        if not steps:
            console.print("[yellow]no turns journaled[/]")
        for s in steps:
            if step is None or s["index"] == step:
                console.print(_turn_panel(console, s, len(steps), full))
        console.print(_result_panel(r, inst, codes.get(r["key"])))


# --- one trajectory as a PNG -------------------------------------------------------------------


def _question_lines(prompt: str) -> list[str]:
    """The prompt's paragraphs that ask something (``Question A: …``), as lines."""
    paras = [p for p in (prompt or "").split("\n\n")
             if "Question" in p and not p.startswith("Reply with")]
    return [line for p in paras for line in p.splitlines()]


def png_text(run: DirectorRun, r: dict[str, Any], inst: Instance) -> list[tuple[str, tuple]]:
    """The PNG's text panel: (line, colour) pairs."""
    dark, dim, red, green = (20, 20, 20), (110, 110, 110), HIDDEN_RGB, DV_RGB
    key = inst.truth
    pred = r.get("prediction") if isinstance(r.get("prediction"), dict) else {}
    m = r.get("metrics") or {}
    out: list[tuple[str, tuple]] = [
        (f"{r['instance_id']} · {run.model(r)}{' (simulated)' if r.get('simulated') else ''}", dark),
        (f"condition {_condition(r)} · batch {_batch(r)} · sample {r['sample']}", dark), ("", dark)]
    steps = r.get("steps") or []
    for i, s in enumerate(steps):
        info = s.get("info") or {}
        if i:
            out.append(("", dark))
        out.append((f"turn {info.get('turn', s['index'] + 1)} of {len(steps)}", dim))
        out += [(f"  {line}", dim) for line in _question_lines(s.get("prompt", ""))]
        reply = s.get("reply") or {}
        if reply.get("error"):
            out.append((f"  → error {reply['error'].get('kind')}", red))
        elif s.get("parse_error"):
            out.append((f"  → unreadable: {s['parse_error']}", red))
        else:
            out.append((f"  → {fields_text(s.get('parsed'))}", dark))
    out.append(("", dark))
    if r.get("error"):
        out.append((f"unanswered ({r['error'].get('kind')})", red))
    if "visible" in pred:
        ok = m.get("accuracy", 0) >= 1
        out.append((f"report  visible {_digits(pred['visible'])} {'✓' if ok else '✗'}",
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
    out.append((f"visible {_digits(key['visible_digits'])}", dark))
    ldv = key.get("largest_digit_visible")
    out.append((f"largest-digit visible {'—' if ldv is None else ldv}", dark))
    out.append(("", dark))
    shown = [f"{k} {'✓' if m[k] >= 1 else '✗'}" for k, _ in MEASURES if k in m]
    if shown:
        out.append(("measures  " + " · ".join(shown), dark))
    return out


def write_png(run_dir: Path, scene: str, out: Path, *, strategy: str | None = None,
              model: str | None = None, sample: int | None = None,
              panel: int = 460) -> StripLayout:
    """One trajectory as a PNG: the marked scene at full size, a text panel beside it.
    Returns a ``StripLayout`` whose one tile is the scene."""
    run = DirectorRun.open(run_dir)
    records, _ = select(run, scene, strategy=strategy, model=model, sample=sample)
    if len(records) > 1:
        listed = "; ".join(f"{run.model(r)} {_condition(r)} (batch {_batch(r)}) sample "
                           f"{r['sample']}" for r in records[:4]) + (" …" if len(records) > 4 else "")
        raise ValueError(f"--png draws one trajectory; {len(records)} match ({listed}): narrow "
                         "with --strategy, --model, --sample")
    r = records[0]
    inst, why = run.scene(scene)
    if inst is None:
        raise ValueError(f"cannot draw {scene!r}: {why}")
    img = marked_scene(inst, _chosen(r))
    pad, size = 12, 14
    f = font(size)
    line_h = size + 5
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    lines: list[tuple[str, tuple]] = []
    for text, color in png_text(run, r, inst):
        lines += [(piece, color) for piece in _wrap(probe, text, f, panel - pad, 3)]
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
