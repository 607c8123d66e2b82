"""What a benchmark contributes to the views: :class:`BenchmarkViews`.

A benchmark's views are registered under the entry-point group ``unseen.views`` by the
benchmark's name (``run.json``'s ``benchmark``); the built-ins register ``scenefunri``,
``director`` and ``director-coding`` the way an outside package would. A benchmark with no
views of its own is shown by the generic ones (``views.generic``), and a views object that
leaves a method out gets the generic method in its place, so a plug-in may write only the
sections it wants to show differently.

Every method opens runs through ``engine.rundir.RunDir`` (``run.config``, ``run.heads()``,
``run.read(head)``, ``run.records()``) and prints to the console it is handed (the CLI's
``SafeConsole``: whatever it prints is made terminal-safe and scrubbed of secrets). Bad
input a user can cause (an unknown instance, a filter that matches nothing) raises a
one-line ``ValueError`` or ``UnseenError``; the CLI turns either into exit status 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rich.console import Console, RenderableType

from ..engine.records import TrajectoryRecord
from ..engine.rundir import Head, RunDir
from .common import ExportResult

if TYPE_CHECKING:
    from ..renderers.strips import StripLayout


@dataclass
class Filters:
    """What ``show`` (and ``figure``) narrow trajectories by. ``strategy`` matches a label
    with or without its default parameters (``spoe`` and ``spoe:T=8`` are one strategy) or a
    name (``spoe`` matches ``spoe:T=4``); ``model`` the model's name."""

    strategy: str | None = None
    model: str | None = None
    sample: int | None = None
    step: int | None = None  # as shown, from 1 (a Step's journaled index + 1)
    full: bool = False  # prompts and replies unfolded
    images: bool = True  # images in the terminal (when it is one)
    worst: int = 20  # instances the summary lists, worst first


@dataclass
class CompareOptions:
    baseline: str | None = None  # None: the benchmark's default; "": no paired differences
    seed: int = 0
    paper: bool = False  # the paper's own numbers beside the run's (where a benchmark has any)
    pool: bool = False  # a (model, strategy) in several runs pooled into one row, else refused


@dataclass
class CurveOptions:
    metric: str = "dist"
    fmt: str = "table"
    out: Path | None = None
    ceiling: bool = False


@dataclass
class FigureOptions:
    instances: list[str] | None  # None: ``pick`` chooses them
    out: Path
    models: list[str] | None = None
    strategies: list[str] | None = None
    sample: int = 0
    dpi: int = 120
    pick: tuple[str, int] | None = None  # ("worst" | "best" | "random", n)
    seed: int = 0  # of a random pick
    said: list[str] = field(default_factory=list)  # what the view tells the user (the picks)


@dataclass
class ExportOptions:
    baseline: str | None = None
    max_strips: int = 30  # step strips (a Director run: scene pictures) drawn at most
    pool: bool = False  # a (model, strategy) in several runs pooled into one row, else refused


@dataclass
class Section:
    """A part of the HTML page: its heading in the page's contents (none: a header), the
    anchor the contents link to, and its HTML (every text in it escaped by ``common.e``)."""

    title: str
    html: str
    anchor: str = ""
    nav: list[tuple[str, str]] = field(default_factory=list)  # (anchor, title) within it


@dataclass
class ExportPage:
    """A benchmark's page: the title, the sections in order, CSS beyond ``common.CSS``, and
    whether the page opens with its contents (links to each section)."""

    title: str
    sections: list[Section]
    css: str = ""
    nav: bool = False


@dataclass(slots=True)
class TuiRow:
    """One trajectory in the TUI's list: its journal head, the outcome its mark shows, the
    label (a SceneFunRI instruction, a Director scene), a dim note (``Dist 12.3``), and the
    model as the run names it. The index fills ``model``, ``strategy`` and ``instance_id``
    left empty from the head, made safe to show."""

    head: Head
    run: int  # the run's place among those the TUI opened
    outcome: str  # correct, wrong, unanswered, error (or answered: no verdict)
    label: str
    note: str = ""
    model: str = ""
    iterative: bool = False  # a strategy whose steps narrow a region (a curve per step)
    strategy: str = ""
    instance_id: str = ""

    @property
    def sample(self) -> int:
        return self.head.sample

    @property
    def status(self) -> str:
        return self.head.status

    @property
    def metrics(self) -> dict[str, Any]:
        return self.head.metrics


@dataclass
class Pane:
    """What the TUI's right side shows for a node: text, an image (half-blocks), a line of
    curve, and optionally ``background``: a slow part (a curve over the whole run) the app
    computes in a thread and shows in the curve's place when ready."""

    text: RenderableType
    image: RenderableType | None = None
    curve: RenderableType | None = None
    background: Callable[[], RenderableType] | None = None
    background_key: Any = None  # what the background's result is cached under


@runtime_checkable
class TuiRun(Protocol):
    """One run as the TUI browses it: run → (model, strategy) groups → rows → steps."""

    name: str  # the run's node

    def row(self, head: Head, run: int) -> TuiRow:
        """The head's row (outcome, label, note, model as the run names it)."""
        ...

    def search_text(self, row: TuiRow) -> str:
        """What the ``/`` filter looks in (lower case): the id and the instruction."""
        ...

    def about(self, rows: list[TuiRow]) -> Pane:
        """The run's node: where it is, its data, its trajectories."""
        ...

    def group_label(self, model: str, strategy: str) -> str:
        """A group's node, in rich markup (escaped): ``sim-default · spoe: T=3``."""
        ...

    def group(self, rows: list[TuiRow]) -> Pane:
        """A (model, strategy) group: outcomes and means."""
        ...

    def detail(self, row: TuiRow, record: TrajectoryRecord) -> Pane:
        """A trajectory: its outcome, prediction, metrics and result image."""
        ...

    def step_labels(self, row: TuiRow, record: TrajectoryRecord) -> list[str]:
        """The tree's label of each step (plain text)."""
        ...

    def step(self, row: TuiRow, record: TrajectoryRecord, index: int) -> Pane:
        """One step: prompt, reply, parsed answer, the image the model saw."""
        ...

    def column(self, row: TuiRow, record: TrajectoryRecord) -> RenderableType:
        """A trajectory as one column of the compare view (``c``)."""
        ...


@runtime_checkable
class BenchmarkViews(Protocol):
    """A benchmark's sections of ``show``, ``tui``, ``export``, ``compare``, ``curve`` and
    ``figure``. ``runs`` are ``RunDir``s of this benchmark (checked by the caller)."""

    title: str  # how pages and messages name the benchmark ("SceneFunRI")

    def outcome(self, head: Head) -> str:
        """correct, wrong, unanswered (the model's fault), error (a provider's), or answered
        where the benchmark has no verdict."""
        ...

    def summary(self, run: RunDir, console: Console, filters: Filters) -> None:
        """``unseen show RUN``: the run at a glance (tables by model and strategy, the worst
        instances)."""
        ...

    def instance(self, run: RunDir, instance_id: str, console: Console,
                 filters: Filters) -> None:
        """``unseen show RUN INSTANCE``: each matching trajectory, step by step."""
        ...

    def strip_png(self, run: RunDir, instance_id: str, out: Path,
                  filters: Filters) -> StripLayout:
        """``unseen show RUN INSTANCE --png FILE``: one trajectory as one picture."""
        ...

    def compare(self, runs: list[RunDir], options: CompareOptions, fmt: str,
                width: int | None) -> str | RenderableType:
        """``unseen compare``: one row per (model, strategy), as text (json, csv, md, latex)
        or a rich table."""
        ...

    def curve(self, runs: list[RunDir], options: CurveOptions,
              notes: list[str]) -> str | RenderableType:
        """``unseen curve``: metrics per iteration (a table, JSON text, or the line saying
        which PNG was written); ``notes`` collects what was left out and why."""
        ...

    def figure(self, runs: list[RunDir], options: FigureOptions) -> Any:
        """``unseen figure``: a grid of predictions; returns its layout (``n_rows``,
        ``n_cols``, ``width``, ``height``)."""
        ...

    def tui(self, run: RunDir) -> TuiRun:
        """The run as the TUI browses it."""
        ...

    def export(self, runs: list[RunDir], out_dir: Path, options: ExportOptions,
               result: ExportResult) -> ExportPage:
        """``unseen export --html``: the page's sections; images go under ``out_dir/img/``
        (referenced as ``img/NAME``); the counts go into ``result``."""
        ...
