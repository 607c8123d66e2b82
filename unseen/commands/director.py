"""``unseen director``: the Director Task's prompts, studies, analysis, trace coding and
power."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .. import settings
from . import call_options as opts
from .common import (
    UserError,
    close,
    err,
    interrupted,
    out,
    plain,
    print_reasons,
    quiet_or_resumed,
)

director_app = typer.Typer(no_args_is_help=True,
                           help="The Director Task: prompts, studies, analysis and power.")


@director_app.command("prompts")
def director_prompts(
    scene: Annotated[str | None, typer.Option("--scene", help="Scene id whose visible blocks the stated variant lists.")] = None,
    scenes: Annotated[Path | None, typer.Option("--scenes", help="scenes.jsonl made by `unseen data director`.")] = None,
    # cli_help escapes every help text: "[/<question>]" is no closing tag of rich markup
    condition: Annotated[list[str] | None, typer.Option("--condition", "-c", help="Only this condition, <request>[/<question>][+<insert>]; repeatable.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """Print every prompt condition, each checked byte for byte against its request's base."""
    from ..evals.director.task.prompts import PromptError, build, check_identity, conditions

    if fmt not in ("text", "json"):
        raise UserError(f"--format must be text or json, got {fmt!r}")
    record = None
    if scene is not None:
        if scenes is None:
            raise UserError("--scene needs --scenes FILE (a scenes.jsonl)")
        from ..engine.userfiles import iter_lines, parse_json

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
        plain(json.dumps([{"condition": p.name, "turns": p.turns, "chars": p.chars,
                           "fields_per_turn": p.fields_per_turn, "changed": changed}
                          for p, changed in rows], indent=2, ensure_ascii=False))
        return
    for prompt, changed in rows:
        plain(f"=== {prompt.name}  ({prompt.chars} chars; changed: {', '.join(changed) or 'none'})")
        for i, turn in enumerate(prompt.turns, 1):
            if len(prompt.turns) > 1:
                plain(f"--- turn {i}")
            plain(turn)
        plain()


@director_app.command("run")
def director_run(
    design_file: Annotated[str, typer.Argument(metavar="DESIGN", help="A study design TOML, or a shipped one: paper, quick.")],
    backend: Annotated[list[str] | None, typer.Option("--backend", "-b", help="SPEC or NAME=SPEC (model NAME); repeatable.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory; the same one again resumes.")] = None,
    scenes: Annotated[Path | None, typer.Option(help="Scene sets (default: rendered in RUN_DIR).")] = None,
    samples: Annotated[int | None, typer.Option(min=1, metavar="N", help="Replies per scene and condition.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new call failed.")] = False,
    reasoning_effort: Annotated[str, typer.Option(rich_help_panel=opts.REQUESTS, help="none: send none.")] = "medium",
    temperature: Annotated[float | None, typer.Option(rich_help_panel=opts.REQUESTS, help="Default: the provider's.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, metavar="N", rich_help_panel=opts.REQUESTS, help="Output cap (default: none).")] = None,
    profiles: opts.Profiles = None,
    base_url: opts.BaseUrl = None,
    timeout: opts.Timeout = 600.0,
    max_image_side: opts.MaxImageSide = None,
    concurrency: opts.Concurrency = settings.DEFAULT_CONCURRENCY,
    fixed_concurrency: opts.FixedConcurrency = False,
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
    """Run a Director study: every batch's calls in one seeded random order per model.

    Each condition asks each scene `samples` times; two-turn conditions are one dialogue.
    Finished calls are journalled; rerun with the same --out to resume. The options in full:
    the README's "Director Task studies" and "`unseen run`'s options".
    """
    from ..engine.results import RunResult
    from ..evals.director.study.design import load_design
    from .director_run import run_study
    from .estimate import check_format, print_estimate

    check_format(fmt, dry_run)
    design = load_design(design_file)
    if samples is not None:  # the study as run, not as shipped: study.json records it
        design = design.model_copy(update={"samples": samples})
    backends = backend or [settings.DEFAULT_BACKEND]
    if dry_run:
        return print_estimate(run_study(
            design, backends, out_dir, source=str(design_file), scenes=scenes,
            concurrency=concurrency, base_url=base_url, reasoning_effort=reasoning_effort,
            temperature=temperature, max_tokens=max_tokens,
            progress=not quiet and fmt == "table", profiles=profiles,
            max_image_side=max_image_side, max_cost=max_cost, prices=prices, dry_run=True),
            fmt)
    run_dir = out_dir or settings.new_run_dir([f"director-{design.name}"], backends)
    try:
        result = run_study(design, backends, run_dir, source=str(design_file), scenes=scenes,
                           concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir,
                           timeout_s=timeout, base_url=base_url, reasoning_effort=reasoning_effort,
                           temperature=temperature, max_tokens=max_tokens, progress=not quiet,
                           profiles=profiles, cache_tag=cache_tag,
                           max_image_side=max_image_side, adaptive=not fixed_concurrency,
                           max_cost=max_cost, prices=prices, batch=batch,
                           batch_window_s=batch_window, batch_poll_s=batch_poll)
    except KeyboardInterrupt:
        interrupted("calls", run_dir)
    assert isinstance(result, RunResult)  # not a dry run
    if quiet_or_resumed(result, quiet, "calls"):
        return close(result, "calls", strict, quiet)
    answered = f"{result.answered}/{result.done} answered" if result.done else "nothing new to run"
    out.print(f"{answered}; run directory: [bold]{result.run_dir}[/]  ({result.seconds:.1f} s)")
    print_reasons(result.by_error, result)
    out.print(f"next: unseen director analyze {result.run_dir}")
    close(result, "calls", strict, quiet)


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
    prices: Annotated[Path | None, typer.Option("--prices", help="A price file (TOML [[price]]: pattern, input, cached_input, output, batch_discount, date, source) read before the built-in price table for the cost per model (default: $UNSEEN_PRICES).")] = None,
) -> None:
    """The study's tables: rates per condition and the design's comparisons in points, with
    95 % intervals, Benjamini–Hochberg marks per family and the ±margin verdicts; each real
    model's cost in US dollars (its replies' token counts × the price table)."""
    from ..backends.prices import using
    from .director_analyze import analyze_command

    with using(prices):
        analyze_command(run_dir, design_file, fmt=fmt, plots=plots, paper=paper,
                        n_boot=n_boot, seed=seed, drop_apparent=drop_apparent, console=out,
                        status=err)


_TRACES, _CODING = "Which traces", "Coding"  # `director code --help`'s panels


@director_app.command("code")
def director_code(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `unseen director run`.")],
    coder: Annotated[str, typer.Option("--coder", "-c", help="Backend spec of the coder.")] = "sim",
    second_pass: Annotated[bool, typer.Option("--second-pass", help="Hidden-block choices again, no report.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any new batch failed.")] = False,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", rich_help_panel=_TRACES, help="Only this design model; repeatable.")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", rich_help_panel=_TRACES, help="Only this condition; repeatable.")] = None,
    batch: Annotated[list[str] | None, typer.Option("--batch", rich_help_panel=_TRACES, help="Only this design batch; repeatable.")] = None,
    scene_set: Annotated[list[str] | None, typer.Option("--set", rich_help_panel=_TRACES, help="Only this scene set; repeatable.")] = None,
    batch_size: Annotated[int, typer.Option(min=1, metavar="N", rich_help_panel=_CODING, help="Traces per coder request.")] = 20,
    tests: Annotated[int, typer.Option(min=0, metavar="N", rich_help_panel=_CODING, help="Known-code tests mixed in.")] = 30,
    repeats: Annotated[int, typer.Option(min=0, metavar="N", rich_help_panel=_CODING, help="Items coded twice (main pass).")] = 30,
    seed: Annotated[int, typer.Option(rich_help_panel=_CODING, help="Seed of the draws.")] = 0,
    retry_uncoded: Annotated[bool, typer.Option("--retry-uncoded", rich_help_panel=_CODING, help="Ask the uncoded items again at the end.")] = False,
    reasoning_effort: Annotated[str, typer.Option(rich_help_panel=opts.REQUESTS, help="high for vLLM or Gemini.")] = "max",
    no_schema: Annotated[bool, typer.Option("--no-schema", rich_help_panel=opts.REQUESTS, help="Send no JSON schema of the codes.")] = False,
    base_url: opts.BaseUrl = None,
    timeout: opts.Timeout = 600.0,
    concurrency: Annotated[int, typer.Option(min=1, metavar="N", rich_help_panel=opts.REQUESTS, help="Coder requests in flight.")] = 4,
    no_cache: opts.NoCache = False,
    cache_dir: opts.CacheDir = None,
) -> None:
    """Code the study's reasoning traces against the codebook of Appendix E.

    The coder sees each trace with only a neutral id and the reply (no model, condition or
    scene); test traces written to a known code are mixed in. Codes go to RUN/coding/PASS/;
    rerun to resume. Then: `unseen director codes RUN`, and `unseen director analyze RUN`
    fits the design's comparisons on coded traces. In full: the README's "Coding the
    reasoning traces".
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
        interrupted("batches", run_dir)
    result = done.run
    if quiet_or_resumed(result, quiet, "batches"):
        return close(result, "batches", strict, quiet)
    if done.retried is not None:
        out.print(f"asked again: {done.retried} items no earlier reply coded")
    out.print(f"{done.items} traces, {done.repeats} of them again, and {tests} test traces in "
              f"{result.total} batches; "
              f"{result.answered}/{result.done} new batches coded ({result.seconds:.1f} s); "
              f"{done.untraced} selected replies carry no trace")
    print_reasons(result.by_error, result)
    out.print(f"next: unseen director codes {run_dir}")
    close(result, "batches", strict, quiet)


@director_app.command("codes")
def director_codes(
    run_dir: Annotated[Path, typer.Argument(help="A run directory whose traces `unseen director code` coded.")],
    fmt: Annotated[str, typer.Option("--format", help="table, json or md.")] = "table",
) -> None:
    """What the coded traces say: readings per condition, hidden-block choices by whether the
    trace takes the director to see the block, the coder's test traces and the second pass."""
    from ..evals.director.coding.report import render, summarize

    if fmt not in ("table", "json", "md"):
        raise UserError(f"--format must be table, json or md, got {fmt!r}")
    plain(render(summarize(run_dir), fmt, width=out.width), end="")


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
    from ..evals.director.coding.sheets import draw, sheet_key_path, write_sheet

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
    from ..evals.director.task.codebook import codebook

    plain(codebook(second_pass), end="")


@director_app.command("agree")
def director_agree(
    run_dir: Annotated[Path, typer.Argument(help="The run directory the sheet was drawn from.")],
    sheets: Annotated[list[Path], typer.Argument(help="Filled sheets (CSV), one per person.")],
    seed: Annotated[int, typer.Option(help="The --seed the sheet was drawn with.")] = 0,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Agreement of people's sheets with the automatic codes and with each other: items with
    the same code and Cohen's κ with its interval over 2,000 resamples; test traces right."""
    from ..evals.director.coding.sheets import agreement

    res = agreement(run_dir, sheets, seed=seed)
    if fmt == "json":
        plain(json.dumps(res, indent=2))
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

    from ..evals.director.analysis.power import parse_effects
    from ..evals.director.analysis.power_report import power_report
    from ..evals.director.analysis.power_report import render as render_power
    from ..evals.director.study.design import load_design

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
        plain(json.dumps(clean(report), indent=2))
        return
    out.print(render_power(report, title=f"{design.name}: simulated power and coverage "
                                         f"({reps} studies)", width=out.width))
    from ..evals.director.study.design import TRACE_MEASURES

    traced = sum(c.measure in TRACE_MEASURES for c in design.comparisons)
    if traced:
        out.print(f"left out: {traced} comparisons on coded reasoning traces (the simulation "
                  "draws no traces)")


