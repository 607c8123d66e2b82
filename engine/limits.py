"""The adaptive concurrency's state (``backends/limiter.py``) as plain data, so it crosses
process boundaries: each shard of a run (``shards.py``) sends its backends' state up the
pipe that carries its trajectories, and the parent adds the shards up for the progress
line and run.json.

- ``gauge``: per backend, the calls in flight it allows now, its ceiling and its 429s (the
  progress line's), small enough to send whenever it changes.
- ``snapshot``: per backend, the limit's record (run.json's ``concurrency_course``) and its
  servers' counts (``server_counts``), sent once a shard is done; ``merge`` adds shards'
  up: counts and 429s summed, a course the sum of the shards' limits over time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from .backend import Backend, thin

#: per backend spec: [calls in flight allowed now, ceiling, 429s]
Gauge = dict[str, list[int]]


def gauge(backends: Collection[Backend]) -> Gauge:
    """What the progress line says of each backend's limit now."""
    out: Gauge = {}
    for b in backends:
        lim, servers = b.limits()
        if lim is None:
            continue
        now = sum(s.current for s in servers) if servers else lim.current
        out[b.spec] = [now, lim.ceiling, lim.rate_limited + sum(s.rate_limited for s in servers)]
    return out


def add_gauges(gauges: Iterable[Gauge]) -> Gauge:
    """Shards' gauges added up, backend by backend."""
    out: Gauge = {}
    for g in gauges:
        for spec, values in g.items():
            out[spec] = [a + b for a, b in zip(out.get(spec, [0, 0, 0]), values, strict=True)]
    return out


def limits_text(g: Gauge) -> str:
    """The progress line's word on rate limits, once a provider has sent a 429: the calls
    in flight the backends allow now, of their ceilings, and the 429s so far."""
    seen = sum(v[2] for v in g.values())
    if not seen:
        return ""
    now = sum(min(v[0], v[1]) for v in g.values())
    return f" · limit {now}/{sum(v[1] for v in g.values())} · 429s {seen}"


def snapshot(backends: Collection[Backend]) -> dict[str, dict[str, Any]]:
    """Per backend spec: the adaptive limit's record (``course``) and the servers' counts
    (``servers``), where it has them."""
    out: dict[str, dict[str, Any]] = {}
    for b in backends:
        entry: dict[str, Any] = {}
        lim, _ = b.limits()
        if lim is not None and lim.adaptive:
            entry["course"] = lim.record()
        if (counts := b.server_counts()) is not None:
            entry["servers"] = counts
        if entry:
            out[b.spec] = entry
    return out


def merge(snapshots: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Shards' snapshots as one: per backend, the courses merged and the servers' counts
    summed server by server."""
    out: dict[str, dict[str, Any]] = {}
    for spec in dict.fromkeys(s for snap in snapshots for s in snap):
        entries = [snap[spec] for snap in snapshots if spec in snap]
        merged: dict[str, Any] = {}
        if courses := [e["course"] for e in entries if "course" in e]:
            merged["course"] = merge_courses(courses)
        if servers := [e["servers"] for e in entries if "servers" in e]:
            merged["servers"] = _merge_servers(servers)
        out[spec] = merged
    return out


def merge_courses(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Limits that ran side by side (``AdaptiveLimit.record``) as one: the ceilings, limits
    and 429s summed, the course the sum of the limits at each moment since the first one
    started (a shard's limit counts from its start, on the clock its ``started_at`` gives)."""
    if len(records) == 1:
        return records[0]
    base = min(r.get("started_at", 0.0) for r in records)
    events = sorted((round(r.get("started_at", 0.0) - base + t, 3), i, limit)
                    for i, r in enumerate(records) for t, limit in r["history"])
    now = [0] * len(records)
    course: list[list[float]] = []
    for t, i, limit in events:
        now[i] = limit
        if course and course[-1][0] == t:
            course[-1][1] = sum(now)
        elif not course or course[-1][1] != sum(now):
            course.append([t, sum(now)])
    course = thin(course)
    return {"ceiling": sum(r["ceiling"] for r in records),
            "limit": sum(r["limit"] for r in records),
            "rate_limited": sum(r["rate_limited"] for r in records),
            "history": course, "started_at": base, "processes": len(records)}


def _merge_servers(lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    by_url: dict[str, dict[str, Any]] = {}
    courses: dict[str, list[dict[str, Any]]] = {}
    for counts in lists:
        for c in counts:
            m = by_url.setdefault(c["url"], {"url": c["url"]})
            for key, value in c.items():
                if key == "concurrency":
                    courses.setdefault(c["url"], []).append(value)
                elif isinstance(value, bool):  # up: up in every shard
                    m[key] = m.get(key, True) and value
                elif isinstance(value, int | float):
                    m[key] = m.get(key, 0) + value
    for url, records in courses.items():
        by_url[url]["concurrency"] = merge_courses(records)
    return list(by_url.values())
