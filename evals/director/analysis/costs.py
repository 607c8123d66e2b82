"""What each model of a Director study cost, in US dollars: its replies' token usage (the
journal's) at its price (``evals.costs``), per reply and in all. Simulated, rule and human
replies cost nothing and have no row; a model without a price has a row that says so."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ... import costs


def model_costs(rows: Iterable[dict[str, Any]], prices: costs.Prices | None,
                batched: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """One dict per design model answered by a real model: ``model``, ``served_model``,
    ``replies``, ``cost_usd`` (per reply), ``cost_total_usd`` and ``price`` (its fields;
    None, and the costs None, without one); ``costed`` True. Empty without ``prices``."""
    if prices is None:
        return []
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        kind = "human" if str(r.get("backend", "")).startswith("human") else \
            "rule" if str(r.get("backend", "")).startswith("baseline") else \
            "sim" if r.get("simulated") else "model"
        if kind != "model":
            continue
        served = r.get("served_model") or r["model"]
        g = groups.setdefault((r["model"], served), {"replies": 0, "usage": {},
                                                      "batch": r.get("backend") in batched})
        g["replies"] += 1
        costs.add_usage(g["usage"], r.get("usage"))
    out = []
    for (model, served), g in sorted(groups.items()):
        price = prices(served)
        total = costs.cost_of(g["usage"], price, batch=g["batch"])
        out.append({"model": model, "served_model": served, "replies": g["replies"],
                    "costed": True, "cost_usd": None if total is None else total / g["replies"],
                    "cost_total_usd": total, "price": costs.price_fields(price),
                    **{k: g["usage"].get(k, 0) for k in costs.KEYS}})
    return out


def cells(c: dict[str, Any]) -> list[str]:
    """A cost row as text: model, replies, US dollars per reply, in all."""
    def usd(key: str) -> str:
        return costs.NO_PRICE if c.get(key) is None else costs.usd(c[key])

    name = c["model"] + (f" ({c['served_model']})" if c["served_model"] != c["model"] else "")
    return [name, str(c["replies"]), usd("cost_usd"), usd("cost_total_usd")]


HEADERS = ["model", "replies", "USD/reply", "USD total"]


def note(rows: list[dict[str, Any]]) -> str:
    """The legend under the cost table."""
    return costs.legend([{**c, "model": c["served_model"]} for c in rows], per="reply")
