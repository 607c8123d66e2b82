"""SceneFunRI: ``data`` (data sets, SceneFun3D I/O, building and reviewing instances,
procedural rooms), ``metrics`` and ``scoring`` (the paper's four metrics per trajectory),
``fixed`` (the fixed-rule baselines), ``report`` (comparison tables, curves, the paper's
tables, the dataset card) and ``benchmark``, which wires them to the engine.

The names load on first use, so a command that reads one submodule (the dataset, the
scorer) does not pay for the tables' numpy and bootstrap.
"""

from __future__ import annotations

from ...engine.lazy import lazy_exports

_EXPORTS = {
    "Dataset": ".data.dataset", "DatasetError": ".data.dataset",
    "load_dataset": ".data.dataset",
    "aggregate": ".metrics", "cacc": ".metrics", "dist": ".metrics", "iou": ".metrics",
    "score": ".metrics", "render": ".report.formats", "summarize": ".report.summary",
    "scorer": ".scoring",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
