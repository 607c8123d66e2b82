"""unseen: test, and improve, how vision-language models reason about what they cannot see.

The public names load on first use, so ``import unseen`` (and every command that does not
run a model) does not pay for LangGraph and the provider SDKs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Box": ".engine.box",
    "Instance": ".engine.types",
    "Reply": ".engine.types",
    "Request": ".engine.types",
    "Step": ".engine.types",
    "Trajectory": ".engine.types",
    "connect": ".backends",
    "load_dataset": ".evals.scenefunri",
    "run": ".api",
    "run_async": ".api",
    "strategy": ".strategies",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'unseen' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
