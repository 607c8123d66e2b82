"""Cost in currency beside quality, for every benchmark's tables.

The cost of a row is its trajectories' token usage (from the journal) at its model's price,
looked up when the table is drawn by a ``prices`` callable the views pass in (``model ->
Price | None``, ``unseen.backends.prices.price_for``): cached input tokens at the cached
rate, output tokens (reasoning included) at the output rate. Rows of the simulator, rules
and people have no cost; a model without a price has none either, and the legend says "no
price" for it: an unknown price is never shown as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..engine.types import Usage

#: ``model -> Price | None``; a Price has ``cost(usage)`` and the fields of the price table
Prices = Callable[[str], Any]
#: the usage keys a cost is made of (journals before ``cached_input_tokens`` lack it: 0)
KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")
NO_PRICE = "no price"


def add_usage(total: dict[str, int], usage: Any) -> None:
    """Add a journal reply's ``usage`` dict into ``total``."""
    if not isinstance(usage, Mapping):
        return
    for k in KEYS:
        v = usage.get(k, 0)
        if isinstance(v, int) and not isinstance(v, bool):
            total[k] = total.get(k, 0) + v


def record_usage(rec: Mapping[str, Any]) -> dict[str, int]:
    """The token counts of all of a journal record's steps."""
    total: dict[str, int] = {}
    for step in rec["steps"]:
        add_usage(total, (step.get("reply") or {}).get("usage"))
    return total


def priced(model: str, kind: str, prices: Prices | None) -> tuple[bool, Any]:
    """(whether the row has a cost at all, its price or None): only real models do."""
    if prices is None or kind != "model":
        return False, None
    return True, prices(model)


def cost_of(usage: Mapping[str, int], price: Any, batch: bool = False) -> float | None:
    """US dollars of ``usage`` at ``price`` (None without a price); ``batch``: sent through
    the provider's batch API, at its discount."""
    if price is None:
        return None
    return float(price.cost(Usage(**{k: int(usage.get(k, 0)) for k in KEYS}), batch))


def batched_specs(backends: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The backends of run.json that went through a batch API (``--batch``): priced at the
    batch discount."""
    return frozenset(str(d.get("spec")) for d in backends if d.get("batch"))


def price_fields(price: Any) -> dict[str, Any] | None:
    """What a table's JSON says of a price: its fields, or None."""
    if price is None:
        return None
    return {k: getattr(price, k) for k in ("pattern", "input", "cached_input", "output",
                                           "batch_discount", "date", "source", "origin")}


def usd(v: float | None) -> str:
    """US dollars with three significant digits below a dollar: ``0.00812``, ``1.23``."""
    if v is None:
        return ""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    digits = min(9, 2 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


def _rates(p: Mapping[str, Any]) -> str:
    def d(x: float) -> str:
        return f"${x:.2f}" if round(x, 2) == x else "$" + f"{x:.4f}".rstrip("0")

    return "/".join(d(p[k]) for k in ("input", "cached_input", "output"))


def legend(rows: Iterable[Mapping[str, Any]], per: str = "instance") -> str:
    """The line under a table that says where its costs come from: the total of each model,
    the prices used with the date each was read, and the models without one; empty when
    no row is a model's."""
    prices: dict[str, Mapping[str, Any] | None] = {}
    totals: dict[str, float] = {}
    for r in rows:
        if not r.get("costed"):
            continue
        model = r["model"]
        prices.setdefault(model, r.get("price"))
        if r.get("cost_total_usd") is not None:
            totals[model] = totals.get(model, 0.0) + r["cost_total_usd"]
    if not prices:
        return ""
    parts = [f"cost: USD per {per} and in all (Σ), from the journal's token counts"]
    if totals:
        parts.append("in all " + ", ".join(f"{m} ${usd(t)}" for m, t in totals.items()))
    known = {m: p for m, p in prices.items() if p is not None}
    if known:
        parts.append("prices per 1M tokens in/cached/out: " + "; ".join(
            f"{m} {_rates(p)} ({p['origin']}, read {p['date']})" for m, p in known.items()))
    unknown = [m for m, p in prices.items() if p is None]
    if unknown:
        parts.append(f"{NO_PRICE} (add one with --prices FILE): " + ", ".join(unknown))
    return "; ".join(parts)
