"""``unseen tui``: browse run directories in a terminal UI (textual).

Left, a tree: run → (model, strategy) → trajectories (instance, sample) → steps; right, the
selected item: a step's prompt, reply, parsed answer and region with its metrics, the image
the model saw with its overlay redrawn (half-blocks), and for elimination strategies (their
parameters have ``T``) Dist per iteration as a sparkline (the trajectory's own, and the
(model, strategy) mean from ``curves()``, computed in the background on first request).

Director Task study runs (``"benchmark": "director"``) browse the same way: (model, condition)
→ scenes → turns, the model named as the study names it; the image pane shows the scene with
the hidden block outlined red, the director-view block green and the chosen block magenta.

Keys: ``0``–``4`` (or ``f`` to cycle) filter trajectories by outcome (all, correct = a
CAcc@50 hit, or for a Director reply the director-view block (a right report where no block
is asked), wrong, unanswered, error = a provider failure); ``/`` focuses the text filter
(instance ids and instructions, or a Director scene's key: ``hidden 7``); ``c`` compares, on the selected instance, the trajectories of
every strategy of the same model in columns; ``escape`` closes it; ``q`` quits.

Opening is one streaming pass over each journal that keeps a light index (key → byte
offset plus the few fields the lists need: the JSON before ``"steps"`` is all that is
parsed); a full record is read, by seeking to its offset, only when selected. The dataset's
``instances.jsonl`` is parsed directly (no image is opened or hashed); only the selected
step's image is loaded.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from .engine.errors import UserFileError
from .engine.journal import RESUMABLE_ERRORS, JournalError, check_head, checked, read_run_json
from .engine.redact import scrub_bytes
from .engine.sanitize import clean, shown
from .engine.userfiles import iter_lines
from .evals.scenefunri.report import RunDirError, journal_of

OUTCOMES = ("all", "correct", "wrong", "unanswered", "error")
MARK = {"correct": "✓", "wrong": "✗", "unanswered": "∅", "error": "!"}
MAX_LEAVES = 500  # trajectories listed under one (model, strategy) before "… more"
IMAGE_COLS = 60
_STEPS = b'"steps"'


def _prompt_and_reply(t: Text, s: dict[str, Any]) -> None:
    """A step's prompt, then its reply (or error) and reasoning."""
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


def _usage(t: Text, reply: dict[str, Any]) -> None:
    u = reply.get("usage") or {}
    t.append(f"tokens in {u.get('input_tokens', 0)} · out {u.get('output_tokens', 0)} · "
             f"latency {reply.get('latency_s') or 0:.3f} s"
             + (" · cached" if reply.get("cached") else ""), style="dim")


# --- the index -----------------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One current trajectory: where its record lies and what the lists show."""

    run: int
    offset: int
    length: int
    instance_id: str
    model: str
    strategy: str
    sample: int
    status: str
    error_kind: str | None
    cacc50: float | None
    dist: float | None
    iterative: bool
    director: bool = False
    dm: tuple[float | None, float | None, float | None] | None = None  # hidden, dv, accuracy
    note: str = ""  # the leaf's dim suffix (a Director reply's choice)

    @property
    def outcome(self) -> str:
        if self.status == "answered":
            if self.director:
                hidden, dv, acc = self.dm or (None, None, None)
                return "correct" if ((acc if dv is None else dv) or 0) >= 1 else "wrong"
            return "correct" if (self.cacc50 or 0) >= 1 else "wrong"
        return "error" if self.error_kind in RESUMABLE_ERRORS else "unanswered"


@dataclass
class RunInfo:
    path: Path
    config: dict[str, Any]
    instances: dict[str, dict[str, Any]]  # id → {"instruction", "box", "image"}
    note: str = ""
    scenes: dict[str, Any] = field(default_factory=dict)  # a Director run: id → Instance
    aliases: dict[str, str] = field(default_factory=dict)  # a Director run: backend → model

    @property
    def director(self) -> bool:
        return self.config.get("benchmark") == "director"


@dataclass
class Index:
    runs: list[RunInfo]
    entries: list[Entry]
    groups: dict[tuple[int, str, str], list[Entry]] = field(default_factory=dict)

    def read(self, e: Entry) -> dict[str, Any]:
        """The full record of ``e`` (one seek, one line), checked in full."""
        path = journal_of(self.runs[e.run].path)
        with open(path, "rb") as fh:
            fh.seek(e.offset)
            return clean(checked(json.loads(scrub_bytes(fh.read(e.length))), path))


def _head(line: bytes) -> dict[str, Any] | None:
    """The record's fields before ``steps`` (the whole record when they cannot be cut off)."""
    at = line.find(_STEPS)
    cut = line.rfind(b",", 0, at) if at > 0 else -1
    if cut > 0:
        try:
            return json.loads(line[:cut] + b"}")
        except (ValueError, RecursionError):  # not JSON, or not UTF-8
            pass
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _dataset_instances(data: str | None) -> tuple[dict[str, dict[str, Any]], str]:
    """``instances.jsonl`` of the run's dataset, parsed without opening any image."""
    if not data:
        return {}, "run.json names no dataset"
    path = Path(data)
    file = path / "instances.jsonl" if path.is_dir() else path
    out: dict[str, dict[str, Any]] = {}
    try:
        for _, raw in iter_lines(file):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
                out[obj["id"]] = {"instruction": shown(obj.get("instruction", "")),
                                  "box": obj.get("box"),
                                  "image": str((file.parent / obj["image"]).resolve())}
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue
    except (OSError, UserFileError) as exc:
        return {}, f"dataset unavailable: {exc}"
    return out, ""


def build_index(run_dirs: list[str | Path]) -> Index:
    """Stream each journal once; keep the last record of each key as an ``Entry``."""
    intern = sys.intern
    runs: list[RunInfo] = []
    entries: list[Entry] = []
    for ri, rd in enumerate(run_dirs):
        rd = Path(rd)
        path = journal_of(rd)
        cfg_path = rd / "run.json"
        config = clean(read_run_json(rd)) if cfg_path.is_file() else {}
        bench = config.get("benchmark", "scenefunri")
        if bench == "director":
            run_info = _director_run(rd, config)
        elif bench != "scenefunri":
            raise RunDirError(f"{rd}: a {bench} run; `unseen tui` reads SceneFunRI and "
                              "Director runs only")
        else:
            insts, note = _dataset_instances(config.get("data"))
            run_info = RunInfo(rd, config, insts, note)
        runs.append(run_info)
        director, aliases = run_info.director, run_info.aliases
        last: dict[str, Entry] = {}
        offset = 0
        with open(path, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                n = len(line)
                if not line.endswith(b"\n"):
                    break  # a torn last line
                rec = _head(line)
                if rec is None:
                    raise JournalError(f"{path}:{lineno}: not a JSON record: the journal is "
                                       "damaged")
                rec = clean(check_head(path, lineno, rec))  # shown: no escapes, no secrets
                m = rec.get("metrics") or {}
                err = rec.get("error") or {}
                model = aliases.get(rec.get("backend", ""), rec.get("model", "?"))
                last[rec["key"]] = Entry(
                    ri, offset, n, intern(str(rec.get("instance_id", "?"))),
                    intern(str(model)), intern(str(rec.get("strategy", "?"))),
                    int(rec.get("sample", 0)), intern(str(rec.get("status", "?"))),
                    err.get("kind"), m.get("cacc50"), m.get("dist"),
                    "T" in (rec.get("params") or {}), director,
                    (m.get("hidden"), m.get("dv"), m.get("accuracy")) if director else None,
                    _director_note(rec) if director else f"Dist {_pct(m.get('dist'))}")
                offset += n
        entries.extend(last.values())
    groups: dict[tuple[int, str, str], list[Entry]] = defaultdict(list)
    for e in entries:
        groups[(e.run, e.model, e.strategy)].append(e)
    for v in groups.values():
        v.sort(key=lambda e: (e.instance_id, e.sample))
    return Index(runs, entries, dict(sorted(groups.items())))


def _director_run(rd: Path, config: dict[str, Any]) -> RunInfo:
    """A Director run with its scenes (answer key and block boxes) and model names."""
    from .show_director import DirectorRun, key_text

    run = DirectorRun.open(rd)
    scenes, note = run.scenes()
    insts = {sid: {"instruction": key_text(i.truth), "box": None, "image": i.image}
             for sid, i in scenes.items()}
    return RunInfo(rd, config, insts, note, scenes, run.aliases)


def _director_note(rec: dict[str, Any]) -> str:
    """``block 7 · hidden`` / ``block 6 · dir-view`` / ``report ✓`` for a Director leaf."""
    pred = rec.get("prediction") if isinstance(rec.get("prediction"), dict) else {}
    m = rec.get("metrics") or {}
    if rec.get("status") != "answered":
        return (rec.get("error") or {}).get("kind") or ""
    parts = []
    if "block" in pred:
        role = " hidden" if m.get("hidden") else " dir-view" if m.get("dv") else ""
        parts.append(f"block {pred['block']}{role}")
    for f, k in (("visible", "accuracy"), ("known", "known"), ("count", "count")):
        if k in m and f in pred:
            parts.append(f"{f} {'✓' if m[k] >= 1 else '✗'}")
    return " · ".join(parts)


def _label_parts(label: str) -> dict[str, str]:
    """``director:batch=q,condition=move`` → {"batch": "q", "condition": "move"}."""
    _, _, rest = label.partition(":")
    return dict(kv.split("=", 1) for kv in rest.split(",") if "=" in kv)


# --- text helpers --------------------------------------------------------------------------


def _box(b: Any) -> str:
    return "none" if not b else "[" + ", ".join(f"{v:.0f}" for v in b) + "]"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


def _metrics(m: dict[str, Any] | None) -> str:
    if not m:
        return "—"
    return (f"CAcc@75/50 {100 * m.get('cacc75', 0):.0f}/{100 * m.get('cacc50', 0):.0f}  "
            f"IoU {_pct(m.get('iou'))}  Dist {_pct(m.get('dist'))}")


def _image_size(path: str) -> tuple[int, int] | None:
    from .engine.images import open_image

    try:
        with open_image(path) as im:  # the header only
            return im.size
    except OSError:
        return None


def dist_track(record: dict[str, Any], truth: list[float], size: tuple[int, int]) -> list[float]:
    """Dist ×100 of the region after each step t (t = 0: the full image), as ``curves()``
    counts it: an unreadable step keeps the region, a short trajectory its last region."""
    from .evals.scenefunri.metrics import score

    w, h = size
    track = [[0.0, 0.0, float(w), float(h)]]
    for s in record.get("steps") or []:
        if s.get("region") is None:
            break
        track.append(s["region"])
    T = int((record.get("params") or {}).get("T", len(track) - 1))
    track += [track[-1]] * (T + 1 - len(track))
    return [100 * score(r, truth, w, h)["dist"] for r in track]


def spark_text(label: str, values: list[float]) -> str:
    from .evals.scenefunri.curves import sparkline

    if not values:
        return f"{label}: —"
    best = min(range(len(values)), key=values.__getitem__)
    return (f"{label}: {sparkline(values)}  t=0 {values[0]:.1f} → t={len(values) - 1} "
            f"{values[-1]:.1f}  (best t={best}, {values[best]:.1f})")


# --- the app -------------------------------------------------------------------------------

from textual.app import App, ComposeResult  # noqa: E402
from textual.binding import Binding  # noqa: E402
from textual.containers import Horizontal, Vertical, VerticalScroll  # noqa: E402
from textual.widgets import Footer, Header, Input, Static, Tree  # noqa: E402
from textual.widgets.tree import TreeNode  # noqa: E402


class TuiApp(App):
    """Browse runs → (model, strategy) → trajectories → steps."""

    TITLE = "unseen"
    CSS = """
    #left { width: 44%; min-width: 30; }
    #filter { height: 3; }
    #tree { height: 1fr; }
    #right { width: 1fr; padding: 0 1; }
    #compare { display: none; height: 1fr; }
    .col { width: 1fr; border: round $primary; padding: 0 1; }
    #status { height: 1; background: $boost; }
    """
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("/", "focus_filter", "search"),
        Binding("f", "cycle_outcome", "outcome"),
        Binding("0", "outcome('all')", "all", show=False),
        Binding("1", "outcome('correct')", "correct", show=False),
        Binding("2", "outcome('wrong')", "wrong", show=False),
        Binding("3", "outcome('unanswered')", "unanswered", show=False),
        Binding("4", "outcome('error')", "error", show=False),
        Binding("c", "compare", "compare"),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(self, run_dirs: list[str | Path] | None = None, *,
                 index: Index | None = None) -> None:
        super().__init__()
        self.index = index if index is not None else build_index(list(run_dirs or []))
        self.outcome = "all"
        self.text = ""
        self._records: OrderedDict[tuple[int, int], dict[str, Any]] = OrderedDict()
        self._curves: dict[int, list[dict[str, Any]] | str] = {}
        self._current: Any = None
        self.image_rendered = False  # whether the image pane shows a picture (for tests)

    # layout
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Input(placeholder="/ filter: instance id or instruction", id="filter")
                yield Tree("runs", id="tree")
            with VerticalScroll(id="right"):
                yield Static("", id="detail")
                yield Static("", id="image")
                yield Static("", id="curve")
        yield Horizontal(id="compare")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one("#tree", Tree)
        tree.show_root = False
        tree.guide_depth = 2
        self._rebuild()
        tree.focus()

    # filtering
    def matches(self, e: Entry) -> bool:
        if self.outcome != "all" and e.outcome != self.outcome:
            return False
        if self.text:
            q = self.text.lower()
            inst = self.index.runs[e.run].instances.get(e.instance_id) or {}
            return q in e.instance_id.lower() or q in inst.get("instruction", "").lower()
        return True

    def shown(self) -> list[Entry]:
        """The trajectories that pass the filters, in list order."""
        return [e for es in self.index.groups.values() for e in es if self.matches(e)]

    def shown_instances(self) -> set[str]:
        return {e.instance_id for e in self.shown()}

    def _rebuild(self) -> None:
        tree = self.query_one("#tree", Tree)
        expanded = {n.data[1] for n in self._walk(tree.root)
                    if n.data and n.data[0] == "group" and n.is_expanded}
        tree.clear()
        total = 0
        run_nodes: dict[int, TreeNode] = {}
        for ri, run in enumerate(self.index.runs):
            name = run.config.get("run", run.path.name)
            run_nodes[ri] = tree.root.add(f"[b]{escape(str(name))}[/]", data=("run", ri),
                                          expand=True)
        for key, es in self.index.groups.items():
            n = sum(1 for e in es if self.matches(e))
            total += n
            what = escape(key[2])
            if self.index.runs[key[0]].director:
                parts = _label_parts(key[2])
                what = (f"{escape(parts.get('condition', key[2]))} "
                        f"[dim]batch {escape(parts.get('batch', '?'))}[/]")
            node = run_nodes[key[0]].add(
                f"{escape(key[1])} · {what} [dim]({n}/{len(es)})[/]",
                data=("group", key), allow_expand=n > 0)
            if key in expanded and n:
                self._populate_group(node)
                node.expand()
        self._status(f"{total} of {len(self.index.entries)} trajectories · outcome "
                     f"{self.outcome} · text {self.text!r}")

    @staticmethod
    def _walk(node: TreeNode):
        yield node
        for child in node.children:
            yield from TuiApp._walk(child)

    def _status(self, msg: str) -> None:
        self.query_one("#status", Static).update(Text(msg))

    def _populate_group(self, node: TreeNode) -> None:
        if node.children:
            return
        es = [e for e in self.index.groups[node.data[1]] if self.matches(e)]
        multi = len({e.sample for e in es}) > 1
        for e in es[:MAX_LEAVES]:
            label = Text(e.instance_id + (f" #{e.sample}" if multi else ""))
            label.append(f" {MARK[e.outcome]}", style="green" if e.outcome == "correct"
                         else "red")
            label.append(f" {e.note}", style="dim")
            node.add(label, data=("traj", e), allow_expand=True)
        if len(es) > MAX_LEAVES:
            node.add_leaf(f"… {len(es) - MAX_LEAVES} more (narrow with / or 0-4)",
                          data=("more", None))

    def _record(self, e: Entry) -> dict[str, Any]:
        key = (e.run, e.offset)
        rec = self._records.get(key)
        if rec is None:
            try:
                rec = self.index.read(e)
            except JournalError as exc:  # a damaged record: shown as its error, no steps
                rec = {"key": "", "instance_id": e.instance_id, "model": e.model,
                       "strategy": e.strategy, "sample": e.sample, "status": "unanswered",
                       "error": {"kind": "damaged", "message": str(exc)}, "steps": [],
                       "params": {}, "metrics": {}, "prediction": None}
            self._records[key] = rec
            while len(self._records) > 32:
                self._records.popitem(last=False)
        return rec

    def _populate_traj(self, node: TreeNode) -> None:
        if node.children:
            return
        from .show import step_caption

        e: Entry = node.data[1]
        rec = self._record(e)
        for i, s in enumerate(rec.get("steps") or []):
            node.add_leaf(escape(step_caption(s, rec.get("params") or {})), data=("step", e, i))

    # tree events
    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        data = event.node.data
        if data and data[0] == "group":
            self._populate_group(event.node)
        elif data and data[0] == "traj":
            self._populate_traj(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._current = event.node.data
        self._show(event.node.data)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.text = event.value.strip()
        self._rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#tree", Tree).focus()

    # actions
    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_outcome(self, outcome: str) -> None:
        self.outcome = outcome
        self._rebuild()

    def action_cycle_outcome(self) -> None:
        self.action_outcome(OUTCOMES[(OUTCOMES.index(self.outcome) + 1) % len(OUTCOMES)])

    def action_back(self) -> None:
        compare = self.query_one("#compare")
        if compare.display:
            compare.display = False
            self.query_one("#main").display = True
        self.query_one("#tree", Tree).focus()

    def action_compare(self) -> None:
        compare = self.query_one("#compare", Horizontal)
        if compare.display:
            self.action_back()
            return
        data = self._current
        if not data or data[0] not in ("traj", "step"):
            self._status("compare: select a trajectory or a step first")
            return
        e: Entry = data[1]
        same = [x for (ri, model, _), es in self.index.groups.items()
                if ri == e.run and model == e.model for x in es
                if x.instance_id == e.instance_id and x.sample == e.sample]
        compare.remove_children()
        compare.mount_all([VerticalScroll(Static(self._column(x)), classes="col")
                           for x in same])
        self.query_one("#main").display = False
        compare.display = True
        self._status(f"compare {e.instance_id} · {e.model} · sample {e.sample}: "
                     f"{', '.join(x.strategy for x in same)} (escape: back)")

    # rendering
    def _column(self, e: Entry) -> Text:
        from .show import step_caption

        rec = self._record(e)
        if e.director:
            return self._director_column(e, rec)
        t = Text()
        t.append(f"{e.strategy}\n", style="bold")
        t.append(f"{MARK[e.outcome]} {e.outcome}", style="green" if e.outcome == "correct"
                 else "red")
        t.append(f"  prediction {_box(rec.get('prediction'))}\n{_metrics(rec.get('metrics'))}\n")
        if rec.get("error"):
            t.append(f"{rec['error'].get('kind')}: {rec['error'].get('message', '')}\n",
                     style="red")
        for s in rec.get("steps") or []:
            t.append(f"\n{step_caption(s, rec.get('params') or {})}\n", style="bold cyan")
            reply = s.get("reply") or {}
            text = (reply.get("error") or {}).get("message") or reply.get("text") or ""
            lines = text.splitlines()
            t.append("\n".join(lines[:4]) + (" …" if len(lines) > 4 else "") + "\n")
        return t

    def _show(self, data: Any) -> None:
        detail = self.query_one("#detail", Static)
        image = self.query_one("#image", Static)
        curve = self.query_one("#curve", Static)
        image.update("")
        curve.update("")
        self.image_rendered = False
        if not data:
            detail.update("")
            return
        kind = data[0]
        if kind == "run":
            run = self.index.runs[data[1]]
            n = sum(1 for e in self.index.entries if e.run == data[1])
            detail.update(Text(f"run {run.config.get('run', run.path.name)}\n{run.path}\n"
                               f"data {run.config.get('data', '?')}\n{n} trajectories"
                               + (f"\n{run.note}" if run.note else "")))
        elif kind == "group":
            self._show_group(data[1])
        elif kind == "traj":
            self._show_traj(data[1])
        elif kind == "step":
            self._show_step(data[1], data[2])
        else:
            detail.update("narrow the list with / (text) or 0-4 (outcome)")

    def _show_group(self, key: tuple[int, str, str]) -> None:
        es = self.index.groups[key]
        counts = defaultdict(int)
        for e in es:
            counts[e.outcome] += 1
        dists = [e.dist for e in es if e.dist is not None]
        what = key[2]
        if self.index.runs[key[0]].director:
            parts = _label_parts(key[2])
            what = f"{parts.get('condition', key[2])} · batch {parts.get('batch', '?')}"
        t = Text(f"{key[1]} · {what}\n{len(es)} trajectories: "
                 + ", ".join(f"{k} {counts[k]}" for k in OUTCOMES[1:]))
        if self.index.runs[key[0]].director:
            for i, name in enumerate(("hidden block", "director-view block", "visibility report")):
                vals = [e.dm[i] for e in es if e.dm and e.dm[i] is not None]
                if vals:
                    t.append(f"\n{name}: {100 * sum(vals) / len(vals):.1f}% of {len(vals)} "
                             "answered")
        if dists:
            t.append(f"\nmean Dist {100 * sum(dists) / len(dists):.1f}")
        self.query_one("#detail", Static).update(t)
        if any(e.iterative for e in es):
            self._group_curve(key)

    def _group_curve(self, key: tuple[int, str, str]) -> None:
        rows = self._curves.get(key[0])
        curve = self.query_one("#curve", Static)
        if rows is None:
            curve.update("Dist per iteration: computing…")
            self._curves[key[0]] = "pending"
            self.run_worker(lambda: self._compute_curves(key), thread=True, group="curves")
            return
        if isinstance(rows, str):
            curve.update(f"Dist per iteration: {rows}")
            return
        vals = [r["dist"] for r in sorted(rows, key=lambda r: r["t"])
                if r["model"] == key[1] and r["strategy"] == key[2]]
        curve.update(Text(spark_text("mean Dist ×100 per t (curves)", vals)))

    def _compute_curves(self, key: tuple[int, str, str]) -> None:
        from .evals.scenefunri.curves import curves

        try:
            rows: list[dict[str, Any]] | str = curves([self.index.runs[key[0]].path])
        except Exception as exc:  # a moved dataset, a bad line: say so in the pane
            rows = f"unavailable ({exc})"
        self._curves[key[0]] = rows
        self.call_from_thread(self._refresh_curve)

    def _refresh_curve(self) -> None:
        if self._current and self._current[0] == "group":
            self._group_curve(self._current[1])

    def _truth(self, e: Entry) -> tuple[dict[str, Any] | None, tuple[int, int] | None]:
        inst = self.index.runs[e.run].instances.get(e.instance_id)
        return inst, (_image_size(inst["image"]) if inst else None)

    def _show_traj(self, e: Entry) -> None:
        rec = self._record(e)
        if e.director:
            self._director_traj(e, rec)
            return
        inst, size = self._truth(e)
        t = Text()
        t.append(f"{e.instance_id} · {e.model} · {e.strategy} · sample {e.sample}\n",
                 style="bold")
        if inst:
            t.append(f"task {inst['instruction']}\ntruth {_box(inst['box'])}\n")
        t.append(f"{MARK[e.outcome]} {e.outcome}",
                 style="green" if e.outcome == "correct" else "red")
        t.append(f"  prediction {_box(rec.get('prediction'))}\n{_metrics(rec.get('metrics'))}\n")
        if rec.get("error"):
            t.append(f"{rec['error'].get('kind')}: {rec['error'].get('message', '')}\n",
                     style="red")
        t.append(f"{len(rec.get('steps') or [])} steps · {rec.get('seconds', 0):.3f} s")
        self.query_one("#detail", Static).update(t)
        if inst and size:
            self._image_result(inst, rec.get("prediction"), size)
        if e.iterative and inst and size and inst.get("box"):
            self.query_one("#curve", Static).update(
                Text(spark_text("Dist ×100 per t", dist_track(rec, inst["box"], size))))

    def _image_result(self, inst: dict[str, Any], prediction: Any, size: tuple[int, int]) -> None:
        from PIL import Image

        from .engine.images import load_image
        from .renderers.strips import draw_result
        from .renderers.terminal import HalfBlockImage, cell_size

        try:
            img = load_image(inst["image"])
        except OSError as exc:
            self.query_one("#image", Static).update(Text(f"(image unreadable: {exc})"))
            return
        c, r = cell_size(size, IMAGE_COLS)
        sx, sy = 2 * c / size[0], 4 * r / size[1]

        def scale(b: Any) -> list[float] | None:
            return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] if b else None

        big = draw_result(img.resize((2 * c, 4 * r), Image.Resampling.LANCZOS),
                          scale(prediction), scale(inst.get("box")), line=2)
        small = big.resize((c, 2 * r), Image.Resampling.LANCZOS)
        self.query_one("#image", Static).update(
            Group(Text("prediction red · truth green", style="dim"),
                  HalfBlockImage(small, IMAGE_COLS)))
        self.image_rendered = True

    def _show_step(self, e: Entry, i: int) -> None:
        from .evals.scenefunri.metrics import score
        from .renderers.terminal import HalfBlockImage
        from .show import _parsed_text, _small_view

        rec = self._record(e)
        s = (rec.get("steps") or [])[i]
        if e.director:
            self._director_step(e, rec, s)
            return
        reply = s.get("reply") or {}
        inst, size = self._truth(e)
        t = Text()
        info = s.get("info") or {}
        head = f"step {s.get('index', i)} · {s.get('name', '')}"
        t.append(head + (f" · t={info['t']}" if "t" in info else ""), style="bold")
        t.append(f"   {e.instance_id} · {e.model} · {e.strategy}\n", style="dim")
        _prompt_and_reply(t, s)
        if s.get("parse_error"):
            t.append(f"parse error: {s['parse_error']}\n", style="red")
        elif not reply.get("error"):
            t.append(f"parsed {_parsed_text(s, rec.get('params') or {})}\n")
        if s.get("region"):
            t.append(f"region {_box(s['region'])}\n")
            if inst and size and inst.get("box"):
                t.append(f"metrics {_metrics(score(s['region'], inst['box'], *size))}\n")
        _usage(t, reply)
        self.query_one("#detail", Static).update(t)
        parts = s.get("images") or ([{"path": inst["image"]}] if inst else [])
        if parts:
            try:
                pics = [HalfBlockImage(_small_view(p, IMAGE_COLS), IMAGE_COLS) for p in parts]
            except OSError as exc:
                self.query_one("#image", Static).update(Text(f"(image unreadable: {exc})"))
            else:
                self.query_one("#image", Static).update(Group(*pics))
                self.image_rendered = True
        if e.iterative and inst and size and inst.get("box"):
            self.query_one("#curve", Static).update(
                Text(spark_text("Dist ×100 per t", dist_track(rec, inst["box"], size))))


    # Director runs
    def _director_image(self, e: Entry, chosen: Any) -> None:
        from .renderers.terminal import HalfBlockImage
        from .show_director import legend, marked_scene

        run = self.index.runs[e.run]
        inst = run.scenes.get(e.instance_id)
        image = self.query_one("#image", Static)
        if inst is None:
            image.update(Text(f"(scene unavailable: {run.note or 'not in its folder'})"))
            return
        try:
            small = marked_scene(inst, chosen, IMAGE_COLS)
        except OSError as exc:
            image.update(Text(f"(image unreadable: {exc})"))
            return
        image.update(Group(legend(inst, chosen), HalfBlockImage(small, IMAGE_COLS)))
        self.image_rendered = True

    def _director_head(self, e: Entry, rec: dict[str, Any], t: Text) -> None:
        from .show_director import choice_role, fields_text, measures_text

        parts = _label_parts(e.strategy)
        t.append(f"{e.instance_id} · {e.model} · {parts.get('condition', e.strategy)} · batch "
                 f"{parts.get('batch', '?')} · sample {e.sample}\n", style="bold")
        t.append(f"{MARK[e.outcome]} {e.outcome}",
                 style="green" if e.outcome == "correct" else "red")
        pred = rec.get("prediction")
        t.append(f"  {fields_text(pred)}")
        inst = self.index.runs[e.run].scenes.get(e.instance_id)
        if inst is not None and isinstance(pred, dict) and "block" in pred:
            t.append(f" ({choice_role(pred['block'], inst.truth)})")
        t.append("\n")
        if inst is not None:
            t.append(f"key {self.index.runs[e.run].instances[e.instance_id]['instruction']}\n",
                     style="dim")
        t.append("measures ").append_text(measures_text(rec.get("metrics")))
        t.append("\n")
        if rec.get("error"):
            t.append(f"{rec['error'].get('kind')}: {rec['error'].get('message', '')}\n",
                     style="red")

    def _director_traj(self, e: Entry, rec: dict[str, Any]) -> None:
        from .show_director import _chosen

        t = Text()
        self._director_head(e, rec, t)
        n = len(rec.get("steps") or [])
        t.append(f"{n} turn{'s' * (n != 1)} · {rec.get('seconds', 0):.3f} s", style="dim")
        self.query_one("#detail", Static).update(t)
        self._director_image(e, _chosen(rec))

    def _director_step(self, e: Entry, rec: dict[str, Any], s: dict[str, Any]) -> None:
        from .show_director import fields_text

        reply = s.get("reply") or {}
        info = s.get("info") or {}
        n = len(rec.get("steps") or [])
        t = Text()
        t.append(f"turn {info.get('turn', s.get('index', 0) + 1)} of {n}", style="bold")
        if info.get("fields"):
            t.append(f" · asks {', '.join(info['fields'])}", style="bold")
        parts = _label_parts(e.strategy)
        t.append(f"   {e.instance_id} · {e.model} · {parts.get('condition', e.strategy)}\n",
                 style="dim")
        _prompt_and_reply(t, s)
        if s.get("parse_error"):
            t.append(f"parse error: {s['parse_error']}\n", style="red")
        elif not reply.get("error"):
            t.append("parsed ", style="bold cyan").append(fields_text(s.get("parsed")) + "\n")
        _usage(t, reply)
        self.query_one("#detail", Static).update(t)
        parsed = s.get("parsed")
        self._director_image(e, parsed.get("block") if isinstance(parsed, dict) else None)

    def _director_column(self, e: Entry, rec: dict[str, Any]) -> Text:
        from .show_director import step_caption

        t = Text()
        self._director_head(e, rec, t)
        for s in rec.get("steps") or []:
            t.append(f"\n{step_caption(s)}\n", style="bold cyan")
            reply = s.get("reply") or {}
            text = (reply.get("error") or {}).get("message") or reply.get("text") or ""
            lines = text.splitlines()
            t.append("\n".join(lines[:4]) + (" …" if len(lines) > 4 else "") + "\n")
        return t


def run_tui(run_dirs: list[str | Path]) -> None:
    TuiApp(run_dirs).run()
