"""Benchmarks as plug-ins: the unit the run pipeline and the views dispatch on.

A benchmark (SceneFunRI, the Director Task, a third one from an outside package) is to unseen
what a ``Task`` is to inspect_ai. It turns what a user asked for (a :class:`RunRequest`) into
a :class:`Plan`: the instances, loaded and validated; the strategies it runs, each paired
with the benchmark (``StrategySpec.benchmark``); the order of the calls (the product of
backends, strategies, instances and samples unless the benchmark plans its own, as the
Director's seeded batches do); the scorer; ``run.json``; and the files it keeps beside the
journal. It says how a rerun into the same run directory resumes (:meth:`Benchmark.resume`).
Its sections of ``show``, ``tui`` and ``export`` are registered apart, under the entry-point
group ``unseen.views`` by its name (``unseen.views.BenchmarkViews``): the views name the
benchmark, never the other way round, so a benchmark imports nothing of the views.

Benchmarks register under the entry-point group ``unseen.benchmarks`` (the built-ins
included; an entry names the benchmark object, ``package.module:BENCHMARK``), through the
registry every plug-in kind shares (``engine.plugins.Registry``), so an outside package adds
one the same way; :func:`register` adds one in process (tests, notebooks). Nothing here
imports a benchmark by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import UnseenError
from .plugins import Registry
from .types import Instance, RunConfig

if TYPE_CHECKING:  # the graph module imports LangGraph: listing benchmarks must not
    from .backend import Backend
    from .graph import StrategySpec

ENTRY_POINT_GROUP = "unseen.benchmarks"
#: The group whose entry ``default`` names the benchmark a run without data plans, and that
#: a run directory whose ``run.json`` names none belongs to (the package's pyproject.toml
#: names it: no module here does)
DEFAULT_GROUP = "unseen.default_benchmark"

Scorer = Callable[[Instance, Any], dict[str, float]]


class BenchmarkError(UnseenError, ValueError):
    """An unknown benchmark, or a request a benchmark cannot plan."""


@dataclass
class RunRequest:
    """What a user asked for, before a benchmark reads it.

    ``backends`` are the specs as given; ``names`` the model name each runs under where the
    user gave one (``NAME=SPEC``), else None. ``options`` holds what only one benchmark
    reads (the Director's design and scene folder, its decoding); ``options["dry_run"]`` is
    True when the plan is a dry run's (``unseen.dryrun``: its run directory is temporary,
    and the benchmark writes nothing outside it)."""

    data: str | Path | None = None
    strategies: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    names: list[str | None] = field(default_factory=list)
    samples: int | None = None
    limit: int | None = None
    subset: dict[str, Any] | None = None  # engine.subset: applied to the benchmark's plan
    progress: bool = True
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class WorkItem:
    """One trajectory to run: (instance, strategy, backend, sample) under its journal key."""

    key: str
    instance: Instance
    strategy: StrategySpec
    backend: Backend
    sample: int
    index: tuple[int, int, int] = (0, 0, 0)  # backend, strategy, instance positions


@dataclass
class Plan:
    """A run, ready: what the runner needs and what ``run.json`` records.

    ``order(done)`` yields the work items not in ``done`` in the order the benchmark wants
    them asked (None: every backend × strategy × instance × sample, in that nesting), made
    as they are asked for; ``total`` counts them all and ``shares`` each backend spec's part,
    so a fresh run starts its first call without making every item first. ``files`` are
    written into the run directory, under its lock, before the first call (the Director's
    ``study.json``)."""

    instances: list[Instance]
    strategies: list[StrategySpec]
    config: RunConfig
    score: Scorer | None = None
    samples: int = 1
    order: Callable[[set[str]], Iterator[WorkItem]] | None = None
    total: int | None = None
    shares: dict[str, int] | None = None
    files: dict[str, str] = field(default_factory=dict)
    setup: Any = None  # a picklable setup for shard processes (SceneFunRI's --processes)


@dataclass(frozen=True)
class RunDefaults:
    """What ``unseen run`` does when the user names no strategy: run ``strategies``, and
    ``rules`` (fixed reference backends) with ``baseline`` alone, for scale; tables of the run
    are paired against ``baseline``. A benchmark without ``defaults`` needs ``-s``."""

    strategies: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    baseline: str | None = None


def defaults_of(bench: Benchmark) -> RunDefaults:
    """The benchmark's :class:`RunDefaults` (an optional member: none, for most)."""
    return getattr(bench, "defaults", None) or RunDefaults()


@runtime_checkable
class Benchmark(Protocol):
    """A benchmark: how its instances load, how a run is planned and scored, and how a rerun
    resumes (what the views show of its runs: ``unseen.views``)."""

    name: str  # run.json's ``benchmark``
    summary: str  # one line, for ``unseen benchmarks``
    # optional, not in the protocol's checks: ``defaults: RunDefaults`` (:func:`defaults_of`)
    # and ``dry_run_respondent: str``, the ``sim`` spec that answers a dry run's requests
    # (``unseen.dryrun``; default ``sim:oracle``)
    # the instance kinds its instances offer, by the ``benchmark=`` strategies declare: a
    # benchmark whose instances hold an image, an instruction and a box accepts
    # ``types.BOX_INSTANCES`` and runs every box strategy
    accepts: frozenset[str]

    def claims(self, data: Path) -> bool:
        """True when ``data`` (a folder or file) holds this benchmark's instances."""
        ...

    def strategies(self, request: RunRequest) -> list[StrategySpec]:
        """The strategies the run asks for, built and validated (before any backend is
        asked or anything written)."""
        ...

    def scorer(self, request: RunRequest) -> Scorer | None:
        """The metrics of one trajectory's prediction (picklable setups rebuild it in each
        shard process)."""
        ...

    def plan(self, request: RunRequest, strategies: list[StrategySpec],
             backends: list[Backend], run_dir: Path) -> Plan:
        """The run: instances, order, scorer and configuration. Called under the run
        directory's lock; may write inputs the run needs (rendered scenes) there."""
        ...

    def resume(self, old: RunConfig, new: RunConfig, run_dir: Path) -> RunConfig:
        """``run.json`` for a rerun into a directory that holds ``old``; raises
        :class:`BenchmarkError` (or another ``UnseenError``) when it cannot resume there."""
        ...


BENCHMARKS: Registry[Benchmark] = Registry(ENTRY_POINT_GROUP, "benchmark")


def register(bench: Benchmark) -> Benchmark:
    """Add a benchmark in process (an entry point does the same for a package)."""
    BENCHMARKS[bench.name] = bench
    return bench


def available() -> list[Benchmark]:
    """Every registered benchmark, by name."""
    return [BENCHMARKS[k] for k in sorted(BENCHMARKS)]


def get(name: str) -> Benchmark:
    if name not in BENCHMARKS:
        raise BenchmarkError(BENCHMARKS.unknown(name))
    return BENCHMARKS[name]


#: the entry ``default`` of :data:`DEFAULT_GROUP` (read once, as every group is)
_DEFAULT: Registry[Benchmark] = Registry(DEFAULT_GROUP, "default benchmark")


def default() -> Benchmark:
    """The benchmark named by the entry ``default`` of :data:`DEFAULT_GROUP`."""
    if "default" not in _DEFAULT:
        raise BenchmarkError(f"no default benchmark: the entry point group {DEFAULT_GROUP} "
                             "names none (reinstall the package: pip install -e .)")
    return _DEFAULT["default"]


def detect(data: str | Path | None) -> Benchmark:
    """The benchmark whose instances ``data`` holds (without data: :func:`default`)."""
    if data is None:
        return default()
    path = Path(data)
    found = [b for b in available() if b.claims(path)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise BenchmarkError(f"{path}: no benchmark reads this (known: "
                             f"{', '.join(b.name for b in available())}); name one with "
                             "--benchmark")
    raise BenchmarkError(f"{path}: several benchmarks read this "
                         f"({', '.join(b.name for b in found)}); name one with --benchmark")
