"""Shared pieces of the model clients: defaults and the provider registry.

A provider is a factory ``factory(target, *, spec, **options)`` registered with
``@provider(name, usage)``; a package (the built-ins included, see pyproject.toml) lists the
modules that hold its providers under the entry-point group ``unseen.backends``
(``engine.plugins``: the idiom strategies and simulator tasks share).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.backend import OPTIONAL_MEMBERS, Backend, BackendDefaults, Capabilities
from ..engine.box import BoxError, Convention
from ..engine.errors import UnseenError
from ..engine.plugins import Registry
from ..engine.types import Instance, Reply, Request
from . import profiles


class BackendConfigError(UnseenError, ValueError):
    """A backend that cannot be built: unknown provider, missing key, bad spec."""


class BaseBackend(BackendDefaults):
    """Defaults for the Backend protocol (the optional members: ``BackendDefaults``);
    subclasses implement ``complete``."""

    provider = "base"
    simulated = False
    cacheable = True
    capabilities = Capabilities()
    answers: frozenset[str] | None = None  # a model answers any prompt

    def __init__(self, model: str, box_format: str | None = None, spec: str | None = None,
                 image: Any = None):
        """``box_format`` overrides the profile's convention; ``image`` (``ImageSettings``)
        says how images are sent: a longer side at most ``max_side``, Qwen2.5-VL's resize."""
        self.model = model
        self.spec = spec or f"{self.provider}:{model}"
        self.profile = profiles.profile_for(model)
        self.image = image
        name = box_format or (self.profile.box_format if self.profile else None)
        # None: no profile knows the model's convention; a box strategy is refused for it
        self.box_format: Convention | None = None
        if name is not None:
            resize = self.profile.resize.model_dump() if self.profile and self.profile.resize \
                else {}
            if image is not None:
                resize.update(image.resize())
            try:
                self.box_format = Convention(
                    name, max_side=getattr(image, "max_side", None), **resize)
            except BoxError as exc:
                raise BackendConfigError(f"{self.spec}: {exc}") from None

    async def complete(self, request: Request) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        conv = self.box_format
        out: dict[str, Any] = {
            "spec": self.spec, "provider": self.provider, "model": self.model,
            "box_format": conv.name if conv is not None else None,
            "simulated": self.simulated, **profiles.describe(self.profile),
        }
        if conv is not None and conv.settings():
            out["box_settings"] = conv.settings()
        if self.image is not None and self.image.recorded():
            out["image"] = self.image.recorded()
        return out

    async def identify(self) -> dict[str, Any]:
        """What shapes this backend's replies beyond the request (part of the reply cache's
        key): how it sends images; subclasses add what their server says it serves."""
        return {"image": self.image.recorded()} if self.image is not None and \
            self.image.recorded() else {}

    def prepare(self, instances: list[Instance]) -> None:
        """Called once with the run's instances (baselines use it; most ignore it)."""

    async def aclose(self) -> None:
        """Release connections."""


ENTRY_POINT_GROUP = "unseen.backends"
Factory = Callable[..., Backend]
#: name → (factory, usage); usage is the spec syntax, or a function that says it
PROVIDERS: Registry[tuple[Factory, str | Callable[[], str]]] = Registry(ENTRY_POINT_GROUP,
                                                                        "backend")


def provider(name: str, usage: str | Callable[[], str]) -> Callable[[Factory], Factory]:
    """Register a backend factory ``factory(target, *, spec, **options)`` under ``name``;
    ``usage`` says its spec syntax (a function where it lists what plug-ins add)."""

    def deco(factory: Factory) -> Factory:
        PROVIDERS[name] = (factory, usage)
        return factory

    return deco


def providers() -> dict[str, str]:
    """Registered providers and their spec syntax."""
    return {name: usage() if callable(usage) else usage
            for name, (_, usage) in sorted(PROVIDERS.items())}


def make_backend(spec: str, **options: Any) -> Backend:
    """The bare backend for ``provider:target`` (no retries, cache or concurrency limit); a
    provider whose target is optional takes its options straight after its name
    (``human,port=8765``)."""
    name, _, target = spec.partition(":")
    if "," in name:  # provider,option=... with no target
        name, _, rest = name.partition(",")
        target = "," + rest + (":" + target if target else "")
    if name not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
        raise BackendConfigError(f"unknown backend {name!r} in {spec!r}; known: {known}")
    factory, _usage = PROVIDERS[name]
    backend = factory(target, spec=spec, **options)
    missing = [m for m in OPTIONAL_MEMBERS if not hasattr(backend, m)]
    if missing:  # the runner reads these directly: say so here, not mid-run
        raise BackendConfigError(
            f"backend {name!r} ({type(backend).__name__}) lacks {', '.join(missing)}: "
            "subclass unseen.backends.base.BaseBackend (docs/writing-a-backend.md)")
    return backend
