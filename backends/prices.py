"""Prices: what a model's tokens cost, in US dollars per million tokens.

The table is data, ``prices.toml`` beside this module, each price with the date it was
read and its source; a model no entry knows has no price (``price_for`` returns None), and
says so wherever a cost is shown: an unknown price is never 0. The first entry whose
``pattern`` (a regular expression) occurs in the model's name (lower case, after its last
``/``, as for the profiles) wins; a user's price file (``--prices FILE`` or
``$UNSEEN_PRICES``, the same format) comes before the built-in table.

Token counts follow the providers' own: ``input_tokens`` includes the cached input tokens
(OpenAI's ``prompt_tokens``, the Responses API's ``input_tokens``, Gemini's
``prompt_token_count``), which are billed at ``cached_input``; ``output_tokens`` includes
the reasoning tokens, which are billed as output.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..engine.errors import UserFileError
from ..engine.types import Usage
from ..engine.userfiles import first_problem, read_text
from .profiles import model_key

PRICES_ENV = "UNSEEN_PRICES"
BUILT_IN = "prices.toml"
MILLION = 1_000_000
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class Price(BaseModel):
    """One model family's price, USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: str
    input: float = Field(ge=0)
    cached_input: float = Field(ge=0)  # omitted in a file: no cached rate, the input one
    output: float = Field(ge=0)  # reasoning tokens included
    batch_discount: float = Field(0.0, ge=0, le=1)  # the fraction off with a batch API
    date: str  # when the price was read, YYYY-MM-DD
    source: str = Field(min_length=1)
    origin: str = "built-in"  # the file the price came from

    @model_validator(mode="before")
    @classmethod
    def _cached_defaults_to_input(cls, data: Any) -> Any:
        if isinstance(data, dict) and "cached_input" not in data and "input" in data:
            return {**data, "cached_input": data["input"]}
        return data

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except (re.error, RecursionError, OverflowError) as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return v

    @field_validator("input", "cached_input", "output", "batch_discount", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError("a number of US dollars (per million tokens) was expected")
        if not math.isfinite(v):
            raise ValueError("a finite number was expected")
        return v

    @field_validator("date", mode="before")
    @classmethod
    def _date(cls, v: Any) -> Any:
        if isinstance(v, dt.datetime):
            return v.date().isoformat()
        if isinstance(v, dt.date):
            return v.isoformat()
        if isinstance(v, str) and _DATE.fullmatch(v):
            try:
                dt.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"{v!r} is not a date") from None
            return v
        raise ValueError("the date the price was read, YYYY-MM-DD, was expected")

    @field_validator("source")
    @classmethod
    def _said(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("say where the price comes from (a URL or a document)")
        return v

    def matches(self, model: str) -> bool:
        return re.search(self.pattern, model_key(model)) is not None

    def cost(self, usage: Usage, batch: bool = False) -> float:
        """``usage``'s cost in US dollars: the uncached input tokens at ``input``, the cached
        ones at ``cached_input``, the output (reasoning included) at ``output``; less
        ``batch_discount`` with ``batch``."""
        cached = min(max(usage.cached_input_tokens, 0), max(usage.input_tokens, 0))
        uncached = max(usage.input_tokens, 0) - cached
        total = (uncached * self.input + cached * self.cached_input
                 + max(usage.output_tokens, 0) * self.output) / MILLION
        return total * (1 - self.batch_discount) if batch else total

    def rates(self) -> str:
        """``$2.50/$1.25/$10.00`` (input/cached input/output per million tokens)."""
        return "/".join(_dollars(x) for x in (self.input, self.cached_input, self.output))

    def describe(self) -> str:
        """Where the price comes from, as a legend says it: ``built-in, read 2026-12-02``."""
        return f"{self.origin}, read {self.date}"


def _dollars(x: float) -> str:
    text = f"{x:.2f}" if round(x, 2) == x else f"{x:.4f}".rstrip("0")
    return f"${text}"


def cost(usage: Usage, price: Price, batch: bool = False) -> float:
    """What ``usage`` costs at ``price``, in US dollars (:meth:`Price.cost`)."""
    return price.cost(usage, batch)


def usage_of(raw: Any) -> Usage:
    """A journal's usage dict (a reply's ``usage``) as :class:`Usage`; what an old journal
    lacks (``cached_input_tokens``) counts as 0."""
    if not isinstance(raw, dict):
        return Usage()
    keys = Usage.model_fields
    return Usage(**{k: v for k, v in raw.items() if k in keys and isinstance(v, int)})


def parse_prices(text: str, origin: str) -> tuple[Price, ...]:
    """The ``[[price]]`` tables of a TOML text; a bad one is one line naming ``origin``."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserFileError(f"{origin}: not valid TOML ({exc})") from None
    except RecursionError:
        raise UserFileError(f"{origin}: not valid TOML (nested too deeply)") from None
    unknown = sorted(set(raw) - {"price"})
    if unknown:
        raise UserFileError(f"{origin}: unknown table {unknown[0]!r}; a price file holds "
                            "[[price]] tables (pattern, input, cached_input, output, "
                            "batch_discount, date, source)")
    entries = raw.get("price", [])
    if not isinstance(entries, list) or not entries:
        raise UserFileError(f"{origin}: no [[price]] table (each needs a pattern, input, "
                            "output, date and source)")
    out = []
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise UserFileError(f"{origin}: price {n}: a [[price]] table was expected")
        if "origin" in entry:
            raise UserFileError(f"{origin}: price {n}: origin: set by unseen (the file a "
                                "price comes from), not by the file")
        try:
            out.append(Price.model_validate({**entry, "origin": origin}))
        except ValidationError as exc:
            raise UserFileError(f"{origin}: price {n}: {first_problem(exc)}") from None
    return tuple(out)


@lru_cache(maxsize=1)
def built_in() -> tuple[Price, ...]:
    """The built-in table (``prices.toml``)."""
    text = resources.files(__package__).joinpath(BUILT_IN).read_text("utf-8")
    return parse_prices(text, "built-in")


@lru_cache(maxsize=8)
def _user(path: str, mtime_ns: int) -> tuple[Price, ...]:
    return parse_prices(read_text(path), path)


def user_prices(path: str | Path | None = None) -> tuple[Price, ...]:
    """The prices of ``path`` (default ``$UNSEEN_PRICES``; none without either)."""
    path = path or os.environ.get(PRICES_ENV) or None
    if path is None:
        return ()
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        read_text(path)  # the one-line error naming the file
        raise
    return _user(str(path), mtime)


_active: str | None = None  # the price file of this process's command (set by ``use``)


def use(path: str | Path | None) -> str | None:
    """Make ``path`` the user price file of this process; checked now, so a bad file is
    refused before anything runs. Returns the one it replaces (for :func:`restore`)."""
    global _active
    user_prices(path)
    before, _active = _active, (str(path) if path else None)
    return before


@contextmanager
def using(path: str | Path | None) -> Iterator[None]:
    """:func:`use` ``path`` while the block runs (a command's), then the one before."""
    before = use(path)
    try:
        yield
    finally:
        restore(before)


def in_use() -> str | None:
    """The user price file this process reads now (set by :func:`use`)."""
    return _active


def restore(path: str | None) -> None:
    """Set the user price file back to ``path`` (unchecked: it was checked when set)."""
    global _active
    _active = path


def price_for(model: str, path: str | Path | None = None) -> Price | None:
    """The first price (a user's first) whose pattern occurs in the model's name, or None
    when no entry knows the model."""
    for price in (*user_prices(path or _active), *built_in()):
        if price.matches(model):
            return price
    return None

