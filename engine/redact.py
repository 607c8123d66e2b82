"""One scrubber of secrets for every text that is stored or shown.

It removes the values of the keys in use (the environment variables the backends read, and
any key handed to a backend in code: :func:`remember`) and key-shaped strings: OpenAI-style
``sk-...`` keys, Google ``AIza...`` keys and ``Bearer ...`` tokens; and in any URL, its user
information (``http://user:PW@host`` -> ``http://[redacted]@host``) and the values of query
parameters named like secrets (``?api_key=PW``, ``token``, ``sig``, ``password``). A provider that echoes the
key in an error body (``Incorrect API key provided: sk-...``) then leaves no trace of it in
the journal, ``run.json``, the cache, an error line or a view.

Values shorter than :data:`MIN_SECRET` characters are not taken for secrets: they would match
ordinary words (vLLM's placeholder key is ``EMPTY``).

:data:`VERSION` names what the scrubber removes: the journal records it beside the lines it
wrote scrubbed (``scrubbed.py``), and a reader scrubs again only the lines written
under another version or none.
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
#: bump when the shapes below change: lines journaled under an older version are scrubbed again
VERSION = 2

# key shapes: OpenAI (sk-, sk-proj-, ...), Google API keys (AIza + 35), bearer tokens
_KEY_SHAPES = ((r"sk-", r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{12,}"),
               (r"AIza", r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"),
               (r"earer ", r"(?<=[Bb]earer )(?=[A-Za-z._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}"))
_SHAPES = "|".join(shape for _, shape in _KEY_SHAPES)
# a URL (up to a space, a quote or a JSON escape); in it, the user information before the
# host, and a query parameter whose name says it holds a secret
_URL = r"(?P<url>[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>\\]+)"
_USERINFO = re.compile(r"^([^:]+://)[^/?#]*@")
_SECRET_QUERY = re.compile(r"([?&;](?i:[a-z0-9_.\-]*(?:key|token|secret|passw(?:or)?d|pwd|sig"
                           r"|signature|auth|credentials?))=)[^&#;\s\"'<>)]*")
# each alternative of the scrubber's pattern, after a string that every text it matches holds:
# a text without the string is matched without the alternative (Python's regex engine tries
# each alternative at each character, ~100 ns a character apiece: a journal line of 2 KB with
# an "=" and none of the others costs 20 us instead of 400)
_ALTERNATIVES = (("://", _URL), ("=", f"(?P<query>{_SECRET_QUERY.pattern})"), *_KEY_SHAPES)
_HINTS = tuple(h for h, _ in _ALTERNATIVES)  # a text without these and the keys is clean
_remembered: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Scrub ``secret`` from now on (a key given to a backend in code, not by environment)."""
    if secret and len(secret) >= MIN_SECRET:
        with _lock:
            _remembered.add(secret)


def remember_url(url: str | None) -> None:
    """Scrub from now on the secrets a server URL carries (its password or user, secret query
    values), wherever they appear alone: a server may echo them without the URL around."""
    if not url:
        return
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        found = [parts.username, parts.password]
    except ValueError:  # a malformed URL is refused elsewhere; nothing to take from it
        return
    found += [v for k, v in parse_qsl(parts.query) if _SECRET_QUERY.match(f"?{k}=")]
    for value in found:
        remember(value)


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


@lru_cache(maxsize=64)
def _replacer(values: tuple[str, ...], hints: tuple[str, ...] = _HINTS,
              present: tuple[str, ...] | None = None) -> Callable[[str], str]:
    """The substitution :func:`scrub` makes with the keys ``values``: a URL loses its user
    information and secret query values, then (in it or elsewhere) keys become ``[redacted]``.
    ``hints`` and ``present`` (keys, default all): those a text holds, whose alternatives
    alone can match it; the others are left out of the pattern, which matches the same."""
    keys = _pattern(values)
    literal = [re.escape(v) for v in (values if present is None else present)]
    # in the order of the whole pattern (a URL, a query, the keys, their shapes), so that the
    # alternatives left make the same choice at each character
    alternatives = [a for h, a in _ALTERNATIVES[:2] if h in hints] + literal + [
        a for h, a in _ALTERNATIVES[2:] if h in hints]
    # a query outside a whole URL too: a server's error echoes the path it was asked for
    pattern = re.compile("|".join(alternatives) or "(?!)")

    def one(m: re.Match[str]) -> str:
        groups = m.groupdict()
        query = groups.get("query")
        if query is not None:  # "?name=value": the name stays
            return query[: query.index("=") + 1] + REDACTED
        url = groups.get("url")
        if url is None:
            return REDACTED
        url = _SECRET_QUERY.sub(rf"\1{REDACTED}", _USERINFO.sub(rf"\1{REDACTED}@", url))
        return keys.sub(REDACTED, url)

    return lambda text: pattern.sub(one, text)


def _scrub(text: str, values: tuple[str, ...], hints: tuple[str, ...] = _HINTS) -> str:
    """``text`` scrubbed with the keys ``values``, looking for the shapes of ``hints``."""
    found = tuple(h for h in hints if h in text)
    present = tuple(v for v in values if v in text)
    if not found and not present:
        return text  # the common case: one pass of substring searches, no regex
    return _replacer(values, found, present)(text)


def scrub(text: str) -> str:
    """``text`` with every secret and key-shaped string replaced by ``[redacted]``."""
    return _scrub(text, secrets())


def scrubber(shapes: bool = True) -> Callable[[str], str]:
    """:func:`scrub` with the keys in use looked up once: for a pass over many short texts
    (10,000 journal heads), where looking them up for each would cost more than the rest.
    ``shapes=False``: for texts scrubbed when written (``VERSION``), where only a key in use
    here and not there could be left; a text holding none is returned without a regex."""
    values = secrets()
    hints = _HINTS if shapes else ()
    return lambda text: _scrub(text, values, hints)


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
