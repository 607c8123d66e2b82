"""SceneFunRI: data, prompts' truth side, metrics and comparison tables.

The names load on first use, so a command that reads one submodule (the dataset, the
scorer) does not pay for the tables' numpy and bootstrap.
"""

from __future__ import annotations

from ...engine.lazy import lazy_exports

_EXPORTS = {
    "Dataset": ".dataset", "DatasetError": ".dataset", "load_dataset": ".dataset",
    "aggregate": ".metrics", "cacc": ".metrics", "dist": ".metrics", "iou": ".metrics",
    "score": ".metrics", "render": ".report", "summarize": ".report", "scorer": ".scoring",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
