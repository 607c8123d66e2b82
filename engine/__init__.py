"""Runtime: core types, protocols, graph helpers, the runner, the journal and the reply cache.

Names load on first use: reading a journal needs neither LangGraph nor the SDKs.
"""

from __future__ import annotations

from .lazy import lazy_exports

_EXPORTS = {
    "Backend": ".backend", "Capabilities": ".backend", "ProviderError": ".backend",
    "CONVENTIONS": ".box", "Box": ".box", "BoxError": ".box", "smart_resize": ".box",
    "BoxParseError": ".boxtext", "parse_box": ".boxtext",
    "ReplyCache": ".cache", "request_key": ".cache",
    "Parsed": ".graph", "StrategySpec": ".graph", "StrategyState": ".graph",
    "ask_node": ".graph", "backend_of": ".graph",
    "iter_records": ".journal", "iter_trajectories": ".journal", "latest": ".journal",
    "BoxTruth": ".oracle", "CellsTruth": ".oracle", "ChoiceTruth": ".oracle", "Cue": ".oracle",
    "Truth": ".oracle", "sim_task": ".oracle",
    "Runner": ".runner", "RunResult": ".runner", "trajectory_key": ".runner",
    "AnswerSpec": ".types", "Decoding": ".types", "ErrorInfo": ".types", "ImagePart": ".types", "Instance": ".types",
    "Message": ".types", "Reply": ".types", "Request": ".types", "RunConfig": ".types",
    "Step": ".types", "TextPart": ".types", "Trajectory": ".types", "Usage": ".types",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)
