"""``unseen run`` and the listings: ``strategies``, ``benchmarks``, ``backends``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .. import settings
from . import call_options as opts
from .common import (
    UserError,
    close,
    interrupted,
    out,
    print_reasons,
    print_servers,
    quiet_or_resumed,
)
from .estimate import check_format, print_estimate

commands = typer.Typer()
_SUBSET = "Which instances"  # a help panel of its own


@commands.command()
def run(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Argument(metavar="CONFIG.toml", show_default=False, help="A run as a TOML file; a flag given here wins over it.")] = None,
    data: Annotated[Path | None, typer.Option(help="The data (default: the bundled sample set).")] = None,
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="name[:key=value,...]; repeatable.")] = None,
    backend: Annotated[list[str] | None, typer.Option("--backend", "-b", help="provider:model (default: sim); repeatable.")] = None,
    benchmark: Annotated[str | None, typer.Option(help="Default: the one whose data --data holds.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory; the same one again resumes.")] = None,
    samples: Annotated[int, typer.Option(min=1, help="Samples per instance.")] = 1,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new trajectory failed.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, metavar="N", rich_help_panel=_SUBSET, help="The first N instances.")] = None,
    instances: Annotated[str | None, typer.Option("--instances", metavar="ID,...", rich_help_panel=_SUBSET, help="These instances (ids, comma-separated).")] = None,
    sample: Annotated[int | None, typer.Option("--sample", metavar="N", min=1, rich_help_panel=_SUBSET, help="N instances drawn at random with --seed.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="S", rich_help_panel=_SUBSET, help="The seed of --sample's draw (default: 0).")] = None,
    temperature: Annotated[float | None, typer.Option(rich_help_panel=opts.REQUESTS, help="For every strategy (its own value wins).")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, metavar="N", rich_help_panel=opts.REQUESTS, help="Output cap of every strategy (its own wins).")] = None,
    profiles: opts.Profiles = None,
    base_url: opts.BaseUrl = None,
    timeout: opts.Timeout = settings.DEFAULT_TIMEOUT_S,
    box_format: Annotated[str | None, typer.Option(rich_help_panel=opts.IMAGES, help="pixel, norm1000, unit, qwen3, ...")] = None,
    max_image_side: opts.MaxImageSide = None,
    allow_outside_images: Annotated[bool, typer.Option("--allow-outside-images", rich_help_panel=opts.IMAGES, help="Send images from outside --data.")] = False,
    concurrency: opts.Concurrency = settings.DEFAULT_CONCURRENCY,
    fixed_concurrency: opts.FixedConcurrency = False,
    processes: Annotated[int | None, typer.Option(min=1, metavar="N", show_default=False, rich_help_panel=opts.PACE, help="Processes to shard over (default: by size).")] = None,
    batch: opts.Batch = False,
    batch_window: opts.BatchWindow = 2.0,
    batch_poll: opts.BatchPoll = 30.0,
    max_cost: opts.MaxCost = None,
    prices: opts.Prices = None,
    dry_run: opts.DryRun = False,
    fmt: opts.Format = "table",
    no_cache: opts.NoCache = False,
    cache_dir: opts.CacheDir = None,
    cache_tag: opts.CacheTag = None,
) -> None:
    """Run strategies against backends over a dataset, journal every step, print a table.

    With no options: the bundled sample set, the paper's prompting strategies, the offline
    `sim` backend and, for scale, the fixed rules (rows marked (rule)). Every option in full:
    the README's "`unseen run`'s options".
    """
    from ..api import run as run_api
    from ..engine.benchmark import defaults_of, detect
    from ..engine.benchmark import get as get_benchmark
    from ..engine.results import RunResult
    from .run_options import baseline_label, subset_of, with_decoding

    if config is not None:
        from .run_config import merged

        return run(ctx, None, **merged(ctx, config))
    check_format(fmt, dry_run)
    bench = get_benchmark(benchmark) if benchmark else detect(data)
    defaults = defaults_of(bench)
    strategies = with_decoding(strategy or list(defaults.strategies),
                               temperature=temperature, max_tokens=max_tokens)
    backends = backend or [settings.DEFAULT_BACKEND]
    subset = subset_of(instances, sample, seed, limit)
    if dry_run:
        return print_estimate(run_api(
            data, strategies, backends, benchmark=bench.name, samples=samples, limit=limit,
            subset=subset,
            out=out_dir, concurrency=concurrency, box_format=box_format, base_url=base_url,
            progress=not quiet and fmt == "table", processes=processes,
            allow_outside_images=allow_outside_images, profiles=profiles,
            max_image_side=max_image_side, max_cost=max_cost, prices=prices, dry_run=True),
            fmt)
    run_dir = out_dir or settings.new_run_dir(strategies or [bench.name], backends)
    try:
        result = run_api(
            data, strategies, backends, benchmark=bench.name, samples=samples, limit=limit,
            subset=subset, out=run_dir, concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir,
            box_format=box_format, base_url=base_url, timeout_s=timeout, progress=not quiet,
            processes=processes, allow_outside_images=allow_outside_images,
            profiles=profiles, max_image_side=max_image_side, cache_tag=cache_tag,
            adaptive=not fixed_concurrency, max_cost=max_cost, prices=prices,
            batch=batch, batch_window_s=batch_window, batch_poll_s=batch_poll,
        )
        assert isinstance(result, RunResult)  # not a dry run
        rules = None
        if not strategy and defaults.rules and not result.cost_capped:  # for scale; no model
            rules = run_api(data, [defaults.baseline or strategies[0]], list(defaults.rules),
                            benchmark=bench.name, samples=samples, limit=limit, subset=subset,
                            out=run_dir, progress=False)
            assert isinstance(rules, RunResult)
    except KeyboardInterrupt:
        interrupted("trajectories", run_dir)
    assert isinstance(result, RunResult)  # not a dry run
    if quiet_or_resumed(result, quiet, "trajectories"):
        return close(result, "trajectories", strict, quiet)
    base = baseline_label(defaults.baseline, strategies, temperature=temperature,
                          max_tokens=max_tokens)
    _print_table(bench.name, result, base)
    print_reasons(result.by_error, result)
    print_servers(result.run_dir)
    # soft_wrap: a path folded at the console's width cannot be copied back
    out.print(f"run directory: [bold]{escape(str(result.run_dir))}[/]  ({_counted(result, rules)})",
              soft_wrap=True, highlight=False)
    close(result, "trajectories", strict, quiet)


def _counted(result, rules) -> str:
    """What the run added, in the progress bar's count (the models' trajectories) and the
    fixed rules' rows apart, which run after the bar without one."""
    if rules is None or not rules.done:
        return f"{result.done} new trajectories in {result.seconds:.1f} s"
    return (f"{result.done} new trajectories of the models, as the progress bar counted, and "
            f"{rules.done} of the fixed rules, in {result.seconds + rules.seconds:.1f} s")


def _print_table(benchmark: str, result, baseline: str | None) -> None:
    """The run's table as ``unseen compare`` draws it for its benchmark's views; a benchmark
    whose runs have no such table (the Director's: ``director analyze``) gets a count."""
    from ..engine.errors import UnseenError
    from ..engine.rundir import RunDir
    from ..views import CompareOptions, views_for

    try:
        table = views_for(benchmark).compare([RunDir.open(result.run_dir)],
                                              CompareOptions(baseline=baseline), "table",
                                              out.width)
    except UnseenError:
        out.print(f"{result.answered}/{result.done} answered; see them with "
                  f"`unseen show {escape(str(result.run_dir))}`", soft_wrap=True)
        return
    out.print(table)


@commands.command()
def strategies() -> None:
    """List registered strategies and their parameters."""
    from rich.table import Table

    from ..strategies import available

    table = Table(title="strategies")
    for col in ("name", "parameters (default)", "summary"):
        table.add_column(col)
    for e in available():
        fields = ", ".join(f"{k}={f.default!r}" for k, f in e.params.model_fields.items())
        table.add_row(escape(e.name), escape(fields) or "-", escape(e.summary))
    out.print(table)


@commands.command()
def benchmarks() -> None:
    """List registered benchmarks (built-in and plug-ins) and the strategies made for each."""
    from rich.table import Table

    from ..engine.benchmark import available
    from ..strategies import available as strategies_available

    table = Table(title="benchmarks")
    for col in ("name", "summary", "strategies"):
        table.add_column(col)
    entries = strategies_available()
    for b in available():
        names = ", ".join(e.name for e in entries if e.benchmark in b.accepts)
        table.add_row(escape(b.name), escape(b.summary), escape(names) or "-")
    out.print(table)


@commands.command()
def backends() -> None:
    """List backend providers and their spec syntax."""
    from rich.table import Table

    from ..backends import providers

    table = Table(title="backends")
    table.add_column("provider")
    table.add_column("spec")
    for name, usage in providers().items():
        table.add_row(escape(name), escape(usage))
    out.print(table)




@commands.command()
def profiles(
    model: Annotated[str | None, typer.Argument(help="A model name: show the profile it gets.")] = None,
    profiles_file: Annotated[Path | None, typer.Option("--profiles", help="A user profile file, read before the built-in table (default: $UNSEEN_PROFILES).")] = None,
) -> None:
    """List the model profiles (box convention, sampling quirks, source), or the one a
    model gets: the first whose pattern occurs in its name, a user's file first."""
    from rich.table import Table

    from ..backends.profiles import built_in, profile_for, user_profiles

    table_rows = [*user_profiles(profiles_file), *built_in()]
    if model is not None:
        found = profile_for(model, profiles_file)
        if found is None:
            from ..engine.box import no_convention

            raise UserError(no_convention(model))
        table_rows = [found]
    table = Table(title=f"the profile of {model}" if model else "model profiles",
                  title_justify="left")
    for col in ("family", "pattern", "box", "sampling", "logprobs", "source"):
        table.add_column(col, overflow="fold")
    for p in table_rows:
        table.add_row(escape(p.name), escape(p.pattern), escape(p.box_format or "none"),
                      "yes" if p.sampling else "no", "yes" if p.logprobs else "no",
                      escape(p.source + (f" ({p.origin})" if p.origin != "built-in" else "")))
    out.print(table)


@commands.command()
def prices(
    model: Annotated[str | None, typer.Argument(help="A model name: show the price it gets.")] = None,
    prices_file: Annotated[Path | None, typer.Option("--prices", help="A user price file, read before the built-in table (default: $UNSEEN_PRICES).")] = None,
) -> None:
    """List the price table (USD per million tokens: input, cached input, output; the batch
    discount; when each was read and where), or the price a model gets: the first whose
    pattern occurs in its name, a user's file first. A model without one has no price."""
    from rich.table import Table

    from ..backends.prices import built_in, price_for, user_prices

    table_rows = [*user_prices(prices_file), *built_in()]
    if model is not None:
        found = price_for(model, prices_file)
        if found is None:
            raise UserError(f"no price for {model}: no entry of the price table matches it; "
                            "add one in a price file (--prices FILE or $UNSEEN_PRICES, "
                            "[[price]] pattern, input, cached_input, output, date, source)")
        table_rows = [found]
    table = Table(title=f"the price of {model}" if model else "prices, USD per 1M tokens",
                  title_justify="left")
    for col in ("pattern", "in/cached/out", "batch", "read", "source"):
        table.add_column(col, overflow="fold")
    for p in table_rows:
        table.add_row(escape(p.pattern), p.rates(), f"-{100 * p.batch_discount:g}%", p.date,
                      escape(p.source + (f" ({p.origin})" if p.origin != "built-in" else "")))
    out.print(table)
