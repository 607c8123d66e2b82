"""A Director Task study design: scene sets, samples per scene, seed, batches, comparisons.

Written in TOML (see ``designs/paper.toml`` and ``designs/quick.toml``)::

    name = "quick"
    samples = 5            # replies per scene and condition
    seed = 1               # the order of the calls of each batch, per model
    [sets.main]            # scene sets the batches use: n scenes of `unseen data director`
    n = 20
    [[batch]]
    name = "vis"
    sets = ["main"]
    models = ["*"]         # every --backend; or model names / --backend NAME=SPEC aliases
    conditions = ["move", "move/novis", "mean"]
    [[comparison]]
    batch = "vis"
    base = "move/novis"    # the change is variant minus base
    variant = "move"
    measure = "hidden"
    family = "s4"          # Benjamini-Hochberg family; omit for margin-only tests

``size`` is the scenes' WIDTHxHEIGHT in pixels, each side :data:`MIN_SIDE` to :data:`MAX_SIDE`
(a 60000x60000 scene would ask 13 GiB of memory); one invocation plans at most
:data:`MAX_CALLS` calls (every model's; split a larger study into designs).

A batch's calls run in one seeded random order per model (§3 "Batches"), so the conditions
compared are sampled together; comparisons only ever set conditions of one batch against
each other.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ....engine.errors import UnseenError
from ....engine.userfiles import first_problem, read_text
from ..scenes.sets import DEFAULT_N, SETS
from ..task.prompts import PromptError, parse_condition

#: What a comparison measures, per answered reply (see ``measures``).
Measure = Literal["hidden", "dv", "accuracy", "joint", "ldv", "ldv_other", "count", "known",
                  # from coded reasoning traces (``unseen director code``)
                  "own_view", "dv_reading", "digit_reading", "prior_reading", "works_out",
                  "hidden_unseen"]
#: Measures that exist only where the reasoning traces have been coded.
TRACE_MEASURES = frozenset({"own_view", "dv_reading", "digit_reading", "prior_reading",
                            "works_out", "hidden_unseen"})
#: Which replies a comparison keeps.
Where = Literal["all", "hidden-top-digit", "hidden-not-top-digit", "report-excludes-hidden",
                "apparent-ok"]
#: The designs shipped with unseen, by name.
BUILTIN = ("paper", "quick")


class DesignError(UnseenError, ValueError):
    """A design file that cannot be read or does not hold together."""


class SetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int | None = Field(default=None, ge=1)


class Batch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sets: list[str] = ["main"]
    models: list[str] = ["*"]
    conditions: list[str]
    only: dict[str, list[str]] = {}  # condition -> the only models of the batch that answer it
    note: str = ""

    def asks(self, model: str) -> bool:
        return "*" in self.models or model in self.models

    def conditions_for(self, model: str) -> list[str]:
        """The conditions ``model`` answers in this batch (none when the batch skips it)."""
        if not self.asks(model):
            return []
        return [c for c in self.conditions if c not in self.only or model in self.only[c]]


class Comparison(BaseModel):
    """``variant`` minus ``base`` in ``measure`` over the replies ``where`` keeps."""

    model_config = ConfigDict(extra="forbid")
    batch: str
    base: str
    variant: str
    measure: Measure = "hidden"
    where: Where = "all"
    set: str | None = None  # one scene set of a batch that asks several
    models: list[str] = ["*"]
    family: str | None = None  # None: outside the BH families (margin tests)
    margin: bool = False  # also test equivalence against the design's margin
    label: str = ""

    def asks(self, model: str) -> bool:
        return "*" in self.models or model in self.models

    @property
    def title(self) -> str:
        where = "" if self.where == "all" else f" [{self.where}]"
        return self.label or f"{self.variant} − {self.base}: {self.measure}{where}"


MIN_SIDE, MAX_SIDE = 64, 4096  # a scene's width and height in pixels
#: calls one invocation runs: each batch's seeded order is a permutation of its calls held
#: while it runs (4 bytes a call); a larger study is split over designs
MAX_CALLS = 1_000_000


class Design(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    description: str = ""
    samples: int = Field(default=5, ge=1)
    seed: int = 0
    scene_seed: int = 0
    size: str = "1024x768"
    margin: float = Field(default=0.10, gt=0, lt=1)
    q: float = Field(default=0.05, gt=0, lt=1)
    sets: dict[str, SetSpec] = {"main": SetSpec()}
    batches: list[Batch] = Field(alias="batch", min_length=1)
    comparisons: list[Comparison] = Field(default_factory=list, alias="comparison")

    @field_validator("size")
    @classmethod
    def _size(cls, v: str) -> str:
        m = re.fullmatch(r"([0-9]{1,6})x([0-9]{1,6})", v)
        if m is None:
            raise ValueError(f"must be WIDTHxHEIGHT in pixels (such as 1024x768), got {v!r}")
        if not all(MIN_SIDE <= int(side) <= MAX_SIDE for side in m.groups()):
            raise ValueError(f"{v}: each side must be {MIN_SIDE} to {MAX_SIDE} pixels")
        return v

    @property
    def pixels(self) -> tuple[int, int]:
        """``size`` as (width, height)."""
        w, _, h = self.size.partition("x")
        return int(w), int(h)

    @model_validator(mode="after")
    def _consistent(self) -> Design:
        for name in self.sets:
            if name not in SETS:
                raise ValueError(f"unknown scene set {name!r}; known: {', '.join(SETS)}")
        seen: set[str] = set()
        for b in self.batches:
            if b.name in seen:
                raise ValueError(f"batch {b.name!r} appears twice")
            seen.add(b.name)
            for s in b.sets:
                if s not in self.sets:
                    raise ValueError(f"batch {b.name!r} uses set {s!r}, not in [sets]")
            for cond in b.conditions:
                try:
                    parse_condition(cond)
                except PromptError as exc:
                    raise ValueError(f"batch {b.name!r}: {exc}") from None
            if len(set(b.conditions)) != len(b.conditions):
                raise ValueError(f"batch {b.name!r} names a condition twice")
            for name in b.only:
                if name not in b.conditions:
                    raise ValueError(f"batch {b.name!r}: `only` names {name!r}, not one of its conditions")
        by_name = {b.name: b for b in self.batches}
        for i, c in enumerate(self.comparisons, 1):
            batch = by_name.get(c.batch)
            if batch is None:
                raise ValueError(f"comparison {i} names batch {c.batch!r}, not in the design")
            for cond in (c.base, c.variant):
                if cond not in batch.conditions:
                    raise ValueError(f"comparison {i}: condition {cond!r} is not in batch "
                                     f"{c.batch!r} ({', '.join(batch.conditions)})")
            if c.set is not None and c.set not in batch.sets:
                raise ValueError(f"comparison {i}: set {c.set!r} is not asked in batch {c.batch!r}")
        return self

    def batch(self, name: str) -> Batch:
        for b in self.batches:
            if b.name == name:
                return b
        raise KeyError(name)

    def set_size(self, name: str) -> int:
        return self.sets[name].n or DEFAULT_N[name]

    def named_models(self) -> list[str]:
        """The models the batches name, in order of first mention (``*`` left out)."""
        return list(dict.fromkeys(m for b in self.batches for m in b.models if m != "*"))

    def asked(self, c: Comparison, models: list[str] | None = None) -> list[str]:
        """The models asked comparison ``c``: its batch asks them both of its conditions and
        the comparison names them (``models``: whom to consider; default the named ones)."""
        batch = self.batch(c.batch)
        out = []
        for m in self.named_models() if models is None else models:
            conds = batch.conditions_for(m)
            if c.asks(m) and c.base in conds and c.variant in conds:
                out.append(m)
        return out

    def family_sizes(self, models: list[str] | None = None) -> dict[str, int]:
        """Each Benjamini-Hochberg family's size: its comparisons over the models asked them
        (Appendix C: "Each family holds the comparisons of its section on every model asked
        them"), in design order; margin tests and comparisons without a family are in none."""
        out: dict[str, int] = {}
        for c in self.comparisons:
            if c.family is not None and not c.margin:
                out[c.family] = out.get(c.family, 0) + len(self.asked(c, models))
        return out

    def calls(self, model: str) -> int:
        """How many calls the study makes to ``model`` (a two-turn dialogue counts once)."""
        return sum(len(b.conditions_for(model)) * sum(self.set_size(s) for s in b.sets)
                   * self.samples for b in self.batches)


def load_design(source: str | Path) -> Design:
    """A design from a TOML file, or a shipped design by name (``paper``, ``quick``)."""
    path = Path(source)
    if not path.exists() and str(source) in BUILTIN:
        text = resources.files(__package__).joinpath(f"designs/{source}.toml").read_text("utf-8")
        where = f"designs/{source}.toml"
    elif not path.is_file():
        raise DesignError(f"no design file {source} (or give a shipped one: {', '.join(BUILTIN)})")
    else:
        text, where = read_text(path), str(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DesignError(f"{where}: not valid TOML: {exc}") from None
    try:
        return Design.model_validate(raw)
    except ValidationError as exc:
        raise DesignError(f"{where}: {first_problem(exc)}") from None
