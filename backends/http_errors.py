"""Classifying HTTP failures the same way for every provider."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping

# A 429 that waiting a minute will not fix: an exhausted daily or billing quota.
_QUOTA = re.compile(
    r"insufficient_quota|per ?day|requests per day|\bRPD\b|daily|billing hard limit|exceeded your current quota.*billing",
    re.IGNORECASE,
)
_PER_MINUTE = re.compile(r"per ?minute|\bRPM\b|\bTPM\b", re.IGNORECASE)


def status_kind(status: int, text: str = "") -> str:
    """The error kind of an HTTP status (``text`` is the error body or message)."""
    if status == 429:
        if _QUOTA.search(text) and not _PER_MINUTE.search(text):
            return "quota"
        return "rate_limit"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server"
    return "client"


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms`` header."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())
