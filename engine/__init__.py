"""Runtime: core types, protocols, graph helpers, the runner, the journal and the reply cache.

Names load on first use: reading a journal needs neither LangGraph nor the SDKs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Backend": ".backend", "Capabilities": ".backend", "ProviderError": ".backend",
    "CONVENTIONS": ".box", "Box": ".box", "BoxError": ".box", "smart_resize": ".box",
    "BoxParseError": ".boxtext", "parse_box": ".boxtext",
    "ReplyCache": ".cache", "request_key": ".cache",
    "Parsed": ".graph", "StrategySpec": ".graph", "StrategyState": ".graph",
    "ask_node": ".graph", "backend_of": ".graph",
    "iter_records": ".journal", "iter_trajectories": ".journal", "latest": ".journal",
    "Runner": ".runner", "RunResult": ".runner", "trajectory_key": ".runner",
    "Decoding": ".types", "ErrorInfo": ".types", "ImagePart": ".types", "Instance": ".types",
    "Message": ".types", "Reply": ".types", "Request": ".types", "RunConfig": ".types",
    "Step": ".types", "TextPart": ".types", "Trajectory": ".types", "Usage": ".types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'unseen.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value
