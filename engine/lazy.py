"""Public names that load on first use (PEP 562), so importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any],
                 exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``exports[name]`` (relative to ``package``) on
    first access and caches the value in ``namespace``."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        namespace[name] = value
        return value

    return __getattr__
