"""Dry runs: a run's plan without a call to a provider (``unseen run --dry-run``,
``unseen director run --dry-run``, ``dry_run=True`` in ``unseen.api.run_async`` and
``unseen.run_study_async``).

The run is checked as a real one is (strategies, backends, pairings, the price file), then
its real plan runs into a temporary run directory, deleted afterwards, against a stand-in
for each backend (``backends.standin``): the benchmark's plan, the real strategies' graphs
and request builders, answered by a simulated respondent (``sim:oracle``, or the
benchmark's ``dry_run_respondent``), every request counted by the real provider's token
rules (``backends.tokens``). So calls are counted by running the strategies against the
simulator, and early stops (SPoE's tau, unsure, min_area; a Director turn whose reply cannot
be read) are the simulator's: estimates. Nothing is written to the run directory (no
run.json, no journal, no lock) and no backend is asked anything, not even what a vLLM
server serves (GET /v1/models). With ``out`` naming an earlier run directory, what it
finished is left out of the plan, as a resume would skip it. The reply cache is not read:
a real run would get its cached replies for nothing.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, computed_field

from .backends import prices as price_table
from .backends.standin import StandIn, stand_in
from .backends.tokens import (
    CHARS_PER_TOKEN,
    DEFAULT_EFFORT,
    OUTPUT_ASSUMPTIONS,
    PER_MESSAGE,
    PER_REQUEST,
    REASONING_ASSUMPTIONS,
)
from .engine.journal import JOURNAL, finished_keys, iter_records
from .engine.rundir import kind_of
from .engine.runner import Runner
from .engine.subset import apply as apply_subset
from .engine.types import Usage

#: who answers a dry run's requests unless the benchmark names its own respondent
DEFAULT_RESPONDENT = "sim:oracle"
NOTE = ("calls are counted by running the strategies against the simulator ({respondent}), "
        "so early stops are estimates; tokens by each provider's published rules, output "
        "by the assumptions below; the reply cache is not consulted")


class BackendEstimate(BaseModel):
    """One backend's part of the plan."""

    spec: str
    model: str
    kind: str  # model, sim, rule or human (the last three cost nothing)
    trajectories: int
    # trajectories the simulator left unanswered: their later calls, if any, are not counted
    unanswered: int = 0
    calls: int
    input_text_tokens: int = 0
    input_image_tokens: int = 0
    output_tokens: int = 0  # reasoning included, as billed
    reasoning_tokens: int = 0
    calls_by_kind: dict[str, int] = {}
    image_rule: str | None = None
    fallback: bool = False  # the image rule is the stated fallback: the model's is unknown
    price: str | None = None  # the price entry used (pattern, rates, date), None: no price
    cost_usd: float | None = None  # None: no price
    batch_cost_usd: float | None = None
    batch_discount: float | None = None

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def input_tokens(self) -> int:
        """Text and image input tokens together, as billed."""
        return self.input_text_tokens + self.input_image_tokens


class DryRunEstimate(BaseModel):
    """A dry run's plan: per backend, trajectories, calls, tokens and cost; the assumptions."""

    dry_run: bool = True
    benchmark: str
    run_dir: str | None = None  # the directory the real run would write (nothing written)
    respondent: str
    trajectories: int
    skipped: int = 0  # already finished in ``run_dir``: a resume skips them
    backends: list[BackendEstimate]
    cost_usd: float = 0.0  # of the backends with a price (``no_price`` lists the others)
    batch_cost_usd: float = 0.0
    no_price: list[str] = []  # models without a price: their cost is unknown, never 0
    note: str
    assumptions: dict[str, Any]


def assumptions() -> dict[str, Any]:
    """The stated rules and assumptions behind every estimate (``backends.tokens``)."""
    return {
        "text": f"ceil(characters / {CHARS_PER_TOKEN}) per text part, +{PER_MESSAGE} per "
                f"message, +{PER_REQUEST} per request",
        "output_tokens": {k: {"tokens": n, "reply": what}
                          for k, (n, what) in OUTPUT_ASSUMPTIONS.items()},
        "reasoning_tokens": {**REASONING_ASSUMPTIONS, "unset": f"as {DEFAULT_EFFORT}"},
        "reasoning_applies_to": "models whose profile thinks (profiles.toml `thinking`)",
        "cached_input_tokens": 0,
    }


def respondent_of(bench: Any) -> str:
    """The simulated respondent of a benchmark's dry runs (an optional member)."""
    return getattr(bench, "dry_run_respondent", None) or DEFAULT_RESPONDENT


async def estimate(bench: Any, request: Any, strategies: list, clients: list,
                   out: str | Path | None) -> DryRunEstimate:
    """The plan of a run that has passed every check a real run passes (see the module
    docstring): run it against stand-ins in a temporary directory and add it up."""
    respondent = respondent_of(bench)
    standins = [stand_in(c, respondent) for c in clients]
    done = _done(out)
    try:
        with tempfile.TemporaryDirectory(prefix="unseen-dry-run-") as tmp:
            run_dir = Path(tmp) / (Path(out).name if out else "dry-run")
            run_dir.mkdir()
            request.options["dry_run"] = True  # a benchmark writes nothing outside run_dir
            plan = bench.plan(request, strategies, standins, run_dir)
            apply_subset(plan, request.subset)
            runner = _Runner.from_plan(plan, [*standins], run_dir, progress=False)
            runner.finished = done
            result = await runner.run()
            per_backend: Counter[str] = Counter()
            unanswered: Counter[str] = Counter()
            for r in iter_records(run_dir / JOURNAL):  # streamed: a study's journal is long
                per_backend[r["backend"]] += 1
                unanswered[r["backend"]] += r.get("status") != "answered"
    finally:
        for s in standins:
            await s.aclose()
    rows = [_row(s, per_backend[s.spec], unanswered[s.spec]) for s in standins]
    return DryRunEstimate(
        benchmark=bench.name, run_dir=str(out) if out else None, respondent=respondent,
        trajectories=result.total - result.skipped, skipped=result.skipped, backends=rows,
        cost_usd=sum(r.cost_usd or 0.0 for r in rows),
        batch_cost_usd=sum(r.batch_cost_usd or 0.0 for r in rows),
        no_price=list(dict.fromkeys(r.model for r in rows if r.cost_usd is None)),
        note=NOTE.format(respondent=respondent), assumptions=assumptions())


class _Runner(Runner):
    """The runner, skipping what the real run directory finished as a resume would."""

    finished: set[str] = set()

    def _finished(self, journal: Path) -> set[str]:
        return super()._finished(journal) | self.finished


def _done(out: str | Path | None) -> set[str]:
    journal = Path(out) / JOURNAL if out else None
    return finished_keys(journal) if journal is not None and journal.is_file() else set()


def _row(s: StandIn, trajectories: int, unanswered: int) -> BackendEstimate:
    kind = kind_of(s.spec, s.real.simulated)
    t = s.tally
    row = BackendEstimate(spec=s.spec, model=s.model, kind=kind, trajectories=trajectories,
                          unanswered=unanswered, calls=t.calls, input_text_tokens=t.text, input_image_tokens=t.image,
                          output_tokens=t.output + t.reasoning, reasoning_tokens=t.reasoning,
                          calls_by_kind=dict(sorted(t.kinds.items())))
    if kind != "model":  # the simulator, rules and people cost nothing
        return row.model_copy(update={"cost_usd": 0.0, "batch_cost_usd": 0.0})
    assert s.rules is not None
    row = row.model_copy(update={"image_rule": s.rules.name, "fallback": s.rules.fallback})
    price = price_table.price_for(s.model)
    if price is None:
        return row
    usage = Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                  reasoning_tokens=row.reasoning_tokens)
    return row.model_copy(update={
        "price": f"{price.rates()} per 1M tokens in/cached/out, batch "
                 f"-{100 * price.batch_discount:g}% ({price.describe()})",
        "cost_usd": price.cost(usage), "batch_cost_usd": price.cost(usage, batch=True),
        "batch_discount": price.batch_discount})
