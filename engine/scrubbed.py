"""Which lines of a journal were scrubbed when written: ``trajectories.scrubbed.json``.

The journal's writer scrubs every line (``redact.scrub_bytes``), so a reader need not run the
scrubber's patterns over those lines again: on a study of 170,000 replies that was most of a
view's time, since nearly every line holds a hint (``=``, ``://``) that sends it to the regex.
The writer records, beside the journal, the scrubber's version (``redact.VERSION``) and the
byte spans it appended, each with a checksum of its last bytes. A reader scrubs again every
line outside those spans: a journal written before this file existed, lines a writer killed
before it recorded them, a span whose checksum of its last 64 bytes fails (the journal was
replaced, or cut and written again; an edit earlier in a span that keeps its length is not
seen: the file guards against unseen's own writers, not against a person editing the
journal), and every line when the file names another scrubber version. Inside a span it looks only for the
keys in use here, which the writer may not have known (a substring search, no regex).
"""

from __future__ import annotations

import bisect
import json
import os
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from .redact import VERSION, scrubber, secrets

SUFFIX = ".scrubbed.json"
_TAIL = 64  # bytes before a span's end that its checksum covers
_EVERY_S = 1.0  # the writer records its span at most this often, and when it closes


def marks_file(journal: Path) -> Path:
    """``trajectories.scrubbed.json`` beside ``trajectories.jsonl``."""
    return journal.with_name(journal.stem + SUFFIX)


def _crc(tail: bytes) -> int:
    return zlib.crc32(tail[-_TAIL:])


def _spans(journal: Path) -> list[tuple[int, int, int]]:
    """(start, end, checksum) of each span recorded beside ``journal``, checked against its
    bytes; none when any span fails its check."""
    try:
        data = json.loads(marks_file(journal).read_bytes())
        if data.get("scrubber") != VERSION:
            return []
        spans = [(int(a), int(b), int(c)) for a, b, c in data["spans"]]
        with open(journal, "rb") as fh:
            size, last = fh.seek(0, os.SEEK_END), 0
            for a, b, c in spans:
                if not last <= a < b <= size:
                    return []
                fh.seek(max(a, b - _TAIL))
                if _crc(fh.read(b - fh.tell())) != c:
                    return []
                last = b
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []  # no file, or one this version cannot read: every line is scrubbed
    return spans


def written_scrubbed(journal: Path) -> list[tuple[int, int]]:
    """The byte spans of ``journal`` that a writer of this scrubber version wrote."""
    return [(a, b) for a, b, _ in _spans(journal)]


class Marks:
    """The writer's record of the spans it appended (``JournalWriter``'s thread calls it)."""

    def __init__(self, journal: Path, size: int):
        self.path = marks_file(journal)
        self._done = [list(s) for s in _spans(journal)]
        # the last writer stopped where this one starts: one span goes on
        self.start = self._done.pop()[0] if self._done and self._done[-1][1] == size else size
        self._tail = b""
        if size:
            try:
                with open(journal, "rb") as fh:
                    fh.seek(max(0, size - _TAIL))
                    self._tail = fh.read(_TAIL)
            except OSError:  # a checksum made without them fails: read scrubs, as before
                pass
        self.end, self._saved = size, 0.0

    def wrote(self, data: bytes | memoryview) -> None:
        """``data`` (whole lines, already scrubbed) is on disk: record it, at most once a
        second (a span recorded short only means more scrubbing on read)."""
        self.end += len(data)
        self._tail = (self._tail + bytes(data[-_TAIL:]))[-_TAIL:]
        if time.monotonic() - self._saved >= _EVERY_S:
            self.save()

    def save(self) -> None:
        if self.end == self.start:
            return  # nothing written: the file stays as it was
        spans = [*self._done, [self.start, self.end, _crc(self._tail)]]
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(json.dumps({"scrubber": VERSION, "spans": spans}), encoding="utf-8")
            os.replace(tmp, self.path)  # a reader sees the old spans or the new, never half
        except OSError:  # the spans recorded before stay, and are still true: read scrubs more
            return
        self._saved = time.monotonic()


class Cleaner:
    """What a reader of one journal does to a line before parsing it: nothing to a line
    inside a span written scrubbed (unless it holds a key in use here), the whole scrubber to
    any other line."""

    def __init__(self, journal: Path):
        spans = written_scrubbed(journal)
        self._starts = [a for a, _ in spans]
        self._ends = [b for _, b in spans]
        self.full = scrubber()
        self._keys = [v.encode() for v in secrets()]
        self._keys_only = scrubber(shapes=False)

    def scrubbed(self, offset: int, size: int) -> bool:
        """Whether the line at ``offset`` (``size`` bytes) was written scrubbed."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return i >= 0 and offset + size <= self._ends[i]

    def clean(self, offset: int, raw: bytes) -> Callable[[str], str] | None:
        """The scrubber a line needs, or None when it needs none (the line may then be parsed
        as bytes, undecoded)."""
        if not self.scrubbed(offset, len(raw)):
            return self.full
        if self._keys and any(k in raw for k in self._keys):
            return self._keys_only
        return None
