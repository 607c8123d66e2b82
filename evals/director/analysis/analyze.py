"""Analysing a Director study: rates per condition, the design's comparisons, BH marks.

``analyze(rows, design)`` reads the rows of :func:`.rows.rows` and gives

* **rates**, per (model, batch, set, condition): replies, answered replies, the answer rate,
  and for each measure the share among the answered replies it applies to, with a 95%
  percentile interval over scene resamples (:func:`stats.share_interval`, seeded);
* **changes**, every comparison of the design on every model: variant minus base in the
  comparison's measure, over the answered replies of the two conditions that its ``where``
  and ``set`` keep, by :func:`stats.compare` (GEE with the scene as the cluster, or the
  paired or bound estimator);
* **marks** (paper, §3 "Analysis" and Appendix C "The corrections"): Benjamini-Hochberg at
  the design's ``q`` within each family, across models and comparisons; ``*`` an increase or a
  decrease (the interval excludes zero and the comparison survives the correction), ``†`` the
  interval excludes zero but the comparison fails the correction;
* **margin tests** (Appendix C "The margin"): a ``margin = true`` comparison gets the verdict
  whether its interval lies within ±``design.margin``. Such comparisons are outside the
  families (even if one is named) and are never marked; a comparison with no family and no
  margin is reported but neither corrected nor marked.

Rates and differences are rounded to four places, an exact half away from zero; rendered
percentages and points round them further to one decimal, and an interval end of a change that
rounds to zero at one decimal is given to two places (the rule of the paper's Table 2).

A comparison a model has no replies for, in either of its conditions (the design does not ask
it, or the run has none), is ``"not asked"``; other statuses say why no change was estimated:
``"no answers"`` (a condition has replies but none answered), ``"no data"`` (answered replies,
but none that the comparison's ``where``/``set`` keep and its measure applies to),
``"too few scenes"`` (the estimator needs more clusters) and ``"failed"``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ....engine.errors import UnseenError
from ..study.design import TRACE_MEASURES, Design, DesignError, load_design
from ..study.design import Comparison as DesignComparison
from ..study.study_file import STUDY_FILE, read_study, run_model_names
from . import stats
from .rows import ABSENT, Rows, read_rows
from .stats import bh, compare, equivalent, mark, round_half_away, share_interval

#: The measures rated per condition, in table order.
MEASURES = ("hidden", "dv", "accuracy", "joint", "ldv", "ldv_other", "count", "known",
            "hidden_listed", "hidden_left_out",
            "own_view", "dv_reading", "digit_reading", "prior_reading", "works_out",
            "hidden_unseen")
#: Column headings of the measures (short: a rates table has up to eight of them).
MEASURE_NAMES = {
    "hidden": "hidden", "dv": "DV", "accuracy": "vis. acc.", "joint": "joint", "ldv": "LDV",
    "ldv_other": "LDV of non-DV", "count": "count", "known": "known",
    "hidden_listed": "hidden, listed", "hidden_left_out": "hidden if left out",
    "own_view": "own-view rdg", "dv_reading": "DV rdg", "digit_reading": "digit rdg",
    "prior_reading": "prior rdg", "works_out": "works out", "hidden_unseen": "hidden, unseen",
}
#: What each measure is, for legends.
MEASURE_DESCRIPTIONS = {
    "hidden": "hidden-block choices", "dv": "director-view block choices",
    "accuracy": "correct visibility reports",
    "joint": "hidden-block choices beside a correct visibility report",
    "ldv": "largest-digit visible block choices, in scenes where it is not the director-view "
           "block",
    "ldv_other": "the same among choices other than the director-view block",
    "count": "correct block counts", "known": "correct knowledge reports",
    "hidden_listed": "hidden-block choices whose report lists the hidden block",
    "hidden_left_out": "hidden-block choices among the replies whose report leaves it out",
    "own_view": "coded traces with the own-view reading of \"the largest block\"",
    "dv_reading": "coded traces with the director-view reading",
    "digit_reading": "coded traces with the largest-digit reading",
    "prior_reading": "coded traces with the prior-knowledge reading",
    "works_out": "coded traces that work out which blocks the director sees",
    "hidden_unseen": "hidden-block choices whose trace takes the director not to see the block",
}
PLACES = 4  # rates and differences are rounded to four places
N_BOOT = 2000
NOT_ASKED = "not asked"
OK = "ok"
MARGIN_GROUP = "margin"  # the group of margin comparisons
NO_FAMILY = "uncorrected"  # the group of comparisons with no family and no margin

#: A comparison's ``where``: the stratum a reply's measure must equal, or None for all.
_WHERE: dict[str, tuple[str, int] | None] = {
    "all": None,
    "hidden-top-digit": ("hidden_top_digit", 1),
    "hidden-not-top-digit": ("hidden_top_digit", 0),
    "report-excludes-hidden": ("report_excludes_hidden", 1),
    "apparent-ok": ("apparent_flag", 0),
}


class AnalysisError(UnseenError, ValueError):
    """A run that cannot be analysed: no replies, no design."""


@dataclass(frozen=True)
class Share:
    """A share among the ``n`` answered replies a measure applies to, with its interval."""

    n: int
    share: float
    low: float
    high: float


@dataclass(frozen=True)
class Rate:
    """One (model, batch, set, condition): replies, answered replies and each measure's share."""

    model: str
    batch: str
    set: str
    condition: str
    n: int
    answered: int
    answer_rate: float
    shares: dict[str, Share] = field(default_factory=dict)  # measures that apply to a reply


@dataclass(frozen=True)
class Change:
    """One comparison on one model. The numbers are rounded to four places; ``raw`` keeps the
    estimator's own result (None unless ``status == "ok"``)."""

    index: int  # position of the comparison in design.comparisons
    comparison: DesignComparison
    model: str
    status: str = OK
    note: str = ""
    raw: stats.Comparison | None = None
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    share0: float | None = None  # base
    share1: float | None = None  # variant
    p: float | None = None
    p_adjusted: float | None = None  # BH within the family; None outside the families
    method: str | None = None
    n: int | None = None
    G: int | None = None
    mark: str = ""
    equivalent: bool | None = None  # margin comparisons only

    @property
    def group(self) -> str:
        return group_of(self.comparison)

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass
class Analysis:
    design: Design
    models: list[str]
    rates: list[Rate]
    changes: list[Change]
    n_replies: int
    n_boot: int = N_BOOT
    seed: int = 0
    simulated: list[str] = field(default_factory=list)  # models a simulator answered for
    dropped_apparent: bool = False  # the apparent-size scenes were left out
    humans: frozenset[str] = frozenset()  # models answered by people (``human`` backends)
    # replies that stopped at a length limit (the paper checks that none did)
    length_stops: int = 0
    # per model: how its images were sent, and the parameters its provider rejected
    serving: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    # per model a real model answered for: replies and US dollars (``costs.model_costs``)
    costs: list[dict[str, Any]] = field(default_factory=list)

    def label(self, model: str) -> str:
        """A model's name as every output shows it: ``(human)`` after a person's,
        ``(sim)`` after a simulated one."""
        if model in self.humans:
            return f"{model} (human)"
        return f"{model} (sim)" if model in self.simulated else model

    def family_sizes(self) -> dict[str, tuple[int, int]]:
        """Each BH family: (comparisons estimated, comparisons the design asks of the run's
        models; :meth:`Design.family_sizes`)."""
        asked = self.design.family_sizes(self.models)
        done: dict[str, int] = {}
        for c in self.changes:
            if c.ok and c.group not in (MARGIN_GROUP, NO_FAMILY):
                done[c.group] = done.get(c.group, 0) + 1
        return {g: (done.get(g, 0), asked.get(g, 0)) for g in dict.fromkeys([*asked, *done])}

    @property
    def q(self) -> float:
        return self.design.q

    @property
    def margin(self) -> float:
        return self.design.margin

    def groups(self) -> list[tuple[str, list[Change]]]:
        """The changes by group: the families in design order, then the margin tests, then the
        comparisons outside both; within a group by comparison, then model."""
        out: dict[str, list[Change]] = {}
        for c in self.changes:
            out.setdefault(c.group, []).append(c)
        order = [g for g in out if g not in (MARGIN_GROUP, NO_FAMILY)]
        order += [g for g in (MARGIN_GROUP, NO_FAMILY) if g in out]
        return [(g, out[g]) for g in order]

    def rate(self, model: str, batch: str, set_: str, condition: str) -> Rate | None:
        for r in self.rates:
            if (r.model, r.batch, r.set, r.condition) == (model, batch, set_, condition):
                return r
        return None


def group_of(c: DesignComparison) -> str:
    """The BH family of a comparison, or ``margin`` / ``uncorrected`` for those outside."""
    if c.margin:
        return MARGIN_GROUP
    return c.family if c.family is not None else NO_FAMILY


def _r(x: float) -> float:
    return round_half_away(float(x), PLACES)


# --- analysis ---------------------------------------------------------------------------------


def analyze(rows: Iterable[dict[str, Any]] | Rows, design: Design, *, n_boot: int = N_BOOT,
            seed: int = 0) -> Analysis:
    """Rates, changes and marks of a study's rows (see the module docstring): dict rows as
    :func:`.rows.rows` gives them, or the columns of :func:`.rows.read_rows`.

    ``seed`` seeds every share interval (``n_boot`` scene resamples). Raises
    :class:`AnalysisError` when there are no rows."""
    table = rows if isinstance(rows, Rows) else Rows.of(rows)
    if not len(table):
        raise AnalysisError("no replies to analyse: the run has no Director trajectories yet")
    cols = table.cols
    models = sorted(set(cols["model"]))
    backends: dict[str, set[str]] = defaultdict(set)
    for model, backend in set(zip(cols["model"], cols["backend"], strict=True)):
        if backend:
            backends[model].add(backend)
    rates = _rates(table, design, n_boot, seed)
    changes = _changes(table, design, models, backends)
    simulated = sorted({m for m, sim in zip(cols["model"], cols["simulated"], strict=True)
                        if sim})
    humans = frozenset(m for m, specs in backends.items()
                       if specs and all(s.startswith("human") for s in specs))
    return Analysis(design=design, models=models, rates=rates, changes=changes,
                    n_replies=len(table), n_boot=n_boot, seed=seed, simulated=simulated,
                    humans=humans,
                    length_stops=sum(int(v or 0) for v in cols["length_stops"]))


def _order(design: Design) -> Callable[[tuple[str, str, str, str]], tuple]:
    batches = {b.name: i for i, b in enumerate(design.batches)}
    conds = {b.name: {c: i for i, c in enumerate(b.conditions)} for b in design.batches}
    sets = {b.name: {s: i for i, s in enumerate(b.sets)} for b in design.batches}
    big = 10**6

    def key(k: tuple[str, str, str, str]) -> tuple:
        model, batch, set_, cond = k
        return (batches.get(batch, big), batch, model, sets.get(batch, {}).get(set_, big), set_,
                conds.get(batch, {}).get(cond, big), cond)

    return key


def _rates(table: Rows, design: Design, n_boot: int, seed: int) -> list[Rate]:
    cols = table.cols
    groups: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(cols["model"], cols["batch"], cols["set"], cols["condition"],
                                strict=True)):
        groups[key].append(i)
    answered, scene = cols["answered"], cols["scene"]
    out = []
    for key in sorted(groups, key=_order(design)):
        g = groups[key]
        yes = [i for i in g if answered[i]]
        shares = {}
        for m in MEASURES:
            col = table.measures.get(m)
            kept = [i for i in yes if col[i] is not ABSENT] if col is not None else []
            if not kept:
                continue
            share, low, high = share_interval([col[i] for i in kept],  # type: ignore[index]
                                              [scene[i] for i in kept], n_boot=n_boot,
                                              seed=seed)
            shares[m] = Share(n=len(kept), share=_r(share), low=_r(low), high=_r(high))
        out.append(Rate(*key, n=len(g), answered=len(yes),
                        answer_rate=_r(len(yes) / len(g)), shares=shares))
    return out


class Index(dict[tuple[str, str, str], list[int]]):
    """The rows of each (model, batch, condition), as indices into ``table``."""

    def __init__(self, table: Rows):
        super().__init__()
        self.table = table


def _asks(who: Any, model: str, backends: set[str]) -> bool:
    return who.asks(model) or any(who.asks(b) for b in backends)


def _one_change(i: int, c: DesignComparison, model: str, index: Index, design: Design,
                backends: set[str]) -> Change:
    batch = design.batch(c.batch)
    if not (_asks(batch, model, backends) and _asks(c, model, backends)):
        return Change(i, c, model, NOT_ASKED, "the design does not ask this model")
    table = index.table
    cols = table.cols
    sets, answered, condition = cols["set"], cols["answered"], cols["condition"]
    by_cond = {cond: [k for k in index.get((model, c.batch, cond), ())
                      if c.set is None or sets[k] == c.set] for cond in (c.base, c.variant)}
    mine = by_cond[c.base] + by_cond[c.variant]
    missing = [cond for cond, ks in by_cond.items() if not ks]
    if missing:
        return Change(i, c, model, NOT_ASKED, f"no replies under {', '.join(missing)}")
    unanswered = [cond for cond, ks in by_cond.items() if not any(answered[k] for k in ks)]
    if unanswered:
        return Change(i, c, model, "no answers", f"no answered reply under {', '.join(unanswered)}")
    col = table.measures.get(c.measure)
    if c.measure in TRACE_MEASURES and (col is None or all(col[k] is ABSENT for k in mine)):
        return Change(i, c, model, "not coded", "no coded reasoning traces: run `unseen "
                      "director code RUN --coder SPEC` (only models that return traces)")
    where = _WHERE[c.where]
    stratum = table.measures.get(where[0]) if where is not None else None
    kept = [] if col is None else [
        k for k in mine if answered[k] and col[k] is not ABSENT
        and (where is None or (stratum is not None and stratum[k] == where[1]))]
    empty = [cond for cond in (c.base, c.variant) if not any(condition[k] == cond for k in kept)]
    if empty:
        return Change(i, c, model, "no data",
                      f"no answered reply under {', '.join(empty)} that {c.where!r} keeps and "
                      f"{c.measure!r} applies to")
    assert col is not None  # kept holds rows
    y = [col[k] for k in kept]
    x = [int(condition[k] == c.variant) for k in kept]
    scene = [cols["scene"][k] for k in kept]
    try:
        res = compare(y, x, scene)
    except ValueError as exc:  # fewer scenes than the estimator needs
        return Change(i, c, model, "too few scenes" if "scenes" in str(exc) else "failed",
                      str(exc))
    except RuntimeError as exc:
        return Change(i, c, model, "failed", str(exc))
    return Change(i, c, model, raw=res, diff=_r(res.diff), low=_r(res.low), high=_r(res.high),
                  share0=_r(res.share0), share1=_r(res.share1), p=float(res.p), method=res.method,
                  n=res.n, G=res.G,
                  equivalent=equivalent(res, design.margin) if c.margin else None)


def _changes(table: Rows, design: Design, models: list[str],
             backends: dict[str, set[str]]) -> list[Change]:
    index = Index(table)
    cols = table.cols
    for k, key in enumerate(zip(cols["model"], cols["batch"], cols["condition"], strict=True)):
        index.setdefault(key, []).append(k)
    changes = [_one_change(i, c, m, index, design, backends[m])
               for i, c in enumerate(design.comparisons) for m in models]
    fams: dict[str, list[int]] = defaultdict(list)
    for k, ch in enumerate(changes):
        if ch.ok and group_of(ch.comparison) not in (MARGIN_GROUP, NO_FAMILY):
            fams[str(ch.comparison.family)].append(k)  # a family: group_of said so
    for idx in fams.values():
        _, adjusted = bh([cast(float, changes[k].p) for k in idx], design.q)  # ok: has a p
        for k, adj in zip(idx, adjusted, strict=True):
            ch = changes[k]
            assert ch.raw is not None  # an estimated change keeps its comparison
            changes[k] = replace(ch, p_adjusted=float(adj), mark=mark(ch.raw, float(adj), design.q))
    return changes


# --- loading a run ----------------------------------------------------------------------------


def load_run(run_dir: str | Path, design: Design | str | Path | None = None
             ) -> tuple[Rows, Design]:
    """The rows of a run directory (one pass over its journal) and its design: ``design`` (a
    Design, a TOML file or a shipped design's name) or else the one stored in
    ``study.json``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: no such run directory")
    if design is None:
        path = run_dir / STUDY_FILE
        if not path.is_file():
            raise AnalysisError(f"{run_dir}: no {STUDY_FILE} (not a Director study run?); "
                                "name the design with --design")
        try:
            design = Design.model_validate(read_study(path)["design"])
        except (ValueError, KeyError) as exc:
            raise AnalysisError(f"{path}: no readable design ({exc}); name one with --design") from None
    elif not isinstance(design, Design):
        try:
            design = load_design(design)
        except DesignError as exc:
            raise AnalysisError(str(exc)) from None
    rows = read_rows(run_dir)
    if not len(rows):
        raise AnalysisError(f"{run_dir}: no replies to analyse (no Director trajectories in "
                            "trajectories.jsonl yet)")
    return rows, design


def analyze_run(run_dir: str | Path, design: Design | str | Path | None = None, *,
                n_boot: int = N_BOOT, seed: int = 0, drop_apparent: bool = False,
                prices: Callable[[str], Any] | None = None,
                loaded: tuple[Rows, Design] | None = None) -> Analysis:
    """:func:`analyze` on a run directory (see :func:`load_run`; ``loaded``: what it gave, for
    a second analysis without a second pass over the journal). ``drop_apparent`` leaves out
    the scenes where another visible block looks larger from the director's eye than the
    director-view block (the appendix's "Apparent size" recomputation). With ``prices``
    (``model -> Price | None``) each real model's replies get their cost in US dollars."""
    rows, d = loaded or load_run(run_dir, design)
    if drop_apparent:
        flag = rows.measures.get("apparent_flag")
        if flag is not None:
            rows = rows.take(i for i, v in enumerate(flag) if v is ABSENT or not v)
        if not len(rows):
            raise AnalysisError("every scene of the run has the apparent-size flag")
    from .costs import model_costs

    serving, dropped, batched = _serving(Path(run_dir))
    return replace(analyze(rows, d, n_boot=n_boot, seed=seed), dropped_apparent=drop_apparent,
                   serving=serving, dropped=dropped,
                   costs=model_costs(rows.cost_rows(), prices, batched))


def _serving(run_dir: Path) -> tuple[dict[str, str], dict[str, list[str]], frozenset[str]]:
    """Each design model's image settings and rejected parameters, and the backends that
    went through a batch API, from run.json."""
    from ....engine.errors import UnseenError
    from ....engine.rundir import RunDir, run_serving

    try:
        config = RunDir(run_dir).config
    except UnseenError:
        return {}, {}, frozenset()
    serving, dropped = run_serving(config, run_model_names(run_dir))
    from ...costs import batched_specs

    return serving, dropped, batched_specs(config.backends if config is not None else [])
