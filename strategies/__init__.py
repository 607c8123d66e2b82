"""Strategies: one module per method family, each a LangGraph state graph; the registry."""

from .registry import (
    ENTRY_POINT_GROUP,
    Entry,
    NoParams,
    StrategyError,
    available,
    build,
    get,
    parse_spec,
    strategy,
)

__all__ = [
    "ENTRY_POINT_GROUP", "Entry", "NoParams", "StrategyError", "available", "build", "get",
    "parse_spec", "strategy",
]
