"""unseen: test, and improve, how vision-language models reason about what they cannot see.

The public names load on first use, so ``import unseen`` (and every command that does not
run a model) does not pay for LangGraph and the provider SDKs.
"""

from __future__ import annotations

from .engine.lazy import lazy_exports

_EXPORTS = {
    "Box": ".engine.box",
    "DryRunEstimate": ".dryrun",
    "Instance": ".engine.types",
    "Reply": ".engine.types",
    "Request": ".engine.types",
    "Step": ".engine.types",
    "Trajectory": ".engine.types",
    "UnseenError": ".engine.errors",
    "connect": ".backends",
    "load_dataset": ".evals.scenefunri",
    "load_design": ".evals.director.study.design",
    "run": ".api",
    "run_async": ".api",
    "run_study": ".commands.director_run",
    "run_study_async": ".commands.director_run",
    "strategy": ".strategies",
}

__all__ = list(_EXPORTS)


__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
