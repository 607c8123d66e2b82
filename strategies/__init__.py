"""Strategies: one module per method family, each a LangGraph state graph; the registry;
``kit``, the helpers every strategy's nodes share (turns, prompts, reading replies, what a
request asks, the truth for offline respondents)."""

from . import kit
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
    "kit", "parse_spec", "strategy",
]
