"""The commands that read run directories: ``compare``, ``figure``, ``curve``, ``show``,
``tui``, ``view`` and ``export``. Each opens its runs and hands them to their benchmark's views
(``unseen.views``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .common import (
    FORMATS,
    UserError,
    err,
    out,
    plain,
    user_errors,
)

commands = typer.Typer()


@commands.command()
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    baseline: Annotated[str | None, typer.Option(metavar="STRATEGY", help="Strategy to compute paired differences against, per model (default: direct, where the runs hold it beside another strategy, as `unseen run` prints them; none: no paired differences).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json, csv, md or latex.")] = "table",
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap; the same seed gives the same intervals.")] = 0,
    paper: Annotated[bool, typer.Option("--paper", help="Add the paper's own published numbers (Tables 2 and 3), quoted, not measured.")] = False,
    pool: Annotated[bool, typer.Option("--pool", help="Pool a model and strategy that several runs hold into one row (refused without it).")] = False,
    prices: Annotated[Path | None, typer.Option("--prices", help="A price file (TOML [[price]]: pattern, input, cached_input, output, batch_discount, date, source) read before the built-in price table for the cost columns (default: $UNSEEN_PRICES).")] = None,
) -> None:
    """One row per (model, strategy): n, answered %, CAcc@75, CAcc@50, mIoU, Dist (×100), cost.

    Each metric has a 95 % percentile-bootstrap interval over instances (2,000 resamples;
    an instance's samples are averaged first). Against --baseline (default: direct, when
    present), each row gets the paired difference against that strategy of the same model and its paired-bootstrap interval;
    * marks a difference whose interval excludes 0. The cost in US dollars comes from the
    journal's token counts and the price table (`unseen prices`).
    """
    from ..backends.prices import using
    from ..views import CompareOptions, open_runs

    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    with using(prices):
        views, runs = open_runs(run_dirs, "compare")
        if baseline is not None and baseline.strip().lower() == "none":
            baseline = ""  # no paired differences
        result = views.compare(runs, CompareOptions(baseline=baseline, seed=seed, paper=paper,
                                                       pool=pool),
                               fmt, out.width)
    if isinstance(result, str):
        plain(result)
    else:
        out.print(result)


@commands.command()
def figure(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    out_file: Annotated[Path, typer.Option("--out", help="PNG file to write.")],
    instances: Annotated[str | None, typer.Option(help="Instance ids, comma-separated: one column each.")] = None,
    worst: Annotated[int | None, typer.Option(min=1, help="Instead of --instances: the N instances with the highest mean Dist over the rows drawn.")] = None,
    best: Annotated[int | None, typer.Option(min=1, help="Instead of --instances: the N instances with the lowest mean Dist over the rows drawn.")] = None,
    random_n: Annotated[int | None, typer.Option("--random", min=1, help="Instead of --instances: N instances drawn at random (--seed).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --random.")] = 0,
    model: Annotated[list[str] | None, typer.Option(help="Only this model; repeatable.")] = None,
    strategy: Annotated[list[str] | None, typer.Option(help="Only this strategy label; repeatable.")] = None,
    sample: Annotated[int, typer.Option(min=0, help="Which sample of each instance to draw.")] = 0,
    dpi: Annotated[int, typer.Option(min=30, max=600, help="Resolution of the PNG.")] = 120,
) -> None:
    """A grid of predictions (red) and ground truth (green): a column per instance, a row per
    (model, strategy).

    Name the instances with --instances, or let --worst N, --best N or --random N pick them
    by the mean Dist of the trajectories drawn (the rows that pass --model, --strategy and
    --sample)."""
    from ..views import FigureOptions, open_runs

    given = {k: v for k, v in (("instances", instances), ("worst", worst), ("best", best),
                               ("random", random_n)) if v is not None}
    if len(given) != 1:
        raise UserError("name the instances with one of --instances, --worst N, --best N or "
                        f"--random N (got {', '.join('--' + k for k in given) or 'none'})")
    ids, pick = None, None
    if instances is not None:
        ids = [i.strip() for i in instances.split(",") if i.strip()]
        if not ids:
            raise UserError("--instances needs at least one instance id")
    else:
        (how, n), = given.items()
        pick = (how, int(n))  # --worst, --best, --random: a count
    views, runs = open_runs(run_dirs, "draw")
    options = FigureOptions(ids, out_file, models=model, strategies=strategy, sample=sample,
                            dpi=dpi, pick=pick, seed=seed)
    layout = views.figure(runs, options)
    for line in options.said:
        out.print(line, soft_wrap=True, highlight=False, markup=False)
    out.print(f"wrote {out_file} ({layout.n_rows} rows × {layout.n_cols} columns, "
              f"{layout.width}×{layout.height} px)", soft_wrap=True, highlight=False, markup=False)


@commands.command()
def curve(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    metric: Annotated[str, typer.Option(help="dist, cacc75, cacc50, iou or alive.")] = "dist",
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json or png.")] = "table",
    out_file: Annotated[Path | None, typer.Option("--out", help="PNG file (with --format png).")] = None,
    ceiling: Annotated[bool, typer.Option("--ceiling", help="Add the oracle ceiling: SPoE with a perfect chooser.")] = False,
) -> None:
    """Metrics per iteration for elimination strategies (SPoE), as in the paper's Figure 2.

    The region after step t is scored against the ground truth; `alive` is the share of
    instances whose ground-truth box is still inside the region. Each model's `direct`
    result is the reference line.
    """
    from ..views import CurveOptions, open_runs

    views, runs = open_runs(run_dirs, "draw curves of")
    notes: list[str] = []
    try:
        result = views.curve(runs, CurveOptions(metric, fmt, out_file, ceiling), notes)
    finally:
        for note in notes:
            err.print(f"note: {escape(note)}", soft_wrap=True, highlight=False)
    if isinstance(result, str):
        plain(result)
    else:
        out.print(result)


@commands.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    instance: Annotated[str | None, typer.Argument(help="Instance id; without it, a summary.")] = None,
    strategy: Annotated[str | None, typer.Option(help="Only this strategy label (or name: spoe matches spoe:T=4).")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    sample: Annotated[int | None, typer.Option(help="Only this sample index.")] = None,
    step: Annotated[int | None, typer.Option(help="Only step N, numbered from 1 as shown (t = 1..T).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Prompts, replies and reasoning in full, not folded.")] = False,
    no_images: Annotated[bool, typer.Option("--no-images", help="Draw no images in the terminal.")] = False,
    png: Annotated[Path | None, typer.Option("--png", help="Write the trajectory's steps as one PNG strip to this file instead.")] = None,
    prices: Annotated[Path | None, typer.Option("--prices", help="A price file (TOML [[price]]: pattern, input, cached_input, output, batch_discount, date, source) read before the built-in price table for the cost columns (default: $UNSEEN_PRICES).")] = None,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print directly instead of through the pager ($UNSEEN_PAGER, $PAGER, else less), which only a terminal gets.")] = False,
) -> None:
    """Print a run's summary, or one instance's trajectories step by step (images drawn in
    the terminal when it is one), or write one trajectory as a PNG strip. On a terminal
    the text goes through a pager, as git's does."""
    from ..backends.prices import using
    from ..renderers.terminal import image_protocol
    from .pager import paged

    # kitty images do not pass through a pager: those terminals get them printed directly
    pager = not no_pager and png is None and (no_images or image_protocol() != "kitty")
    try:
        with using(prices), paged(out, pager):
            _show(run_dir, instance, strategy, model, sample, step, full, no_images, png)
    except ValueError as exc:  # no such instance (RunDirError passes through as is)
        if isinstance(exc, user_errors()):
            raise
        raise UserError(str(exc)) from None


def _show(run_dir: Path, instance: str | None, strategy: str | None, model: str | None,
          sample: int | None, step: int | None, full: bool, no_images: bool,
          png: Path | None) -> None:
    from ..views.show import show_instance, show_summary, write_strip

    if instance is None:
        if png is not None or step is not None:
            raise UserError("--png and --step need an INSTANCE")
        show_summary(out, run_dir, strategy=strategy, model=model)
    elif png is not None:
        layout = write_strip(run_dir, instance, png, strategy=strategy, model=model,
                             sample=sample, step=step)
        out.print(f"wrote {escape(str(png))} ({len(layout.tiles)} tiles, "
                  f"{layout.width}×{layout.height} px)", highlight=False)
    else:
        show_instance(out, run_dir, instance, strategy=strategy, model=model, sample=sample,
                      step=step, full=full, images=not no_images)


@commands.command()
def tui(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
) -> None:
    """Browse runs in a terminal UI: (model, strategy) → instances → steps, with the image
    each step showed, outcome and text filters (0-4, /), strategies side by side (c)."""
    try:
        from ..views.tui import run_tui
    except ImportError as exc:  # textual missing
        raise UserError(f"unseen tui needs textual (pip install textual): {exc}") from None
    run_tui(run_dirs)


@commands.command()
def view(
    run_dirs: Annotated[list[Path] | None, typer.Argument(show_default=False, help="Run directories, or folders holding run directories (default: ./runs, else this folder).")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 0,
) -> None:
    """Browse runs in the browser, live: a local page (127.0.0.1, a random token in its
    address, works offline) with each run's table (sort, filter by model, strategy and
    outcome, worst first) and every trajectory step by step; a running run updates.

    Without RUN_DIR: the folder `unseen run` writes into (./runs, or $UNSEEN_RUNS) when it
    exists, else the current folder when it is a run or holds runs.
    """
    import asyncio

    from ..backends.human_web import PageError
    from ..viewer import serve

    run_dirs = run_dirs or _default_runs()
    try:
        asyncio.run(serve(run_dirs, port=port, signals=True, announce=lambda line: out.print(
            escape(line), highlight=False, soft_wrap=True)))
        err.print("stopped")
    except PageError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        err.print("stopped")


def _default_runs() -> list[Path]:
    """``unseen view``'s folder when none is given: where new runs go (``./runs`` or
    ``$UNSEEN_RUNS``) if it exists, else the current folder if it is a run or holds runs."""
    from .. import settings
    from ..engine.journal import JOURNAL

    root = settings.runs_root()
    if root.is_dir():
        return [root]
    here = Path.cwd()
    if (here / JOURNAL).is_file() or any((p / JOURNAL).is_file() for p in here.iterdir()):
        return [here]
    raise UserError(f"unseen view: no RUN_DIR given, and there is no {root}/ folder here and "
                    "no run in this one; give a run directory or a folder of runs")


@commands.command()
def export(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    html: Annotated[Path, typer.Option("--html", help="Folder to write index.html and img/ into.")],
    baseline: Annotated[str | None, typer.Option(help="Strategy for the paired differences (default: direct, when present).")] = None,
    max_strips: Annotated[int, typer.Option(min=0, help="Step strips (Director runs: example scene pictures) for at most this many.")] = 30,
    pool: Annotated[bool, typer.Option("--pool", help="Pool a model and strategy that several runs hold into one row (refused without it).")] = False,
    prices: Annotated[Path | None, typer.Option("--prices", help="A price file (TOML [[price]]: pattern, input, cached_input, output, batch_discount, date, source) read before the built-in price table for the cost columns (default: $UNSEEN_PRICES).")] = None,
) -> None:
    """Write a static HTML report of runs: open DIR/index.html in a browser.

    No server, no JavaScript: the comparison table with intervals, per-iteration curves for
    SPoE-like strategies, and each instance's outcomes linked to its step strip. For a
    Director study run: the rates and changes tables, forest and rate plots, example scenes.
    """
    from ..backends.prices import using
    from ..views.export import export_html

    with using(prices):
        res = export_html(run_dirs, html, baseline=baseline, max_strips=max_strips, pool=pool)
    counts = res.summary or (f"{res.table_rows} table rows, {len(res.curves)} curves, "
                             f"{len(res.strips)} of {res.trajectories} trajectories as strips")
    out.print(f"wrote {escape(str(res.index))} ({counts})", highlight=False, soft_wrap=True)


