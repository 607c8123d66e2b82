"""The ``unseen`` command line.

Errors a user can cause (a bad path, an unknown strategy, a missing key) end with one line
on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from . import settings
from .cli_help import reflow_help
from .engine.envfile import load_env_file
from .engine.errors import UnseenError
from .engine.sanitize import SafeConsole, shown

app = typer.Typer(
    name="unseen", no_args_is_help=True, add_completion=False,
    help="Test, and improve, how vision-language models reason about what they cannot see.",
)
data_app = typer.Typer(no_args_is_help=True, help="Make and inspect datasets.")
cache_app = typer.Typer(no_args_is_help=True, help="Inspect or clear the reply cache.")
app.add_typer(data_app, name="data")
app.add_typer(cache_app, name="cache")
director_app = typer.Typer(no_args_is_help=True, help="The Director Task: prompts, studies, analysis and power.")
app.add_typer(director_app, name="director")

# every text the commands print passes the sanitiser (control sequences, secrets) on its way
out = SafeConsole()
err = SafeConsole(stderr=True)


def _plain(*parts: object, end: str = "\n") -> None:
    """``print`` for plain-text output (JSON, CSV, markdown, prompts), sanitised the same way."""
    sys.stdout.write(shown(" ".join(str(p) for p in parts)) + end)

FORMATS = ("table", "json", "csv", "md", "latex")


class UserError(UnseenError):
    """Raised inside commands for a one-line error and exit status 2."""


def _user_errors() -> tuple[type[BaseException], ...]:
    """What a user can cause: every error of the project derives from ``UnseenError``; a
    missing or unreadable path is the operating system's own."""
    from .engine.errors import UnseenError

    return (UnseenError, FileNotFoundError, NotADirectoryError, PermissionError)


def _interrupted(what: str, run_dir: Path) -> None:
    err.print(f"interrupted: finished {what} are saved in {run_dir}; rerun the same "
              f"command with --out {run_dir} to resume", soft_wrap=True, highlight=False)
    raise typer.Exit(130)


def _quiet_or_resumed(result: Any, quiet: bool, what: str) -> bool:
    """With --quiet, print only the run directory (True: nothing more to say); else say
    how many ``what`` a resume skipped."""
    if quiet:
        out.print(str(result.run_dir))
        return True
    if result.skipped:
        out.print(f"resumed: {result.skipped} {what} were already done")
    return False


def _close(result: Any, what: str, strict: bool, quiet: bool) -> None:
    """The command's last line: how many new ``what`` failed, by error kind (stdout; stderr
    with --quiet, whose stdout is the run directory alone). Exit 1 when every new one failed,
    or with --strict when any did."""
    failures = result.failures
    failed = sum(failures.values())
    if not failed:
        return
    counts = ", ".join(f"{kind} {n}" for kind, n in failures.items())
    if failed == result.done:
        kind = next(iter(failures))
        example = " ".join(str(result.examples.get(kind, "")).split())[:160]
        err.print(f"[red]error:[/] all {failed} new {what} failed: {escape(counts)}"
                  + (f" (first {escape(kind)}: {escape(example)})" if example else "")
                  + "; rerun the same command to retry them", soft_wrap=True, highlight=False)
        raise typer.Exit(1)
    line = (f"{failed} of {result.done} new {what} failed: {escape(counts)}; rerun the same "
            "command to retry them")
    (err if quiet else out).print(line, soft_wrap=True, highlight=False)
    if strict:
        raise typer.Exit(1)


def _print_reasons(by_error: dict[str, int]) -> None:
    if by_error:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(by_error.items()))
        out.print(f"[yellow]unanswered by reason:[/] {reasons}")


def _print_servers(run_dir: Path) -> None:
    """A line of per-server counts for each backend spread over several servers."""
    from .backends.servers import server_summary
    from .engine.journal import read_run_json

    for desc in read_run_json(run_dir).get("backends", []):
        if line := server_summary(desc):
            out.print(line, soft_wrap=True, highlight=False, markup=False)


@app.command()
def run(
    data: Annotated[Path | None, typer.Option(help="The benchmark's data: a SceneFunRI folder (default: the bundled sample set), or what another benchmark reads.")] = None,
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategy, name[:key=value,...]; repeatable.")] = None,
    backend: Annotated[list[str] | None, typer.Option("--backend", "-b", help="Backend spec, e.g. sim, openai:gpt-4o, gemini:gemini-2.5-flash, vllm:MODEL@URL; repeatable.")] = None,
    benchmark: Annotated[str | None, typer.Option(help="Benchmark (see `unseen benchmarks`); default: the one whose data --data holds, else scenefunri.")] = None,
    samples: Annotated[int, typer.Option(min=1, help="Samples per instance.")] = 1,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N instances.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight per backend.")] = settings.DEFAULT_CONCURRENCY,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory; rerun with the same one to resume.")] = None,
    box_format: Annotated[str | None, typer.Option(help="Override the box convention: pixel, norm1000, gemini, unit, qwen2.5.")] = None,
    base_url: Annotated[list[str] | None, typer.Option(metavar="URL", help="Provider endpoint (OpenAI-compatible or Gemini); repeat it to spread calls over several OpenAI-compatible servers of one model.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request before it is retried.")] = settings.DEFAULT_TIMEOUT_S,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the reply cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Reply cache folder (default: the user cache dir).")] = None,
    processes: Annotated[int, typer.Option(min=1, help="Processes to shard the run over (uses more cores; each backend's concurrency is divided among them).")] = 1,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
    allow_outside_images: Annotated[bool, typer.Option("--allow-outside-images", help="Accept dataset images outside the dataset's folder (../, absolute paths, symlinks out); they are sent to the provider.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new trajectory failed (without it: only when every one did).")] = False,
) -> None:
    """Run strategies against backends over a dataset, journal every step, print a table.

    With no options: the bundled sample set, the paper's prompting strategies (direct with
    the basic, hidden, common and both prompts; cot; cot-sr), the offline `sim` backend.
    Without --strategy the table also shows the fixed rules baseline:center and
    baseline:prior, marked (rule).
    """
    from .api import run as run_api
    from .engine.benchmark import detect
    from .engine.benchmark import get as get_benchmark
    from .evals.scenefunri import render, summarize

    bench = get_benchmark(benchmark) if benchmark else detect(data)
    scenefunri = bench.name == "scenefunri"
    strategies = strategy or (list(settings.DEFAULT_STRATEGIES) if scenefunri else [])
    backends = backend or [settings.DEFAULT_BACKEND]
    run_dir = out_dir or settings.new_run_dir(strategies or [bench.name], backends)
    try:
        result = run_api(
            data, strategies, backends, benchmark=bench.name, samples=samples, limit=limit,
            out=run_dir, concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir,
            box_format=box_format, base_url=base_url, timeout_s=timeout, progress=not quiet,
            processes=processes, allow_outside_images=allow_outside_images,
        )
        if not strategy and scenefunri:  # what a fixed guess earns, for scale; no model asked
            rules = run_api(data, [settings.DEFAULT_STRATEGY], list(settings.DEFAULT_RULES),
                            samples=samples, limit=limit, out=run_dir, progress=False)
            result.done, result.seconds = result.done + rules.done, result.seconds + rules.seconds
    except KeyboardInterrupt:
        _interrupted("trajectories", run_dir)
    if _quiet_or_resumed(result, quiet, "trajectories"):
        return _close(result, "trajectories", strict, quiet)
    if scenefunri:
        base = settings.DEFAULT_STRATEGY if settings.DEFAULT_STRATEGY in strategies and \
            len(strategies) > 1 else None
        out.print(render(summarize([result.run_dir], baseline=base), "table", width=out.width))
    else:
        out.print(f"{result.answered}/{result.done} answered; see them with "
                  f"`unseen show {result.run_dir}`")
    _print_reasons(result.by_error)
    _print_servers(result.run_dir)
    out.print(f"run directory: [bold]{result.run_dir}[/]  ({result.done} new trajectories in {result.seconds:.1f} s)")
    _close(result, "trajectories", strict, quiet)


@app.command()
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    baseline: Annotated[str | None, typer.Option(help="Strategy to compute paired differences against, per model.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json, csv, md or latex.")] = "table",
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap; the same seed gives the same intervals.")] = 0,
    paper: Annotated[bool, typer.Option("--paper", help="Add the paper's own published numbers (Tables 2 and 3), quoted, not measured.")] = False,
    pool: Annotated[bool, typer.Option("--pool", help="Pool a model and strategy that several runs hold into one row (refused without it).")] = False,
) -> None:
    """One row per (model, strategy): n, answered %, CAcc@75, CAcc@50, mIoU, Dist (×100), cost.

    Each metric has a 95 % percentile-bootstrap interval over instances (2,000 resamples;
    an instance's samples are averaged first). With --baseline, each row gets the paired
    difference against that strategy of the same model and its paired-bootstrap interval;
    * marks a difference whose interval excludes 0.
    """
    from .evals.scenefunri import render, summarize
    from .evals.scenefunri.paper import paper_rows

    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    rows = summarize(run_dirs, baseline=baseline, seed=seed, pool=pool)
    if paper:
        rows += paper_rows()
    result = render(rows, fmt, width=out.width)
    if isinstance(result, str):
        _plain(result)
    else:
        out.print(result)


@app.command()
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
    from .evals.scenefunri.picks import instance_dist, pick
    from .evals.scenefunri.report import figure_cells
    from .renderers.figures import prediction_grid

    given = {k: v for k, v in (("instances", instances), ("worst", worst), ("best", best),
                               ("random", random_n)) if v is not None}
    if len(given) != 1:
        raise UserError("name the instances with one of --instances, --worst N, --best N or "
                        f"--random N (got {', '.join('--' + k for k in given) or 'none'})")
    if instances is not None:
        ids = [i.strip() for i in instances.split(",") if i.strip()]
        if not ids:
            raise UserError("--instances needs at least one instance id")
    else:
        (how, n), = given.items()
        scores = instance_dist(run_dirs, sample=sample, models=model, strategies=strategy)
        ids = pick(scores, how, n, seed)
        if not ids:
            raise UserError("no scored trajectories match (check --model, --strategy, --sample)")
        out.print(f"{how} {len(ids)}: " + ", ".join(f"{i} (Dist {scores[i]:.1f})" for i in ids),
                  soft_wrap=True, highlight=False, markup=False)
    insts, rows = figure_cells(run_dirs, ids, sample=sample, models=model, strategies=strategy)
    if not rows:
        raise UserError("no trajectories of these instances match (check --model, --strategy, --sample)")
    layout = prediction_grid(insts, rows, out_file, dpi=dpi)
    out.print(f"wrote {out_file} ({layout.n_rows} rows × {layout.n_cols} columns, "
              f"{layout.width}×{layout.height} px)", soft_wrap=True, highlight=False, markup=False)


@app.command()
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
    from .evals.scenefunri.curves import (
        CURVE_METRICS,
        curve_table,
        curves,
        direct_baselines,
        with_baselines,
    )

    if metric not in CURVE_METRICS:
        raise UserError(f"unknown metric {metric!r}; choose {', '.join(CURVE_METRICS)}")
    if fmt not in ("table", "json", "png"):
        raise UserError(f"unknown format {fmt!r}; choose table, json or png")
    notes: list[str] = []
    rows = curves(run_dirs, ceiling=ceiling, notes=notes)
    for note in notes:
        err.print(f"note: {escape(note)}", soft_wrap=True, highlight=False)
    if not any(r["model"] != "oracle (ceiling)" for r in rows):
        raise UserError("no iterative region strategy (such as spoe) with an answered "
                        "trajectory in these runs")
    base = direct_baselines(run_dirs)
    if fmt == "json":
        _plain(json.dumps(with_baselines(rows, base), indent=2))
    elif fmt == "png":
        from .renderers.plots import curve_png

        path = curve_png(rows, metric, out_file or Path(f"curve-{metric}.png"), base)
        out.print(f"wrote {path}")
    else:
        out.print(curve_table(rows, metric, base))


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    instance: Annotated[str | None, typer.Argument(help="Instance id; without it, a summary.")] = None,
    strategy: Annotated[str | None, typer.Option(help="Only this strategy label (or name: spoe matches spoe:T=4).")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    sample: Annotated[int | None, typer.Option(help="Only this sample index.")] = None,
    step: Annotated[int | None, typer.Option(help="Only the step with this index (as journaled, from 0).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Prompts, replies and reasoning in full, not folded.")] = False,
    no_images: Annotated[bool, typer.Option("--no-images", help="Draw no images in the terminal.")] = False,
    png: Annotated[Path | None, typer.Option("--png", help="Write the trajectory's steps as one PNG strip to this file instead.")] = None,
) -> None:
    """Print a run's summary, or one instance's trajectories step by step (images drawn in
    the terminal when it is one), or write one trajectory as a PNG strip."""
    from .show import show_instance, show_summary, write_strip

    try:
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
    except ValueError as exc:  # no such instance (RunDirError passes through as is)
        if isinstance(exc, _user_errors()):
            raise
        raise UserError(str(exc)) from None


@app.command()
def tui(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
) -> None:
    """Browse runs in a terminal UI: (model, strategy) → instances → steps, with the image
    each step showed, outcome and text filters (0-4, /), strategies side by side (c)."""
    try:
        from .tui import run_tui
    except ImportError as exc:  # textual missing
        raise UserError(f"unseen tui needs textual (pip install textual): {exc}") from None
    run_tui(run_dirs)


@app.command()
def export(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    html: Annotated[Path, typer.Option("--html", help="Folder to write index.html and img/ into.")],
    baseline: Annotated[str | None, typer.Option(help="Strategy for the paired differences (default: direct, when present).")] = None,
    max_strips: Annotated[int, typer.Option(min=0, help="Step strips (Director runs: example scene pictures) for at most this many.")] = 30,
) -> None:
    """Write a static HTML report of runs: open DIR/index.html in a browser.

    No server, no JavaScript: the comparison table with intervals, per-iteration curves for
    SPoE-like strategies, and each instance's outcomes linked to its step strip. For a
    Director study run: the rates and changes tables, forest and rate plots, example scenes.
    """
    from .export import export_html

    res = export_html(run_dirs, html, baseline=baseline, max_strips=max_strips)
    counts = res.summary or (f"{res.table_rows} table rows, {len(res.curves)} curves, "
                             f"{len(res.strips)} of {res.trajectories} trajectories as strips")
    out.print(f"wrote {escape(str(res.index))} ({counts})", highlight=False, soft_wrap=True)


@app.command()
def strategies() -> None:
    """List registered strategies and their parameters."""
    from rich.table import Table

    from .strategies import available

    table = Table(title="strategies")
    for col in ("name", "parameters (default)", "summary"):
        table.add_column(col)
    for e in available():
        fields = ", ".join(f"{k}={f.default!r}" for k, f in e.params.model_fields.items())
        table.add_row(escape(e.name), escape(fields) or "-", escape(e.summary))
    out.print(table)


@app.command()
def benchmarks() -> None:
    """List registered benchmarks (built-in and plug-ins) and the strategies made for each."""
    from rich.table import Table

    from .engine.benchmark import available
    from .strategies import available as strategies_available

    table = Table(title="benchmarks")
    for col in ("name", "summary", "strategies"):
        table.add_column(col)
    entries = strategies_available()
    for b in available():
        names = ", ".join(e.name for e in entries if e.benchmark in b.accepts)
        table.add_row(escape(b.name), escape(b.summary), escape(names) or "-")
    out.print(table)


@app.command()
def backends() -> None:
    """List backend providers and their spec syntax."""
    from rich.table import Table

    from .backends import providers

    table = Table(title="backends")
    table.add_column("provider")
    table.add_column("spec")
    for name, usage in providers().items():
        table.add_row(escape(name), escape(usage))
    out.print(table)


@data_app.command("sample")
def data_sample(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the sample set into.")],
) -> None:
    """Copy the bundled sample SceneFunRI set (65 hidden targets in 8 procedural rooms)."""
    from .evals.scenefunri import load_dataset
    from .evals.scenefunri.sample import copy_sample

    folder = copy_sample(out_dir)
    ds = load_dataset(folder)
    out.print(f"wrote {len(ds)} instances to {folder} (fingerprint {ds.fingerprint})")


def _size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` → (width, height); a user error otherwise."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UserError(f"--size must be WIDTHxHEIGHT, e.g. 640x480, got {text!r}") from None
    if width < 1 or height < 1:
        raise UserError(f"--size must be positive, got {text!r}")
    return width, height


@data_app.command("build")
def data_build(
    scenefun3d: Annotated[Path, typer.Option("--scenefun3d", help="SceneFun3D root (folders of visits).")],
    out_dir: Annotated[Path, typer.Option("--out", help="SceneFunRI folder to write.")],
    stride: Annotated[int, typer.Option(min=1, help="Use every N-th frame.")] = 1,
    v_min: Annotated[float, typer.Option(help="Keep frames with projection visibility V >= this.")] = 1.0,
    vo_max: Annotated[float, typer.Option(help="Keep frames with occlusion visibility V_o <= this.")] = 0.0,
    occlusion: Annotated[str, typer.Option(help="Occlusion from the 'mesh' (rendered) or the 'depth' PNGs.")] = "mesh",
    min_box: Annotated[float, typer.Option(help="Drop boxes with a side shorter than this (px).")] = 8.0,
    dedupe_images: Annotated[bool, typer.Option(help="Drop near-duplicate images within a visit.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the frame kept per description (a hash of visit, description and seed).")] = 0,
) -> None:
    """Build SceneFunRI instances from SceneFun3D scans: hidden targets inside the view."""
    from .evals.scenefunri.build import BuildParams, build
    from .evals.scenefunri.scenefun3d_types import SceneFun3DError

    if occlusion not in ("mesh", "depth"):
        raise UserError(f"--occlusion must be mesh or depth, got {occlusion!r}")
    params = BuildParams(v_min=v_min, vo_max=vo_max, stride=stride, occlusion=occlusion,  # type: ignore[arg-type]
                         min_box_px=min_box, dedupe_images=dedupe_images, seed=seed)
    try:
        s = build(scenefun3d, out_dir, params)
    except (ValueError, SceneFun3DError) as exc:  # a malformed scan names its file
        raise UserError(str(exc)) from None
    out.print(f"{s.visits} visits, {s.frames} frames, {s.pairs} (frame, description) pairs: "
              f"{s.candidates} candidates, [bold]{s.kept} kept[/] in {out_dir}")
    for reason, n_dropped in s.dropped.most_common():
        out.print(f"  dropped {n_dropped:>6}  {reason}")
    review = [json.loads(x) for x in (out_dir / "review.jsonl").read_text().splitlines()]
    flagged = sum(bool(r.get("reasons")) for r in review)
    if s.rejected_in_review:
        out.print(f"{s.rejected_in_review} rejected in an earlier review, left out: "
                  f"{s.kept - s.rejected_in_review} instances in {out_dir / 'instances.jsonl'}")
    out.print(f"{flagged} of {len(review)} instances a person should review, and each one's "
              f"frame pick: {out_dir / 'review.jsonl'}; the funnel: {out_dir / 'build.json'}")
    out.print(f"review them in the browser: unseen data review {out_dir}")


@data_app.command("review")
def data_review(
    build_dir: Annotated[Path, typer.Argument(metavar="BUILD", help="A folder made by `unseen data build`.")],
    who: Annotated[str, typer.Option("--who", help="The reviewer's name, kept with each decision.")] = "reviewer",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port of the local page (0: any free one).")] = 0,
) -> None:
    """Review a build in the browser (paper §3.4): accept each candidate, or reject it as a
    duplicate, for too little visual evidence, for several plausible regions, or other.

    Decisions are kept by instance id in review.jsonl and survive rebuilds; the rejected
    leave instances.jsonl. Stop with Ctrl-C and start again to go on where you stopped.
    """
    import asyncio

    from .backends.human_web import PageError
    from .review import serve_review

    def announce(line: str) -> None:
        err.print(line, soft_wrap=True, highlight=False, markup=False)

    try:
        review = asyncio.run(serve_review(build_dir, who=who, port=port, announce=announce))
    except PageError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        err.print(f"interrupted: every decision so far is saved in {build_dir / 'review.jsonl'}; "
                  "run the same command again to go on", soft_wrap=True, highlight=False)
        raise typer.Exit(130) from None
    c = review.build.counts()
    reasons = ", ".join(f"{k.removeprefix('reject:')} {v}" for k, v in sorted(c.items())
                        if k.startswith("reject:"))
    out.print(f"{c.get('accept', 0)} accepted, {c.get('reject', 0)} rejected"
              + (f" ({reasons})" if reasons else "") + f", {c.get('undecided', 0)} undecided; "
              f"{len(review.build.instances)} instances in {build_dir / 'instances.jsonl'}")


@data_app.command("rooms")
def data_rooms(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write SceneFun3D visits into.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Rooms.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same rooms.")] = 0,
    size: Annotated[str, typer.Option(help="Frame size WIDTHxHEIGHT.")] = "640x480",
) -> None:
    """Generate procedural rooms in SceneFun3D's format (scan, annotations, video, mesh)."""
    from .evals.scenefunri.rooms import write_rooms

    width, height = _size(size)
    visits = write_rooms(out_dir, n_rooms=n, seed=seed, size=(width, height))
    out.print(f"wrote {len(visits)} visits to {out_dir}")


@data_app.command("stats")
def data_stats(
    folder: Annotated[Path, typer.Argument(help="A SceneFunRI folder (instances.jsonl; build.json when built).")],
    fmt: Annotated[str, typer.Option("--format", help="table, json or md.")] = "table",
    png: Annotated[Path | None, typer.Option(help="Also write a heat map of box centres and sizes.")] = None,
) -> None:
    """Describe a SceneFunRI folder: counts, affordances, box sizes and positions, what a
    fixed guess scores, and a build's funnel from frames to kept instances."""
    from .evals.scenefunri import load_dataset
    from .evals.scenefunri.stats import describe, normalized_boxes, render_stats

    if fmt not in ("table", "json", "md"):
        raise UserError(f"--format must be table, json or md, got {fmt!r}")
    ds = load_dataset(folder)
    card = describe(folder, ds)
    if fmt == "table":
        out.print(render_stats(card, fmt))
    else:
        out.print(render_stats(card, fmt), markup=False, highlight=False, soft_wrap=True)
    if png is not None:
        from .renderers.plots import box_heatmap_png

        box_heatmap_png(normalized_boxes(ds), png, title=str(folder))
        out.print(f"wrote {png}")


@data_app.command("director")
def data_director(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the PNGs and scenes.jsonl.")],
    set_name: Annotated[str, typer.Option("--set", help="main, rotated or rearranged.")] = "main",
    n: Annotated[int | None, typer.Option("--n", min=1, help="Scenes (default: 160; rotated 150).")] = None,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same scenes.")] = 0,
    size: Annotated[str, typer.Option(help="Image size WIDTHxHEIGHT.")] = "1024x768",
) -> None:
    """Render a Director Task scene set; every answer key is checked two ways."""
    from .evals.director.sets import build_set

    width, height = _size(size)
    try:
        path = build_set(set_name, out_dir, n=n, seed=seed, size=(width, height))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    count = len(path.read_text(encoding="utf-8").splitlines())
    out.print(f"wrote {count} scenes of the {set_name} set to {path.parent}")


@cache_app.command("stats")
def cache_stats(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: user cache dir).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Entries per backend and model, size on disk, location."""
    from .engine.cache import ReplyCache

    cache = ReplyCache(cache_dir)
    stats = cache.stats()
    cache.close()
    if as_json:
        _plain(json.dumps(stats, indent=2))
        return
    out.print(f"cache: {stats['path']}  entries: {stats['entries']}  size: {stats['bytes'] / 1e6:.2f} MB")
    for row in stats["by_model"]:
        out.print(f"  {row['backend']}:{row['model']}  {row['entries']}")
    for moved in stats["set_aside"]:  # damaged files the cache moved aside
        out.print(f"set aside (damaged): {moved['path']}  {moved['bytes'] / 1e6:.2f} MB",
                  soft_wrap=True, highlight=False, markup=False)


@cache_app.command("clear")
def cache_clear(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: user cache dir).")] = None,
    backend: Annotated[str | None, typer.Option(help="Only this provider, e.g. openai.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
) -> None:
    """Delete cached replies (all, or one provider / model)."""
    from .engine.cache import ReplyCache

    cache = ReplyCache(cache_dir)
    n = cache.clear(backend=backend, model=model)
    cache.close()
    out.print(f"deleted {n} cached replies")


@director_app.command("prompts")
def director_prompts(
    scene: Annotated[str | None, typer.Option("--scene", help="Scene id whose visible blocks the stated variant lists.")] = None,
    scenes: Annotated[Path | None, typer.Option("--scenes", help="scenes.jsonl made by `unseen data director`.")] = None,
    # "\\[": rich markup would read "[/<question>]" in a help text as a closing tag
    condition: Annotated[list[str] | None, typer.Option("--condition", "-c", help="Only this condition, <request>\\[/<question>]\\[+<insert>]; repeatable.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """Print every prompt condition, each checked byte for byte against its request's base."""
    from .evals.director.prompts import PromptError, build, check_identity, conditions

    if fmt not in ("text", "json"):
        raise UserError(f"--format must be text or json, got {fmt!r}")
    record = None
    if scene is not None:
        if scenes is None:
            raise UserError("--scene needs --scenes FILE (a scenes.jsonl)")
        from .engine.userfiles import iter_lines, parse_json

        for lineno, line in iter_lines(scenes):
            obj = parse_json(scenes, line, lineno) if line.strip() else None
            if isinstance(obj, dict) and str(obj.get("id")) == scene:
                record = obj
                break
        else:
            raise UserError(f"no scene {scene!r} in {scenes}")
    try:
        rows = []
        for name in condition or conditions():
            prompt = build(name, record)
            changed = check_identity(build(prompt.condition.request, record), prompt)
            rows.append((prompt, changed))
    except PromptError as exc:
        raise UserError(str(exc)) from None
    except (KeyError, TypeError, ValueError) as exc:  # a scene record of another shape
        raise UserError(f"{scenes}: scene {scene!r} is not a scene record "
                        f"({type(exc).__name__}: {exc})") from None
    if fmt == "json":
        _plain(json.dumps([{"condition": p.name, "turns": p.turns, "chars": p.chars,
                           "fields_per_turn": p.fields_per_turn, "changed": changed}
                          for p, changed in rows], indent=2, ensure_ascii=False))
        return
    for prompt, changed in rows:
        _plain(f"=== {prompt.name}  ({prompt.chars} chars; changed: {', '.join(changed) or 'none'})")
        for i, turn in enumerate(prompt.turns, 1):
            if len(prompt.turns) > 1:
                _plain(f"--- turn {i}")
            _plain(turn)
        _plain()


@director_app.command("run")
def director_run(
    design_file: Annotated[str, typer.Argument(metavar="DESIGN", help="A study design TOML, or a shipped one: paper, quick.")],
    backend: Annotated[list[str] | None, typer.Option("--backend", "-b", help="SPEC, or NAME=SPEC to run SPEC as the design's model NAME; repeatable.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory; rerun with the same one to resume.")] = None,
    scenes: Annotated[Path | None, typer.Option(help="Folder with one scene set per subfolder (main/, rotated/, ...); default RUN_DIR/scenes, rendered when missing.")] = None,
    reasoning_effort: Annotated[str, typer.Option(help="Reasoning effort sent to the provider; 'none' sends none.")] = "medium",
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature (default: the provider's).")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Output cap (default: none, as in the paper).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight per backend.")] = settings.DEFAULT_CONCURRENCY,
    base_url: Annotated[list[str] | None, typer.Option(metavar="URL", help="Provider endpoint (OpenAI-compatible or Gemini); repeat it to spread calls over several OpenAI-compatible servers of one model.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request before it is retried (no output cap: keep it long).")] = 600.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the reply cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Reply cache folder (default: the user cache dir).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new call failed (without it: only when every one did).")] = False,
) -> None:
    """Run a Director study: every batch's calls in one seeded random order per model.

    Each condition asks each scene `samples` times; two-turn conditions are one dialogue.
    Finished calls are journalled; rerun with the same --out to resume.
    """
    from .director import run_study
    from .evals.director.study import load_design

    design = load_design(design_file)
    backends = backend or [settings.DEFAULT_BACKEND]
    run_dir = out_dir or settings.new_run_dir([f"director-{design.name}"], backends)
    try:
        result = run_study(design, backends, run_dir, source=str(design_file), scenes=scenes,
                           concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir,
                           timeout_s=timeout, base_url=base_url, reasoning_effort=reasoning_effort,
                           temperature=temperature, max_tokens=max_tokens, progress=not quiet)
    except KeyboardInterrupt:
        _interrupted("calls", run_dir)
    if _quiet_or_resumed(result, quiet, "calls"):
        return _close(result, "calls", strict, quiet)
    answered = f"{result.answered}/{result.done} answered" if result.done else "nothing new to run"
    out.print(f"{answered}; run directory: [bold]{result.run_dir}[/]  ({result.seconds:.1f} s)")
    _print_reasons(result.by_error)
    out.print(f"next: unseen director analyze {result.run_dir}")
    _close(result, "calls", strict, quiet)


@director_app.command("analyze")
def director_analyze(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `unseen director run`.")],
    design_file: Annotated[str | None, typer.Option("--design", help="Analyse with this design (TOML or a shipped name) instead of the one the run stored.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, json, md or latex.")] = "table",
    plots: Annotated[Path | None, typer.Option("--plots", help="Write PNG plots into this folder (with --paper: the paper's figures, default RUN/paper-figures).")] = None,
    paper: Annotated[bool, typer.Option("--paper", help="Lay out the paper's tables and figures by number (Tables 2-13, Figures 3-7) and write the figures as PNGs.")] = False,
    n_boot: Annotated[int, typer.Option(min=100, help="Scene resamples for each rate's interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the scene resamples.")] = 0,
    drop_apparent: Annotated[bool, typer.Option("--drop-apparent", help="Leave out the scenes where another visible block looks larger from the director's eye than the director-view block (appendix, 'Apparent size'), and list the verdicts that change against all scenes.")] = False,
) -> None:
    """The study's tables: rates per condition and the design's comparisons in points, with
    95 % intervals, Benjamini–Hochberg marks per family and the ±margin verdicts."""
    from .director_analyze import analyze_command

    analyze_command(run_dir, design_file, fmt=fmt, plots=plots, paper=paper, n_boot=n_boot,
                    seed=seed, drop_apparent=drop_apparent, console=out, status=err)


@director_app.command("code")
def director_code(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `unseen director run`.")],
    coder: Annotated[str, typer.Option("--coder", "-c", help="Backend spec of the coder (the paper: gpt-6-astra at maximum reasoning effort), e.g. openai:gpt-6-astra; sim reads the simulator's own traces.")] = "sim",
    second_pass: Annotated[bool, typer.Option("--second-pass", help="Code the hidden-block choices again from the trace and the chosen block only, without the visibility report (Appendix E).")] = False,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only this design model; repeatable.")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help="Only this condition; repeatable.")] = None,
    batch: Annotated[list[str] | None, typer.Option("--batch", help="Only this design batch; repeatable.")] = None,
    scene_set: Annotated[list[str] | None, typer.Option("--set", help="Only this scene set; repeatable.")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Traces per coder request.")] = 20,
    tests: Annotated[int, typer.Option(min=0, help="Test traces written to a known code, mixed in unmarked (the paper: 30).")] = 30,
    repeats: Annotated[int, typer.Option(min=0, help="Real items coded a second time under new ids within the main pass (the paper: 30); the second pass takes none.")] = 30,
    seed: Annotated[int, typer.Option(help="Seed of the neutral ids, the order, the test traces and the repeats.")] = 0,
    retry_uncoded: Annotated[bool, typer.Option("--retry-uncoded", help="Once every batch has run, ask again, in new batches, the items the coder left uncoded (a quote not in the trace, an item left out).")] = False,
    reasoning_effort: Annotated[str, typer.Option(help="Reasoning effort sent to the coder (the paper: the maximum, OpenAI's 'max'; 'high' for vLLM or Gemini); 'none' sends none.")] = "max",
    no_schema: Annotated[bool, typer.Option("--no-schema", help="Do not send the codes' JSON schema (for servers without structured output).")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Coder requests in flight.")] = 4,
    base_url: Annotated[list[str] | None, typer.Option(metavar="URL", help="Provider endpoint (OpenAI-compatible or Gemini); repeat it to spread calls over several OpenAI-compatible servers of one model.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request before it is retried.")] = 600.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the reply cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Reply cache folder (default: the user cache dir).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new batch failed (without it: only when every one did).")] = False,
) -> None:
    """Code the study's reasoning traces against the codebook of Appendix E.

    The coder sees each trace with only a neutral id and the reply (no model, condition or
    scene); test traces written to a known code are mixed in. Codes go to RUN/coding/PASS/;
    rerun to resume. Then: `unseen director codes RUN`, and `unseen director analyze RUN`
    fits the design's comparisons on coded traces.
    """
    from .director_code import run_coding

    try:
        done = run_coding(
            run_dir, coder, second_pass=second_pass, models=model or (),
            conditions=condition or (), batches_=batch or (), sets=scene_set or (),
            batch_size=batch_size, tests=tests, repeats=repeats, seed=seed,
            retry_uncoded=retry_uncoded,
            concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir, timeout_s=timeout,
            base_url=base_url, reasoning_effort=reasoning_effort, structured=not no_schema,
            progress=not quiet)
    except KeyboardInterrupt:
        _interrupted("batches", run_dir)
    result = done.run
    if _quiet_or_resumed(result, quiet, "batches"):
        return _close(result, "batches", strict, quiet)
    if done.retried is not None:
        out.print(f"asked again: {done.retried} items no earlier reply coded")
    out.print(f"{done.items} traces, {done.repeats} of them again, and {tests} test traces in "
              f"{result.total} batches; "
              f"{result.answered}/{result.done} new batches coded ({result.seconds:.1f} s); "
              f"{done.untraced} selected replies carry no trace")
    _print_reasons(result.by_error)
    out.print(f"next: unseen director codes {run_dir}")
    _close(result, "batches", strict, quiet)


@director_app.command("codes")
def director_codes(
    run_dir: Annotated[Path, typer.Argument(help="A run directory whose traces `unseen director code` coded.")],
    fmt: Annotated[str, typer.Option("--format", help="table, json or md.")] = "table",
) -> None:
    """What the coded traces say: readings per condition, hidden-block choices by whether the
    trace takes the director to see the block, the coder's test traces and the second pass."""
    from .evals.director.coding.report import render, summarize

    if fmt not in ("table", "json", "md"):
        raise UserError(f"--format must be table, json or md, got {fmt!r}")
    _plain(render(summarize(run_dir), fmt, width=out.width), end="")


@director_app.command("sheet")
def director_sheet(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `unseen director run`.")],
    out_file: Annotated[Path, typer.Option("--out", help="The answer sheet to write (CSV).")],
    per_stratum: Annotated[int, typer.Option(min=1, help="Traces from each stratum (model × condition × director-view, hidden or other block).")] = 3,
    tests: Annotated[int, typer.Option(min=0, help="Test traces written to a known code, mixed in unmarked.")] = 6,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only this design model; repeatable.")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help="Only this condition; repeatable.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draw, the order and the ids.")] = 0,
) -> None:
    """An answer sheet for people to code traces by the codebook (Appendix E, "Human check").

    The sheet shows only neutral ids, traces and replies; its key stays in
    RUN/coding/sheets/. Fill in reading, sees and works_out, then `unseen director agree`.
    """
    from .evals.director.coding.sheets import draw, sheet_key_path, write_sheet

    items = draw(run_dir, per_stratum=per_stratum, tests=tests, seed=seed, models=model,
                 conditions=condition)
    if not items or all(it["test"] for it in items):
        raise UserError(f"no reasoning traces to draw from in {run_dir}")
    write_sheet(items, out_file, sheet_key_path(run_dir, seed))
    real = sum(not it["test"] for it in items)
    out.print(f"wrote {out_file}: {real} traces from {len({it['stratum'] for it in items if not it['test']})} "
              f"strata and {tests} test traces; codebook: `unseen director codebook`")


@director_app.command("codebook")
def director_codebook(
    second_pass: Annotated[bool, typer.Option("--second-pass", help="The second pass's wording (no report).")] = False,
) -> None:
    """Print the codebook the coder (and people coding a sheet) code by."""
    from .evals.director.coding.codebook import codebook

    _plain(codebook(second_pass), end="")


@director_app.command("agree")
def director_agree(
    run_dir: Annotated[Path, typer.Argument(help="The run directory the sheet was drawn from.")],
    sheets: Annotated[list[Path], typer.Argument(help="Filled sheets (CSV), one per person.")],
    seed: Annotated[int, typer.Option(help="The --seed the sheet was drawn with.")] = 0,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Agreement of people's sheets with the automatic codes and with each other: items with
    the same code and Cohen's κ with its interval over 2,000 resamples; test traces right."""
    from .evals.director.coding.sheets import agreement

    res = agreement(run_dir, sheets, seed=seed)
    if fmt == "json":
        _plain(json.dumps(res, indent=2))
        return
    from rich.table import Table

    out.print(f"{res['items']} traces; test traces right (of {res['tests']}): "
              + ", ".join(f"{k} {v}" for k, v in res["test_right"].items()))
    if not res["automatic"]:
        out.print("[yellow]the automatic codes are missing for some traces: run `unseen director code` to compare with them[/]")
    table = Table(title="Agreement on the traces")
    for col in ("coders", "reading: same", "κ [95%]", "sees: same", "κ [95%]"):
        table.add_column(col)
    for p in res["pairs"]:
        cells = [f"{p['a']} · {p['b']}"]
        for code in ("reading", "sees"):
            r = p[code]
            cells += [f"{r['same']}/{r['n']}", f"{r['kappa']:.2f} [{r['kappa_lo']:.2f}, {r['kappa_hi']:.2f}]"]
        table.add_row(*cells)
    out.print(table)


@director_app.command("power")
def director_power(
    design_file: Annotated[str, typer.Argument(metavar="DESIGN", help="A study design TOML, or a shipped one: paper, quick.")],
    effect: Annotated[list[str] | None, typer.Option("--effect", "-e", help="knob=value of the simulated respondent (e.g. uplift=0.3, scene_sd=0.5); repeatable.")] = None,
    reps: Annotated[int, typer.Option(min=10, help="Simulated studies.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the simulation.")] = 0,
    scenes: Annotated[str, typer.Option(help="resample: scenes drawn anew from a population in each study; fixed: the design's own scenes.")] = "resample",
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Simulate these design models (each with its batches); default: one model asked every batch.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Processes.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (NaN where a comparison gave no estimate becomes null).")] = False,
) -> None:
    """Simulate many studies of a design: the chance of declaring each comparison's change,
    and the measured coverage of its 95 % intervals where the true difference is known."""
    import math

    from .evals.director.power import parse_effects
    from .evals.director.power_report import power_report
    from .evals.director.power_report import render as render_power
    from .evals.director.study import load_design

    if scenes not in ("resample", "fixed"):
        raise UserError(f"--scenes must be resample or fixed, got {scenes!r}")
    design = load_design(design_file)
    try:
        effects = parse_effects(effect or [])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    with err.status(f"simulating {reps} studies of {design.name}…"):
        report = power_report(design, effects=effects, reps=reps, seed=seed, models=model or None,
                              scenes=scenes, workers=workers)  # type: ignore[arg-type]
    if as_json:
        def clean(v):
            if isinstance(v, float) and math.isnan(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v
        _plain(json.dumps(clean(report), indent=2))
        return
    out.print(render_power(report, title=f"{design.name}: simulated power and coverage ({reps} studies)"))
    from .evals.director.study import TRACE_MEASURES

    traced = sum(c.measure in TRACE_MEASURES for c in design.comparisons)
    if traced:
        out.print(f"left out: {traced} comparisons on coded reasoning traces (the simulation "
                  "draws no traces)")


# every command is registered by now: paragraphs that rewrap, and an example each
reflow_help(app)


def main() -> None:
    """Console entry point: user errors become one line and exit status 2."""
    try:
        load_env_file()  # provider keys from ./.env; the environment wins
        rc = app(standalone_mode=False)
        if isinstance(rc, int):  # click hands back the code of a typer.Exit here
            sys.exit(rc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:
        if isinstance(exc, _user_errors()):
            plain = isinstance(exc, OSError) or not exc.args
            _one_line_error(str(exc) if plain else exc.args[0])
            sys.exit(2)
        # usage errors (unknown option, bad value): typer's own or click's, by duck typing,
        # since newer typer vendors click and older typer uses the click package
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            _one_line_error(exc.format_message())
            sys.exit(exc.exit_code)
        if os.environ.get("UNSEEN_DEBUG"):
            raise
        # anything else is a bug of unseen (or of a plug-in), and says so
        _one_line_error(f"internal error, a bug in unseen or a plug-in: {type(exc).__name__}: "
                        f"{exc} (rerun with UNSEEN_DEBUG=1 for the traceback, and report it)")
        sys.exit(70)  # EX_SOFTWARE


def _one_line_error(msg: object) -> None:
    # one line whatever the message holds; soft_wrap: never fold at the console width;
    # escape: a path or a box in the message must not be read as markup
    msg = " ".join(str(msg).split())
    err.print(f"[red]error:[/] {escape(msg)}", highlight=False, markup=True, soft_wrap=True)


if __name__ == "__main__":
    main()
