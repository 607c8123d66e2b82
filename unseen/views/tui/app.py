"""``unseen tui``: browse run directories in a terminal UI (textual).

Left, a tree: run → (model, strategy) → trajectories → steps; right, the selected node as its
benchmark's views show it (``TuiRun``: a step's prompt, reply and parsed answer, the image
the model saw with its overlay redrawn, a curve where the strategy iterates). A trajectory's
row shows its outcome mark, its instruction (a Director scene: its id) and a note.

Keys (``?`` lists them): ``0``-``4`` (or ``f`` to cycle) filter by outcome (all, correct,
wrong, unanswered, error = a provider's failure); ``/`` the text filter (ids and
instructions); ``c`` compares the selected instance's trajectories of every strategy of the
same model in columns; ``escape`` goes back; ``q`` quits. After a filter the right side
follows the new selection.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Input, Static, Tree
from textual.widgets.tree import TreeNode

from ...engine.journal import JournalError
from ...engine.records import TrajectoryRecord, fill_top
from ...engine.rundir import who
from ..common import MARK, OUTCOME_STYLE, OUTCOMES, shown
from ..protocol import Pane, TuiRow
from .index import Index, build_index

MAX_LEAVES = 500  # trajectories listed under one (model, strategy) before "… more"
LABEL_WIDTH = 48  # characters of a row's label before "…"

KEYS = (  # what the help overlay lists, in its order
    ("↑ ↓ ← →", "move; → or space opens a group or a trajectory"),
    ("enter / space", "open or close the node"),
    ("/", "filter by text: instance ids and instructions (enter: back to the list)"),
    ("0", "every outcome"), ("1", "correct"), ("2", "wrong"),
    ("3", "unanswered (the model's fault: no readable answer)"),
    ("4", "error (a provider's failure)"), ("f", "next outcome filter"),
    ("c", "compare: this instance under every strategy of the model, in columns"),
    ("escape", "back: close the compare view or the help"),
    ("?", "this help"), ("q", "quit"),
)


class HelpScreen(ModalScreen):
    """Every key, over the browser; any of escape, ? or q closes it."""

    CSS = """
    HelpScreen { align: center middle; }
    #help { width: 80; max-width: 95%; height: auto; border: round $primary;
            background: $panel; padding: 1 2; }
    """
    BINDINGS = [Binding("escape", "close", "close"), Binding("question_mark", "close", "close"),
                Binding("q", "close", "close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        legend = Text("\nmarks: ")
        for outcome in OUTCOMES[1:]:
            legend.append(f"{MARK[outcome]} {outcome}  ", style=OUTCOME_STYLE[outcome])
        yield Static(_Help(table, legend), id="help")

    def action_close(self) -> None:
        self.app.pop_screen()


class _Help:
    def __init__(self, table: Table, legend: Text) -> None:
        self.table, self.legend = table, legend

    def __rich_console__(self, console, options):
        yield Text("unseen tui: keys", style="bold")
        yield self.table
        yield self.legend


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
        Binding("question_mark", "help", "keys"),
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
        self._records: OrderedDict[tuple[int, int], TrajectoryRecord] = OrderedDict()
        self._background: dict[Any, Any] = {}
        self._search: dict[int, str] = {}  # id(row) → its search text, built on first filter
        self._current: Any = None
        self.image_rendered = False  # whether the image pane shows a picture (for tests)

    # layout
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Input(placeholder="/ filter: instance id or instruction (? keys)",
                            id="filter")
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
    def matches(self, e: TuiRow) -> bool:
        if self.outcome != "all" and e.outcome != self.outcome:
            return False
        if self.text:
            key = id(e)
            text = self._search.get(key)
            if text is None:
                text = self._search[key] = self.index.runs[e.run].search_text(e)
            return self.text.lower() in text
        return True

    def shown(self) -> list[TuiRow]:
        """The trajectories that pass the filters, in list order."""
        return [e for es in self.index.groups.values() for e in es if self.matches(e)]

    def shown_instances(self) -> set[str]:
        return {e.instance_id for e in self.shown()}

    def _rebuild(self) -> None:
        tree = self.query_one("#tree", Tree)
        expanded = {n.data[1] for n in self._walk(tree.root)
                    if n.data and n.data[0] == "group" and n.is_expanded}
        selected = self._current
        tree.clear()
        total = 0
        run_nodes: dict[int, TreeNode] = {}
        for ri, run in enumerate(self.index.runs):
            run_nodes[ri] = tree.root.add(f"[b]{escape(shown(run.name))}[/]", data=("run", ri),
                                          expand=True)
        for key, es in self.index.groups.items():
            n = sum(1 for e in es if self.matches(e))
            total += n
            label = self.index.runs[key[0]].group_label(key[1], key[2])
            model = who(key[1], es[0].head.kind) if es else key[1]  # as the tables name it
            node = run_nodes[key[0]].add(f"{escape(shown(model))} · {label} "
                                         f"[dim]({n}/{len(es)})[/]",
                                         data=("group", key), allow_expand=n > 0)
            if key in expanded and n:
                self._populate_group(node)
                node.expand()
        self._status(f"{total} of {len(self.index.entries)} trajectories · outcome "
                     f"{self.outcome} · text {self.text!r} · ? keys")
        self.call_after_refresh(self._follow, selected)

    def _follow(self, selected: Any) -> None:
        """After a rebuild: the cursor on the node shown before, if it is still listed, else
        where the cursor landed; the right side shows what the cursor is on."""
        tree = self.query_one("#tree", Tree)
        target = None
        wanted = [selected] if selected is not None else []
        if selected is not None and selected[0] == "step":  # its trajectory is not open now
            wanted.append(("traj", selected[1]))
        for data in wanted:
            target = next((n for n in self._walk(tree.root) if n.data == data), None)
            if target is not None:
                break
        if target is not None and target.line >= 0:
            tree.move_cursor(target)
        node = tree.cursor_node
        data = node.data if node is not None else None
        self._current = data
        self._show(data)

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
        assert node.data is not None  # every tree node carries its (kind, group)
        es = [e for e in self.index.groups[node.data[1]] if self.matches(e)]
        multi = len({e.sample for e in es}) > 1
        for e in es[:MAX_LEAVES]:
            label = Text()
            label.append(f"{MARK.get(e.outcome, '?')} ", style=OUTCOME_STYLE.get(e.outcome, ""))
            text = e.label if len(e.label) <= LABEL_WIDTH else e.label[:LABEL_WIDTH - 1] + "…"
            label.append(text)
            if multi:
                label.append(f" #{e.sample}", style="bold")
            if e.note:
                label.append(f"  {e.note}", style="dim")
            node.add(label, data=("traj", e), allow_expand=True)
        if len(es) > MAX_LEAVES:
            node.add_leaf(f"… {len(es) - MAX_LEAVES} more (narrow with / or 0-4)",
                          data=("more", None))

    def _record(self, e: TuiRow) -> TrajectoryRecord:
        key = (e.run, e.head.offset)
        rec = self._records.get(key)
        if rec is None:
            try:
                rec = self.index.read(e)
            except JournalError as exc:  # a damaged record: shown as its error, no steps
                rec = fill_top({"key": "", "instance_id": e.instance_id, "model": e.model,
                                "strategy": e.strategy, "backend": "", "sample": e.sample,
                                "status": "unanswered", "error": {
                                    "kind": "damaged", "message": str(exc), "status": None,
                                    "attempts": 1}})
            self._records[key] = rec
            while len(self._records) > 32:
                self._records.popitem(last=False)
        return rec

    def _populate_traj(self, node: TreeNode) -> None:
        if node.children:
            return
        assert node.data is not None  # every tree node carries its (kind, row)
        e: TuiRow = node.data[1]
        rec = self._record(e)
        labels = self.index.runs[e.run].step_labels(e, rec)
        for i, label in enumerate(labels):
            node.add_leaf(escape(label), data=("step", e, i))

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
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_outcome(self, outcome: str) -> None:
        self.outcome = outcome
        self._rebuild()

    def action_cycle_outcome(self) -> None:
        self.action_outcome(OUTCOMES[(OUTCOMES.index(self.outcome) + 1) % len(OUTCOMES)])

    def action_back(self) -> None:  # type: ignore[override]  # textual's is a coroutine
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
        e: TuiRow = data[1]
        same = [x for (ri, model, _), es in self.index.groups.items()
                if ri == e.run and model == e.model for x in es
                if x.instance_id == e.instance_id and x.sample == e.sample]
        run = self.index.runs[e.run]
        compare.remove_children()
        compare.mount_all([VerticalScroll(Static(run.column(x, self._record(x))), classes="col")
                           for x in same])
        self.query_one("#main").display = False
        compare.display = True
        self._status(f"compare {shown(e.instance_id)} · {shown(e.model)} · sample {e.sample}: "
                     f"{', '.join(shown(x.strategy) for x in same)} (escape: back)")

    # the right side
    def _show(self, data: Any) -> None:
        if not data:
            self._paint(Pane(""))
            return
        kind = data[0]
        if kind == "run":
            ri = data[1]
            self._paint(self.index.runs[ri].about([e for e in self.index.entries
                                                   if e.run == ri]))
        elif kind == "group":
            key = data[1]
            self._paint(self.index.runs[key[0]].group(self.index.groups[key]), data)
        elif kind == "traj":
            e = data[1]
            self._paint(self.index.runs[e.run].detail(e, self._record(e)))
        elif kind == "step":
            e = data[1]
            self._paint(self.index.runs[e.run].step(e, self._record(e), data[2]))
        else:
            self._paint(Pane(Text("narrow the list with / (text) or 0-4 (outcome)")))

    def _paint(self, pane: Pane, data: Any = None) -> None:
        self.query_one("#detail", Static).update(pane.text)
        self.query_one("#image", Static).update(pane.image if pane.image is not None else "")
        self.image_rendered = pane.image is not None and not isinstance(pane.image, Text | str)
        curve = pane.curve
        if pane.background is not None:
            done = self._background.get(pane.background_key)
            if done is not None:
                curve = done
            elif pane.background_key not in self._background:
                self._background[pane.background_key] = None
                work, key = pane.background, pane.background_key
                self.run_worker(lambda: self._compute(work, key, data), thread=True,
                                group="background")
        self.query_one("#curve", Static).update(curve if curve is not None else "")

    def _compute(self, work, key: Any, data: Any) -> None:
        try:
            result = work()
        except Exception as exc:  # a moved dataset, a bad line: say so in the pane
            result = Text(f"unavailable ({exc})")
        self._background[key] = result
        self.call_from_thread(self._refresh_background, data)

    def _refresh_background(self, data: Any) -> None:
        if data is not None and self._current == data:
            self._show(data)


def run_tui(run_dirs: Sequence[str | Path]) -> None:
    TuiApp(list(run_dirs)).run()
