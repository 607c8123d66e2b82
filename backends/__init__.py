"""Model clients behind one async protocol, and ``connect`` to build one from a spec string."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..engine.cache import ReplyCache
from ..engine.envfile import load_env_file
from .base import BackendConfigError, BaseBackend, make_backend, provider, providers
from .profiles import Profile, profile_for
from .profiles import use as use_profiles
from .reliable import Reliable


def connect(
    spec: str,
    *,
    concurrency: int = 8,
    timeout_s: float = 120.0,
    max_attempts: int = 6,
    backoff_base_s: float = 1.0,
    cache: ReplyCache | None = None,
    profiles: str | Path | None = None,
    cache_tag: str | None = None,
    adaptive: bool = True,
    batch: bool = False,
    batch_window_s: float = 2.0,
    batch_poll_s: float = 30.0,
    **options: Any,
) -> Reliable:
    """A ready backend from ``provider:target`` (e.g. ``openai:gpt-4o``, ``sim:strong``),
    wrapped with a concurrency limit, timeouts, retries and the reply cache.

    ``options`` go to the provider: ``base_url``, ``api_key``, ``box_format``,
    ``max_image_side``, ... ``profiles`` names a user's model-profile file (``profiles.py``);
    ``cache_tag`` is what the reply cache cannot see of the serving (a new checkpoint behind
    the same name), part of every reply's cache key; ``adaptive=False`` keeps
    ``concurrency`` fixed instead of a ceiling the limit adapts under (``limiter.py``). Keys
    the environment lacks are read
    from ``./.env`` (``engine/envfile.py``).
    """
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise BackendConfigError(f"--timeout must be a positive number of seconds, got "
                                 f"{timeout_s!r}")
    load_env_file()
    use_profiles(profiles)
    inner = make_backend(spec, timeout_s=timeout_s, **options)
    if batch:  # the provider's batch API (batching.py): the limit is a batch's size
        from .batching import batch_backend

        inner = batch_backend(inner, window_s=batch_window_s, poll_s=batch_poll_s)
        concurrency, adaptive = inner.concurrency, False
    return Reliable(inner, concurrency=concurrency, timeout_s=timeout_s,
                    max_attempts=max_attempts, backoff_base_s=backoff_base_s, cache=cache,
                    cache_tag=cache_tag, adaptive=adaptive)


__all__ = [
    "BackendConfigError", "BaseBackend", "Profile", "Reliable", "connect", "make_backend",
    "profile_for", "provider", "providers",
]
