"""Power and interval coverage of a Director study design, simulated without the engine.

Each replicate is one whole study under the respondent model of :mod:`..sim.respondent`: for every
model, scene set, batch and condition the design asks, ``samples`` replies per scene are drawn
(vectorized, by role: report kind and choice role, not digits), scored with the semantics of
``measures.score``, and every comparison of the design is estimated with ``stats.compare`` as
``analyze`` does it (the answered replies its ``where``/``set`` keep and its measure applies to,
scenes as clusters), then Benjamini-Hochberg at the design's ``q`` within each family across
models and comparisons (margin comparisons and those without a family stay outside).

Scenes. ``scenes="resample"`` (the default) draws each replicate's scenes with replacement from
a pool of ``pool_size`` layouts of the set (``layout.make_set(set, pool_size,
design.scene_seed)``; the design's own scenes are its first ones), each drawn scene with fresh
logit offsets: scenes are i.i.d. from a population, which is what the estimators' intervals
assume. ``scenes="fixed"`` uses the design's own scenes in every replicate, with fresh offsets:
the power of the study as it will be run.

The true difference of a comparison is computed, not simulated: for each condition, the
population's share ``E[sum y*kept] / E[sum kept]`` over scenes (the pool, or the fixed scenes)
and their offsets, from the model's outcome probabilities with the offsets integrated out by
Gauss-Hermite (exact: every outcome probability is affine in each scene rate, see
:mod:`..sim.respondent`). Where every reply of a scene counts (all measures but ``ldv_other`` and
the ``report-excludes-hidden`` filter) this is the difference of mean shares that GEE targets
with balanced clusters; where a reply-level filter makes cluster sizes depend on the scene,
GEE with an exchangeable working correlation weights scenes differently and its target can
differ slightly (the coverage reported shows by how much).

Comparisons on coded reasoning traces (``study.TRACE_MEASURES``) are left out: the
simulation draws no traces.

Reported per comparison (and model): the true difference, the mean estimate, the power (share
of replicates declaring a change: the interval excludes zero and, in a family, it survives BH;
outside the families the interval alone), the share whose interval excludes zero, the coverage
of the 95% intervals (share containing the true difference, among the replicates that gave an
estimate) with its Monte Carlo standard error, the mean interval width, for margin comparisons
the share found within the margin, and the estimators used.

Effects on the command line: ``--effect knob=value`` (repeatable) overrides a knob of
:class:`..sim.respondent.DirectorKnobs` for every model, e.g. ``--effect uplift=0.3 --effect
scene_sd=0.5``; the ``dir_`` prefix of the sim backend's spelling is accepted too
(:func:`parse_effects`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from ..sim.respondent import (
    DirectorKnobs,
    Features,
    Plan,
    features,
    mean_rates,
    plan,
    role_probs,
    scene_rates,
)
from ..study.design import TRACE_MEASURES, Design
from ..study.design import Comparison as DesignComparison
from .stats import bh, compare

Scenes = Literal["resample", "fixed"]
METHODS = ("gee", "paired", "bound", "none")
DEFAULT_MODEL = "sim"
NO_ESTIMATE = 3  # method code: no estimate (too few scenes, no data, failed)


# --- knobs -------------------------------------------------------------------------------------


def _knob_name(name: str) -> str:
    name = name.strip()
    name = name.removeprefix("dir_")
    if name not in DirectorKnobs.model_fields:
        raise ValueError(f"unknown knob {name!r}; known: {', '.join(DirectorKnobs.model_fields)}")
    return name


def parse_effects(items: Iterable[str]) -> dict[str, float]:
    """``["uplift=0.3", "dir_scene_sd=0.5"]`` (the CLI's ``--effect knob=value``) → knob
    overrides; a clear ``ValueError`` for an unknown knob or a value that is not a number."""
    out: dict[str, float] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"an effect is knob=value, got {item!r}")
        try:
            out[_knob_name(name)] = float(value)
        except ValueError as exc:
            if "unknown knob" in str(exc):
                raise
            raise ValueError(f"effect {item!r}: {value!r} is not a number") from None
    return out


def make_knobs(knobs: DirectorKnobs | Mapping[str, Any] | None = None,
               effects: Mapping[str, float] | None = None) -> DirectorKnobs:
    """``knobs`` (default: the model's defaults) with ``effects`` overriding (validated)."""
    base = knobs.model_dump() if isinstance(knobs, DirectorKnobs) else dict(knobs or {})
    base = {_knob_name(k): v for k, v in base.items()}
    base.update({_knob_name(k): v for k, v in (effects or {}).items()})
    return DirectorKnobs(**base)


# --- scenes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScenePool:
    """Scene keys of one set (``largest_digit`` and ``digits`` added) and their features."""

    set: str
    ids: tuple[str, ...]
    keys: tuple[dict[str, Any], ...]
    feats: Features

    def __len__(self) -> int:
        return len(self.ids)


@lru_cache(maxsize=16)
def scene_pool(set_name: str, n: int, seed: int = 0) -> ScenePool:
    """The first ``n`` layouts of a set as drawn by ``layout.make_set`` (no rendering)."""
    from ..scenes.layout import make_set

    keys, ids = [], []
    for lay in make_set(set_name, n, seed):
        key = lay.key()
        key.pop("apparent_size_deg", None)
        key["digits"] = sorted(b.digit for b in lay.blocks)
        key["largest_digit"] = max(lay.blocks, key=lambda b: b.edge).digit
        keys.append(key)
        ids.append(lay.id)
    return ScenePool(set_name, tuple(ids), tuple(keys), features(keys, ids))


# --- measures by role ----------------------------------------------------------------------------


def _expand(feats: Features, extra: int) -> Features:
    idx = (Ellipsis, *([None] * extra))
    return Features(*(np.asarray(getattr(feats, f))[idx] for f in feats.__dataclass_fields__))


def role_measures(pl: Plan, feats: Features, report: np.ndarray, choice: np.ndarray,
                  count_ok: Any = True) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``measure -> (applies, value)`` for replies with report kind ``report`` (0 correct,
    1 adds the hidden block, 2 drops one) and choice role ``choice`` (0 own-view target, 1
    director-view, 2 largest-digit visible, 3 other visible), broadcast with ``feats``: the
    semantics of ``measures.score``. ``count_ok`` may be a probability (its expectation)."""
    own_hidden = feats.own_is_hidden
    hidden = (choice == 0) & own_hidden
    dv = (choice == 1) | ((choice == 0) & ~own_hidden)
    always = np.ones(np.broadcast_shapes(hidden.shape, np.shape(report)), dtype=bool)
    out = {"hidden": (always, hidden), "dv": (always, dv),
           "ldv": (feats.has_ldv & always, choice == 2),
           "ldv_other": (feats.has_ldv & ~dv, choice == 2)}
    if pl.report == "visible":
        out["accuracy"] = (always, report == 0)
        out["joint"] = (always, hidden & (report == 0))
    elif pl.report == "known":
        out["known"] = (always, report == 0)
    if pl.count:
        out["count"] = (always, np.broadcast_to(count_ok, always.shape))
    return out


def where_mask(where: str, pl: Plan, feats: Features, report: np.ndarray) -> np.ndarray:
    """Which replies a comparison's ``where`` keeps (the filters of ``analyze``)."""
    shape = np.broadcast_shapes(feats.hidden_top.shape, np.shape(report))
    if where == "all":
        return np.ones(shape, dtype=bool)
    if where == "hidden-top-digit":
        return np.broadcast_to(feats.hidden_top, shape)
    if where == "hidden-not-top-digit":
        return np.broadcast_to(~feats.hidden_top, shape)
    if where == "apparent-ok":
        return np.broadcast_to(~feats.apparent, shape)
    if where == "report-excludes-hidden":
        return np.broadcast_to(report != 1, shape) if pl.report else np.zeros(shape, dtype=bool)
    raise ValueError(f"unknown where {where!r}")


def expected_share(knobs: DirectorKnobs, condition: str, measure: str, where: str,
                   pool: ScenePool, idx: np.ndarray | None = None) -> tuple[float, float]:
    """(E[sum y*kept], E[sum kept]) per reply over the scenes ``idx`` of ``pool`` (all by
    default), offsets integrated out: the share is their ratio."""
    feats = pool.feats if idx is None else pool.feats.take(idx)
    pl = plan(condition)
    h, a = mean_rates(knobs, condition, feats)
    rp = role_probs(knobs, condition, feats, h, a)
    joint = rp.report[..., :, None] * rp.choice  # (G, 3, 4)
    fx = _expand(feats, 2)
    r = np.arange(3)[None, :, None]
    c = np.arange(4)[None, None, :]
    ms = role_measures(pl, fx, r, c, rp.count_ok)
    if measure not in ms:
        return 0.0, 0.0
    applies, value = ms[measure]
    kept = applies & where_mask(where, pl, fx, r)
    den = float((joint * kept).sum(axis=(1, 2)).mean()) * rp.answered
    num = float((joint * kept * value).sum(axis=(1, 2)).mean()) * rp.answered
    return num, den


# --- one simulated study -------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One comparison on one model."""

    index: int  # position in design.comparisons
    comparison: DesignComparison
    model: str
    sets: tuple[str, ...]
    group: str | None  # BH family; None outside the families (margin or no family)


@dataclass
class _Context:
    design: Design
    models: dict[str, DirectorKnobs]
    asked: dict[str, dict[str, list[str]]]  # model -> batch -> conditions
    cells: list[Cell]
    pools: dict[str, ScenePool]
    scenes: Scenes
    n_scenes: dict[str, int]
    exact: bool = False


def _draw(ctx: _Context, rng: np.random.Generator) -> dict[tuple, dict[str, Any]]:
    """Every (model, batch, set, condition) → its replies' measures, one study."""
    S = ctx.design.samples
    out: dict[tuple, dict[str, Any]] = {}
    for model, knobs in ctx.models.items():
        for set_name, pool in ctx.pools.items():
            batches = [b for b in ctx.design.batches
                       if set_name in b.sets and ctx.asked[model].get(b.name)]
            if not batches:
                continue
            G = ctx.n_scenes[set_name]
            idx = rng.integers(0, len(pool), size=G) if ctx.scenes == "resample" else np.arange(G)
            feats = pool.feats.take(idx)
            off = knobs.scene_sd * rng.standard_normal(G)
            acc_off = knobs.acc_scene_sd * rng.standard_normal(G)
            fx = _expand(feats, 1)
            for b in batches:
                for cond in ctx.asked[model][b.name]:
                    pl = plan(cond)
                    h, a = scene_rates(knobs, cond, feats, off, acc_off)
                    rp = role_probs(knobs, cond, feats, h, a)
                    answered = rng.random((G, S)) < rp.answered
                    cum = np.cumsum(rp.report, axis=-1)  # (G, 3)
                    report = (rng.random((G, S))[..., None] >= cum[:, None, :2]).sum(-1)
                    ch = rp.choice[np.arange(G)[:, None], report]  # (G, S, 4)
                    cumc = np.cumsum(ch, axis=-1)
                    choice = (rng.random((G, S))[..., None] >= cumc[..., :3]).sum(-1)
                    count_ok = rng.random((G, S)) < rp.count_ok
                    out[(model, b.name, set_name, cond)] = {
                        "pl": pl, "answered": answered, "report": report,
                        "measures": role_measures(pl, fx, report, choice, count_ok),
                        "feats": fx, "scene": np.broadcast_to(np.arange(G)[:, None], (G, S)),
                    }
    return out


def _estimate(cell: Cell, draws: dict[tuple, dict[str, Any]], exact: bool = False):
    c = cell.comparison
    ys, xs, ss = [], [], []
    for k, set_name in enumerate(cell.sets):
        for side, cond in ((0, c.base), (1, c.variant)):
            d = draws[(cell.model, c.batch, set_name, cond)]
            ms = d["measures"]
            if c.measure not in ms:
                return None
            applies, value = ms[c.measure]
            kept = d["answered"] & applies & where_mask(c.where, d["pl"], d["feats"], d["report"])
            ys.append(value[kept].astype(int))
            xs.append(np.full(int(kept.sum()), side))
            ss.append(d["scene"][kept] + k * 100_000)
    y, x, s = np.concatenate(ys), np.concatenate(xs), np.concatenate(ss)
    if not (np.any(x == 0) and np.any(x == 1)):
        return None
    try:
        return compare(y, x, s, fast=not exact)
    except (ValueError, RuntimeError):
        return None


_CTX: _Context | None = None


def _init(ctx: _Context) -> None:
    global _CTX
    _CTX = ctx


def _replicate(seed: np.random.SeedSequence, ctx: _Context | None = None) -> np.ndarray:
    """One study: per cell (diff, low, high, p, method code)."""
    ctx = ctx or _CTX
    assert ctx is not None
    rng = np.random.default_rng(seed)
    draws = _draw(ctx, rng)
    res = np.full((len(ctx.cells), 5), np.nan)
    for i, cell in enumerate(ctx.cells):
        r = _estimate(cell, draws, ctx.exact)
        if r is None:
            res[i, 4] = NO_ESTIMATE
        else:
            res[i] = (r.diff, r.low, r.high, r.p, METHODS.index(r.method))
    return res


# --- the simulation ------------------------------------------------------------------------------


@dataclass
class PowerResult:
    design: Design
    models: dict[str, DirectorKnobs]
    cells: list[Cell]
    truth: np.ndarray  # (cells, 3): true base share, variant share, difference
    runs: np.ndarray  # (reps, cells, 5): diff, low, high, p, method code
    adjusted: np.ndarray  # (reps, cells): BH-adjusted p within the family (NaN outside)
    reps: int
    seed: int
    scenes: Scenes
    n_scenes: dict[str, int]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _models(knobs: DirectorKnobs | Mapping[str, Any] | None, effects: Mapping[str, float] | None,
            models: Mapping[str, Any] | Sequence[str] | None) -> dict[str, DirectorKnobs]:
    base = make_knobs(knobs, effects)
    if models is None:
        return {DEFAULT_MODEL: base}
    if isinstance(models, Mapping):
        out = {}
        for name, m in models.items():
            over = m.model_dump() if isinstance(m, DirectorKnobs) else dict(m or {})
            out[name] = make_knobs({**base.model_dump(), **over}, effects)
        return out
    return {name: base for name in models}


def _context(design: Design, models: dict[str, DirectorKnobs], named: bool, scenes: Scenes,
             pool_size: int | None) -> _Context:
    asked: dict[str, dict[str, list[str]]] = {}
    for m in models:
        asked[m] = {b.name: (b.conditions_for(m) if named else list(b.conditions))
                    for b in design.batches}
    cells = []
    for i, c in enumerate(design.comparisons):
        if c.measure in TRACE_MEASURES:  # reasoning traces are not simulated here
            continue
        batch = design.batch(c.batch)
        group = None if c.margin else c.family
        for m in models:
            if named and not c.asks(m):
                continue
            conds = asked[m][c.batch]
            if c.base not in conds or c.variant not in conds:
                continue
            sets = (c.set,) if c.set else tuple(batch.sets)
            cells.append(Cell(i, c, m, sets, group))
    used = sorted({s for cell in cells for s in cell.sets})
    n_scenes = {s: design.set_size(s) for s in used}
    pools = {}
    for s in used:
        size = n_scenes[s] if scenes == "fixed" else max(pool_size or 4 * n_scenes[s], n_scenes[s])
        if s == "rotated":
            size = -(-size // 3) * 3
        pools[s] = scene_pool(s, size, design.scene_seed)
    return _Context(design, models, asked, cells, pools, scenes, n_scenes)


def true_difference(ctx: _Context, cell: Cell) -> tuple[float, float, float]:
    """(base share, variant share, variant - base) of ``cell`` in the scene population: per
    condition the population's share ``E[sum y*kept] / E[sum kept]`` (:func:`expected_share`),
    the sets of a comparison that pools several weighted by their numbers of scenes."""
    knobs, c = ctx.models[cell.model], cell.comparison
    shares = []
    for cond in (c.base, c.variant):
        num = den = 0.0
        for s in cell.sets:
            n, d = expected_share(knobs, cond, c.measure, c.where, ctx.pools[s])
            num += ctx.n_scenes[s] * n
            den += ctx.n_scenes[s] * d
        shares.append(num / den if den > 0 else math.nan)
    return shares[0], shares[1], shares[1] - shares[0]


def simulate(design: Design, knobs: DirectorKnobs | Mapping[str, Any] | None = None,
             effects: Mapping[str, float] | None = None, reps: int = 200, seed: int = 0,
             models: Mapping[str, Any] | Sequence[str] | None = None, *,
             scenes: Scenes = "resample", pool_size: int | None = None,
             workers: int = 1, exact: bool = False) -> PowerResult:
    """``reps`` simulated studies of ``design`` (module docstring).

    ``knobs``: the respondent (a :class:`DirectorKnobs` or a dict of knobs; default the
    model's defaults); ``effects``: knob overrides for every model (``{"uplift": 0.3}``).
    ``models``: ``None`` simulates one model, ``"sim"``, that answers every batch and
    comparison; a list of names (the design's models) or a mapping name → knob overrides
    simulates those models, each asked what the design asks it. ``pool_size``: layouts per set
    to resample from (default 4 × the set's size). ``workers`` > 1 runs replicates in that many
    processes; the result does not depend on it. ``exact`` fits every comparison with
    statsmodels' GEE (~40 ms a fit) instead of the fit from per-scene counts
    (``stats.compare(..., fast=True)``: the same numbers to ~1e-9, ~100 times faster). Deterministic given ``seed``."""
    if reps < 1:
        raise ValueError("reps must be at least 1")
    t0 = time.perf_counter()
    named = models is not None
    mods = _models(knobs, effects, models)
    ctx = _context(design, mods, named, scenes, pool_size)
    ctx.exact = exact
    truth = np.array([true_difference(ctx, cell) for cell in ctx.cells]).reshape(-1, 3)
    seeds = np.random.SeedSequence(seed).spawn(reps)
    if workers > 1 and reps > 1:
        with ProcessPoolExecutor(max_workers=workers, initializer=_init, initargs=(ctx,)) as ex:
            runs = list(ex.map(_replicate, seeds, chunksize=max(1, reps // (4 * workers))))
    else:
        runs = [_replicate(s, ctx) for s in seeds]
    arr = np.stack(runs) if runs else np.zeros((0, len(ctx.cells), 5))
    adjusted = np.full(arr.shape[:2], np.nan)
    fams: dict[str, list[int]] = defaultdict(list)
    for i, cell in enumerate(ctx.cells):
        if cell.group is not None:
            fams[cell.group].append(i)
    for idx in fams.values():
        for r in range(arr.shape[0]):
            ok = [i for i in idx if arr[r, i, 4] != NO_ESTIMATE]
            if ok:
                _, adj = bh(arr[r, ok, 3], design.q)
                adjusted[r, ok] = adj
    notes = []
    if not ctx.cells:
        notes.append("no comparison of the design is asked of the simulated models")
    return PowerResult(design, mods, ctx.cells, truth, arr, adjusted, reps, seed, scenes,
                       ctx.n_scenes, time.perf_counter() - t0, notes)
