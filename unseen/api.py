"""The one run pipeline: ``run`` any benchmark's strategies against backends into a run
directory, resumable. SceneFunRI comparisons and Director studies (``unseen.run_study``) both
go through it; a benchmark plans its run (``engine.benchmark``), the pipeline does the rest:

1. the benchmark builds and checks the strategies (nothing connected, nothing written);
2. the backends connect; a strategy that cannot work with the benchmark or a backend is
   refused (``check_pairing``), as is one person given twice;
3. under the run directory's lock, the benchmark plans the run (instances, order, scorer,
   ``run.json``; it may render inputs there), resumes an earlier ``run.json`` by its own
   rule, and its files are written;
4. the runner journals every trajectory; with ``max_cost`` it stops handing out new ones
   once what the run directory spent (its trajectories' token usage × each model's price,
   ``backends.prices``; the journal's earlier trajectories included) and what batches have
   committed reaches the cap.

With ``dry_run`` the checks of 1 and 2 are made (no server is asked what it serves), and
instead of 3 and 4 the plan runs against stand-ins in a temporary directory
(``unseen.dryrun``): the result is a ``DryRunEstimate``, and nothing is written or sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import settings
from .backends import connect
from .backends import prices as price_table
from .backends.profiles import in_use as profiles_in_use
from .backends.profiles import restore as restore_profiles
from .engine.benchmark import RunRequest, detect
from .engine.benchmark import get as get_benchmark
from .engine.cache import ReplyCache
from .engine.decoded import decoded_store
from .engine.errors import UnseenError
from .engine.limits import snapshot
from .engine.lock import hold
from .engine.pairing import check_pairing
from .engine.results import RunResult
from .engine.rundir import RunDir, kind_of
from .engine.runner import Runner
from .engine.shards import auto_processes, stop_fork_server, warm_up
from .engine.subset import apply as apply_subset
from .engine.subset import check_resume as check_subset
from .engine.types import RunConfig, Trajectory

if TYPE_CHECKING:
    from .dryrun import DryRunEstimate

class RunError(UnseenError, ValueError):
    """A run that cannot start (for example a run directory made from other data)."""


def parse_backend(arg: str) -> tuple[str, str | None]:
    """``NAME=SPEC`` → (SPEC, NAME); a plain ``SPEC`` → (SPEC, None).

    The name is the model as a study design's batches list it (``gpt-6-sol=sim:strong`` runs
    the simulator in that model's place). A ``=`` after the provider's colon belongs to the
    spec (``sim:default,skill=0.9``)."""
    name, eq, spec = arg.partition("=")
    # a name is a model's name: no provider colon, no option comma (``sim,skill=0.9`` is a
    # spec with a knob, not a name)
    if eq and ":" not in name and "," not in name and name.strip() and spec.strip():
        return spec.strip(), name.strip()
    return arg.strip(), None


def _shard_setup(concurrency: int, *, benchmark: str, request: RunRequest, instances: list,
                 cache_dir: str | Path | None, use_cache: bool,
                 options: dict[str, Any]) -> tuple[list, list, Any]:
    """Strategies, connected backends and the scorer, rebuilt in every shard process (a
    module-level function, so ``functools.partial`` of it pickles)."""
    bench = get_benchmark(benchmark)
    reply_cache = ReplyCache(cache_dir) if use_cache else None
    clients = [connect(b, concurrency=concurrency, cache=reply_cache, **options)
               for b in request.backends]
    for c in clients:
        c.prepare(instances)
    return bench.strategies(request), clients, bench.scorer(request)


def _record_backend_state(run: RunDir, clients: list,
                          shards: dict[str, dict[str, Any]] | None = None) -> None:
    """What the backends learnt while the run went on, into run.json's backend descriptions:
    per-server counts of backends spread over several servers (replacing those of an
    earlier session), the adaptive concurrency's course and 429s, and the parameters a
    provider rejected (added to those recorded). A sharded run's counts, course and 429s
    are its shards' (``shards``: ``Runner.shard_state``), summed over them."""
    run = RunDir(run.path)  # the runner has written run.json since
    config = run.config
    if config is None:
        return
    if shards is None:
        shards = snapshot(clients)
    counts = {spec: e["servers"] for spec, e in shards.items() if "servers" in e}
    limits = {spec: e["course"] for spec, e in shards.items() if "course" in e}
    dropped = {c.spec: d for c in clients if (d := c.describe().get("dropped_params"))}
    batches = {c.spec: b for c in clients if (b := c.describe().get("batch"))}
    for desc in config.backends:
        spec = desc.get("spec")
        if spec in counts:
            desc["server_counts"] = counts[spec]
        if spec in limits:  # the adaptive limit's course and the 429s, this session's
            desc["concurrency_course"] = limits[spec]
        if spec in batches:  # the batches this session sent
            desc["batch"] = batches[spec]
        if spec in dropped:
            desc["dropped_params"] = sorted({*desc.get("dropped_params", []), *dropped[spec]})
    run.write_config(config)


def _record_plan(plan: Any, clients: list, old: RunConfig | None) -> None:
    """What the run directory is meant to hold, into ``run.json``: the (backend, strategy)
    pairs of a plan in the default order, added to those of earlier invocations (none
    recorded before: unknown), or the count of a plan that orders its own calls."""
    if plan.order is not None:
        plan.config.planned = plan.total
        return
    new = [[c.spec, s.label] for c in clients for s in plan.strategies]
    earlier = old.pairs if old is not None else []
    plan.config.pairs = earlier + [p for p in new if p not in earlier] \
        if earlier or old is None else []


def _check_specs(specs: list[str]) -> None:
    twice = sorted({s for s in specs if specs.count(s) > 1})
    if twice:  # the spec is part of every trajectory key: two models on one spec share keys
        raise RunError(f"backend {twice[0]} is given twice; give each model its own spec "
                       "(for the simulator, e.g. sim:default,seed=1 and sim:default,seed=2)")


#: providers whose servers ``--base-url`` gives when a spec names none of its own
_BASE_URL_PROVIDERS = ("openai", "openai-responses", "vllm")


def _check_base_urls(specs: list[str], base_url: str | Sequence[str] | None) -> None:
    """Several ``--base-url`` servers are one model's: refuse them for several models,
    whose calls would go to each other's endpoints."""
    from .backends.servers import url_list

    if len(url_list(base_url)) < 2:
        return
    users = [s for s in specs if s.partition(":")[0] in _BASE_URL_PROVIDERS
             and "@" not in s.partition(":")[2]]
    models = sorted({s.partition(":")[2].split(",")[0] for s in users})
    if len(models) > 1:
        raise RunError(f"--base-url gives {len(url_list(base_url))} servers, which spread one "
                       f"model's calls, but {len(models)} backends use them ({', '.join(users)}"
                       "): give each backend its own endpoint in its spec, e.g. "
                       "openai:MODEL@URL,key_env=VAR")


def _record_fingerprints(plan: Any) -> dict[str, dict[str, Any]]:
    """Each strategy's fingerprint (its code and prompt templates, ``strategies.registry.
    fingerprint``) and the project's git commit, into the plan's run.json."""
    from .strategies.registry import fingerprint

    # once per strategy, not per label (a Director study has 50 labels of one strategy)
    by_name = {name: fingerprint(name) for name in {s.name for s in plan.strategies}}
    prints = {s.label: by_name[s.name] for s in plan.strategies}
    for entry in plan.config.strategies:
        if entry.get("label") in prints:
            entry["fingerprint"] = prints[entry["label"]]
    if commit := settings.git_commit():
        plan.config.git_commits = [commit]
    return prints


def _check_fingerprints(old: Any, prints: dict[str, dict[str, Any]], run_dir: Path) -> None:
    """Refuse to resume a strategy whose code or prompt templates changed since the run
    directory was made: its trajectory keys are the same, so the old trajectories would be
    skipped as done and the journal would mix two prompts."""
    for entry in old.strategies:
        before, now = entry.get("fingerprint"), prints.get(entry.get("label"))
        if not before or now is None or before == now:
            continue  # a run made before fingerprints were recorded: nothing to hold it to
        changed = []
        if before.get("code") != now.get("code"):
            was, is_now = before.get("modules") or {}, now.get("modules") or {}
            edited = [m.rpartition(".")[2] + ".py" for m in sorted(set(was) | set(is_now))
                      if was.get(m) != is_now.get(m)]
            changed.append("its code" + (f" ({', '.join(edited[:3])})"
                                         if was and edited else ""))
        files = sorted(set(before.get("prompts", {})) | set(now.get("prompts", {})))
        moved = [f for f in files
                 if before.get("prompts", {}).get(f) != now.get("prompts", {}).get(f)]
        if moved:
            changed.append("its prompt template" + ("s " if len(moved) > 1 else " ")
                           + ", ".join(moved[:3]) + (f" and {len(moved) - 3} more"
                                                     if len(moved) > 3 else ""))
        raise RunError(f"strategy {entry.get('label')!r} changed since {run_dir} was made "
                       f"({' and '.join(changed)}): its old trajectories would count as done "
                       "for the new prompts; start a new run directory (--out NEW_DIR)")


def _check_served(old: Any, new: Any, run_dir: Path) -> None:
    """Refuse to resume a backend whose server now serves other weights (another served
    root behind the same spec): its old trajectories would count as the new model's."""
    before = {d.get("spec"): d.get("served") for d in old.backends if d.get("served")}
    for desc in new.backends:
        was = before.get(desc.get("spec"))
        if was and desc.get("served") and was != desc["served"]:
            raise RunError(f"{desc['spec']} serves other weights than when {run_dir} was "
                           f"made ({was}, now {desc['served']}): start a new run directory "
                           "(--out NEW_DIR)")


async def _identify(client: Any) -> None:
    """Ask a backend what it serves before the run (a vLLM server's GET /v1/models); a
    server that cannot say is one line, not a run of failed calls."""
    from .engine.backend import ProviderError

    try:
        await client.identify()
    except ProviderError as exc:
        raise RunError(f"{client.spec}: {exc.message}") from None


def _check_clients(clients: list, processes: int) -> None:
    same = [c.spec for c in clients if [d.spec for d in clients].count(c.spec) > 1]
    if same:  # two spellings of one backend (a person on two ports)
        raise RunError(f"{same[0]} is given twice: one person, one backend")
    people = [c.spec for c in clients if c.interactive]
    if people and processes > 1:
        raise RunError(f"{people[0]} is a person answering on one page: run it without "
                       "--processes")


def _cost_meter(clients: list, max_cost: float | None, processes: int) -> Any:
    """What a finished trajectory spent, in US dollars (its steps' usage at its backend's
    price; a reply the reply cache served cost nothing), for ``max_cost``; refused before any
    call where a model has no price (the simulator, rules and people cost nothing)."""
    if max_cost is None:
        return None
    if not math.isfinite(max_cost) or max_cost <= 0:
        raise RunError(f"--max-cost must be a positive amount of US dollars, got {max_cost:g}")
    if processes > 1:
        raise RunError("--max-cost counts the spent cost in one process: run it without "
                       "--processes")
    priced = {}
    for c in clients:
        if kind_of(c.spec, c.simulated) != "model":
            continue
        price = price_table.price_for(c.model)
        if price is None:
            raise RunError(f"--max-cost: no price for {c.model} ({c.spec}), so its spending "
                           "cannot be counted; give one in a price file (--prices FILE or "
                           "$UNSEEN_PRICES; see `unseen prices`)")
        priced[c.spec] = price

    batched = {c.spec for c in clients if c.batched}

    def spent(traj: Trajectory) -> float:
        price = priced.get(traj.backend)
        if price is None:
            return 0.0
        batch = traj.backend in batched  # at the batch API's discount
        return sum(price.cost(s.reply.usage, batch) for s in traj.steps if not s.reply.cached)

    return spent


def _spent_before(run: RunDir) -> float:
    """What the run directory's journal has spent, in US dollars: its model replies' token
    usage at each model's price (at the batch discount for a backend run.json says went
    through a batch API; a reply the cache served cost nothing), as :func:`_cost_meter`
    counts a finished trajectory (``show``'s cost column also counts cached replies: what
    the replies would cost, not what this directory paid). A resumed run's ``--max-cost``
    counts it."""
    from .engine.journal import iter_records
    from .evals import costs

    if not run.journal.is_file():
        return 0.0
    batched = costs.batched_specs(run.config.backends) if run.config else frozenset()
    prices: dict[str, Any] = {}
    total = 0.0
    for rec in iter_records(run.journal):
        if kind_of(rec["backend"], bool(rec.get("simulated"))) != "model":
            continue
        model = str(rec["model"])
        price = prices[model] if model in prices else prices.setdefault(
            model, price_table.price_for(model))
        usage: dict[str, int] = {}
        for step in rec["steps"]:
            reply = step.get("reply") or {}
            if not reply.get("cached"):
                costs.add_usage(usage, reply.get("usage"))
        total += costs.cost_of(usage, price, rec["backend"] in batched) or 0.0
    return total


async def run_async(
    data: str | Path | None = None,
    strategies: Sequence[str] = (settings.DEFAULT_STRATEGY,),
    backends: Sequence[str] = (settings.DEFAULT_BACKEND,),
    *,
    benchmark: str | None = None,
    samples: int | None = None,
    limit: int | None = None,
    subset: dict[str, Any] | None = None,
    out: str | Path | None = None,
    concurrency: int = settings.DEFAULT_CONCURRENCY,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    box_format: str | None = None,
    base_url: str | Sequence[str] | None = None,
    max_image_side: int | None = None,
    profiles: str | Path | None = None,
    cache_tag: str | None = None,
    adaptive: bool = True,
    batch: bool = False,
    batch_window_s: float = 2.0,
    batch_poll_s: float = 30.0,
    timeout_s: float = settings.DEFAULT_TIMEOUT_S,
    max_attempts: int = 6,
    backoff_base_s: float = 1.0,
    progress: bool = True,
    processes: int | None = 1,
    run_label: str = "unseen run",
    max_cost: float | None = None,
    prices: str | Path | None = None,
    dry_run: bool = False,
    **options: Any,
) -> RunResult | DryRunEstimate:
    """Run a benchmark's strategies against backends into a run directory; see ``run``.

    ``max_cost`` (US dollars) stops the run cleanly once the run directory's trajectories
    have spent it, those of earlier calls included (``RunResult.cost_capped``); ``prices`` is a user price file read before the built-in
    table (default ``$UNSEEN_PRICES``). ``dry_run`` returns the plan's estimate
    (``unseen.dryrun.DryRunEstimate``: trajectories, calls, tokens and cost per backend)
    without a call to any provider and without writing anything. ``subset`` (``engine.subset.
    describe``: ids, or a seeded sample) narrows the benchmark's instances."""
    if samples is not None and samples < 1:
        raise RunError("--samples must be at least 1")
    auto = processes is None  # chosen from the run's size once it is planned
    processes = 1 if processes is None else processes
    if processes < 1:
        raise RunError("--processes must be at least 1")
    bench = get_benchmark(benchmark) if benchmark else detect(data)
    parsed = [parse_backend(b) for b in backends]
    request = RunRequest(data=data, strategies=list(strategies),
                         backends=[spec for spec, _ in parsed],
                         names=[name for _, name in parsed], samples=samples, limit=limit,
                         subset=subset, progress=progress,
                         options={**options, "concurrency": concurrency, "cache": cache,
                                  "package_version": settings.package_version()})
    connect_options: dict[str, Any] = {"timeout_s": timeout_s, "max_attempts": max_attempts,
                       "backoff_base_s": backoff_base_s, "box_format": box_format,
                       "base_url": base_url, "max_image_side": max_image_side,
                       "profiles": profiles, "cache_tag": cache_tag, "adaptive": adaptive,
                       "batch": batch, "batch_window_s": batch_window_s,
                       "batch_poll_s": batch_poll_s}
    ahead = processes > 1 and not dry_run
    if ahead:
        warm_up()  # the shards' imports on another core while this process makes its own
    reply_cache = None
    clients: list = []
    before = profiles_in_use()
    prices_before = price_table.in_use()
    stack = contextlib.ExitStack()
    try:
        specs = bench.strategies(request)  # a bad strategy: refused before anything connects
        _check_specs(request.backends)
        _check_base_urls(request.backends, base_url)
        reply_cache = ReplyCache(cache_dir) if cache else None
        stack.enter_context(decoded_store(cache_dir, enabled=cache))  # beside the replies
        price_table.use(prices)  # a bad price file: refused before anything connects
        clients = [connect(b, concurrency=concurrency, cache=reply_cache, **connect_options)
                   for b in request.backends]
        _check_clients(clients, processes)
        check_pairing(specs, clients, bench.name, bench.accepts)  # before anything is written
        cost_of = _cost_meter(clients, max_cost, processes)
        if dry_run:  # no identify(): a dry run asks no server anything
            from .dryrun import estimate

            return await estimate(bench, request, specs, clients, out)
        for c in clients:  # what each server says it serves: cache keys and run.json
            await _identify(c)
        run_dir = Path(out) if out else settings.new_run_dir(list(strategies), list(backends))
        run = RunDir(run_dir)
        if (run.journal.is_file() or run.config_file.is_file()) and run.benchmark != bench.name:
            # before the plan, which may render scenes into the folder: nothing is changed
            raise RunError(f"{run_dir} holds a {run.benchmark} run, not a {bench.name} one; "
                           "choose another --out")
        with hold(run_dir, run_label):  # before any file: one process per run directory
            # what the journal spent counts against the cap (run.json not yet rewritten)
            spent_before = _spent_before(run) if cost_of is not None else 0.0
            plan = bench.plan(request, specs, clients, run_dir)
            if plan.order is not None and processes > 1:  # shards split the plain nesting
                raise RunError(f"the {bench.name} benchmark plans its own order of calls: run "
                               "it in one process (without --processes)")
            apply_subset(plan, subset)
            prints = _record_fingerprints(plan)
            _record_plan(plan, clients, run.config)
            if run.config is not None:
                _check_fingerprints(run.config, prints, run_dir)
                _check_served(run.config, plan.config, run_dir)
                check_subset(run.config, plan.config, run_dir)
                commits, pairs = run.config.git_commits, plan.config.pairs
                plan.config = bench.resume(run.config, plan.config, run_dir)
                plan.config.git_commits = list(dict.fromkeys([*commits,
                                                              *plan.config.git_commits]))
                plan.config.pairs = pairs
            for name, text in plan.files.items():
                run.write_file(name, text)
            # a person's page, and a model loaded in this process (each shard would load
            # its own copy), keep the one process
            if auto and plan.order is None and not max_cost and not batch and not any(
                    c.interactive or c.in_process for c in clients):
                size = Runner.from_plan(plan, clients, run_dir, progress=False).total()
                processes = auto_processes(size, os.cpu_count() or 1, concurrency)
            if processes > 1:
                plan.setup = functools.partial(
                    _shard_setup, benchmark=bench.name, request=request,
                    instances=plan.instances, cache_dir=cache_dir, use_cache=cache,
                    options=connect_options)
            runner = Runner.from_plan(plan, clients, run_dir, progress=progress,
                                      processes=processes, max_cost=max_cost, cost_of=cost_of,
                                      spent_before=spent_before)
            result = await runner.run()
            _record_backend_state(run, clients, runner.shard_state())
            return result
    except BaseException:
        if ahead:  # refused or failed: the fork server's imports need not go on
            stop_fork_server()
        raise
    finally:
        for c in clients:
            await c.aclose()
        if reply_cache is not None:
            reply_cache.close()
        restore_profiles(before)  # the next run in this process reads its own
        price_table.restore(prices_before)
        stack.close()


def run(data: str | Path | None = None, strategies: Sequence[str] = ("direct",),
        backends: Sequence[str] = ("sim",), **kwargs: Any) -> RunResult | DryRunEstimate:
    """Run strategies × backends over a benchmark's instances and journal every trajectory.

    ``data`` is a SceneFunRI folder (default: the bundled sample set); ``benchmark=`` names
    another benchmark (``director`` takes ``design=`` and no strategies; see
    ``unseen.run_study``). Strategies are ``name[:k=v,...]`` and backends
    ``provider:target`` specs (``NAME=SPEC`` runs SPEC as a design's model NAME). Rerunning
    with the same ``out`` resumes: finished trajectories are skipped. Returns counts and the
    run directory; with ``dry_run=True``, the plan's estimate instead, nothing run or written.
    """
    return asyncio.run(run_async(data, strategies, backends, **kwargs))
