"""One scrubber of secrets for every text that is stored or shown.

It removes the values of the keys in use (the environment variables the backends read, and
any key handed to a backend in code: :func:`remember`) and key-shaped strings: OpenAI-style
``sk-...`` keys, Google ``AIza...`` keys and ``Bearer ...`` tokens. A provider that echoes the
key in an error body (``Incorrect API key provided: sk-...``) then leaves no trace of it in
the journal, ``run.json``, the cache, an error line or a view.

Values shorter than :data:`MIN_SECRET` characters are not taken for secrets: they would match
ordinary words (vLLM's placeholder key is ``EMPTY``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from functools import lru_cache

# the environment variables the built-in backends read a key from
KEY_ENV_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VLLM_API_KEY")
MIN_SECRET = 8
REDACTED = "[redacted]"

# key shapes: OpenAI (sk-, sk-proj-, ...), Google API keys (AIza + 35), bearer tokens
_SHAPES = (r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{12,}"
           r"|(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"
           r"|(?<=[Bb]earer )(?=[A-Za-z._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}")
_HINTS = ("sk-", "AIza", "earer ")  # a text without any of these and of the keys is clean
_remembered: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Scrub ``secret`` from now on (a key given to a backend in code, not by environment)."""
    if secret and len(secret) >= MIN_SECRET:
        with _lock:
            _remembered.add(secret)


def secrets() -> tuple[str, ...]:
    """The key values in use: the environment's and the remembered ones, longest first."""
    env = tuple(os.environ.get(k, "") for k in KEY_ENV_VARS)
    with _lock:
        remembered = frozenset(_remembered)
    return _secrets(env, remembered)


@lru_cache(maxsize=8)
def _secrets(env: tuple[str, ...], remembered: frozenset[str]) -> tuple[str, ...]:
    found = {v.strip() for v in env if len(v.strip()) >= MIN_SECRET} | remembered
    # a key with characters JSON escapes is also looked for as it appears inside JSON
    found |= {json.dumps(v)[1:-1] for v in found}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


@lru_cache(maxsize=8)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    literal = "|".join(re.escape(v) for v in values)
    return re.compile(f"{literal}|{_SHAPES}" if literal else _SHAPES)


def scrub(text: str) -> str:
    """``text`` with every secret and key-shaped string replaced by ``[redacted]``."""
    values = secrets()
    if not any(h in text for h in _HINTS) and not any(v in text for v in values):
        return text  # the common case: one pass of substring searches, no regex
    return _pattern(values).sub(REDACTED, text)


def scrubber() -> Callable[[str], str]:
    """:func:`scrub` with the keys in use looked up once: for a pass over many short texts
    (10,000 journal heads), where looking them up for each would cost more than the rest."""
    values = secrets()
    pattern = _pattern(values)

    def scrub_now(text: str) -> str:
        if not any(h in text for h in _HINTS) and not any(v in text for v in values):
            return text
        return pattern.sub(REDACTED, text)

    return scrub_now


def scrub_bytes(data: bytes) -> bytes:
    """:func:`scrub` for UTF-8 bytes (a journal line); other bytes pass unchanged."""
    values = secrets()
    if not any(h.encode() in data for h in _HINTS) and not any(
            v.encode() in data for v in values):
        return data
    try:
        return scrub(data.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return data
