"""``unseen show``: a run's summary, one instance's trajectories step by step, or one
trajectory as a PNG strip, each as the run's benchmark views show it
(``views.registry.views_for``).

Images are drawn in the terminal only when the console is a terminal and ``images`` is on:
half-blocks by default, the kitty protocol where the terminal announces it
(``renderers/terminal.py``). For half-blocks an overlay is drawn at twice the cell
resolution and scaled down, so its lines and labels survive the reduction; the PNG strip
scales the full-resolution drawing, exactly what the model was sent.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..engine.rundir import RunDir
from .protocol import Filters
from .registry import views_for


def still_running(console: Console, run_dir: str | Path) -> None:
    """A first line when a process holds the run directory: what follows is the journal so
    far, not the run's end."""
    from ..engine.lock import holder

    if who := holder(run_dir):
        console.print(f"[bold yellow]still running[/]: {escape(who)}; what follows is what is "
                      "journaled so far", soft_wrap=True, highlight=False)


def show_summary(console: Console, run_dir: str | Path, *, strategy: str | None = None,
                 model: str | None = None, worst: int | None = None) -> None:
    """The run at a glance: tables by model and strategy, then the worst instances."""
    run = RunDir.open(run_dir)
    still_running(console, run_dir)
    filters = Filters(strategy=strategy, model=model)
    if worst is not None:
        filters.worst = worst
    views_for(run.benchmark).summary(run, console, filters)


def show_instance(console: Console, run_dir: str | Path, instance: str, *,
                  strategy: str | None = None, model: str | None = None,
                  sample: int | None = None, step: int | None = None, full: bool = False,
                  images: bool = True) -> None:
    """Every matching trajectory of one instance, step by step."""
    run = RunDir.open(run_dir)
    still_running(console, run_dir)
    views_for(run.benchmark).instance(run, instance, console, Filters(
        strategy=strategy, model=model, sample=sample, step=step, full=full, images=images))


def write_strip(run_dir: str | Path, instance: str, out: Path, *, strategy: str | None = None,
                model: str | None = None, sample: int | None = None, step: int | None = None):
    """One trajectory as a PNG; returns its layout (``tiles``, ``width``, ``height``).
    Several matching trajectories are an error: narrow them."""
    run = RunDir.open(run_dir)
    return views_for(run.benchmark).strip_png(run, instance, Path(out), Filters(
        strategy=strategy, model=model, sample=sample, step=step))
