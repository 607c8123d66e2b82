"""Lines the journal's writer scrubbed are not scrubbed again on read; every other line is
(``engine/scrubbed.py``): a journal of an older version, lines appended by one, a journal
replaced under its record, and another scrubber version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unseen.engine import redact
from unseen.engine.journal import JournalWriter, iter_heads, iter_records
from unseen.engine.rundir import RunDir
from unseen.engine.scrubbed import marks_file, written_scrubbed

KEY = "sk-proj-" + "Qw9Zx" * 10  # a key's shape: what the scrubber looks for


def record(key: str, text: str = "fine", message: str = "") -> bytes:
    rec = {"key": key, "instance_id": "i", "strategy": "direct:temperature=0", "backend": "sim",
           "model": "m", "status": "unanswered" if message else "answered",
           "error": {"kind": "client", "message": message} if message else None,
           "params": {"temperature": 0}, "metrics": {},
           "steps": [{"reply": {"text": text, "usage": {"input_tokens": 1}}}]}
    return json.dumps(rec).encode()


def write(path: Path, *lines: bytes) -> None:
    writer = JournalWriter(path)
    for line in lines:
        writer.append_line(line)
    writer.close()


@pytest.fixture
def regex(monkeypatch) -> list[str]:
    """The texts the scrubber's pattern ran over."""
    seen: list[str] = []
    real = redact._replacer

    def spy(*a, **k):
        run = real(*a, **k)

        def counted(text: str) -> str:
            seen.append(text)
            return run(text)
        return counted

    monkeypatch.setattr(redact, "_replacer", spy)
    return seen


def test_the_writer_s_lines_are_read_without_the_scrubber(tmp_path, regex):
    journal = tmp_path / "trajectories.jsonl"
    write(journal, record("a", "x = 1, see https://example.org"), record("b"))
    assert written_scrubbed(journal) == [(0, journal.stat().st_size)]
    regex.clear()  # the writer's own scrubbing
    assert [r["key"] for r in iter_records(journal)] == ["a", "b"]
    assert [r["key"] for r in iter_heads(journal, lambda h: h["key"] == "a")] == ["a", "b"]
    assert [h.key for h in RunDir(tmp_path).heads()] == ["a", "b"]
    assert regex == []


def test_a_line_of_an_older_writer_is_scrubbed_on_read(tmp_path):
    """No record beside the journal: as before, every line is scrubbed when read."""
    journal = tmp_path / "trajectories.jsonl"
    journal.write_bytes(record("old", f"my key is {KEY}", f"denied: {KEY}") + b"\n")
    assert not marks_file(journal).exists()
    (rec,) = iter_records(journal)
    assert rec["steps"][0]["reply"]["text"] == "my key is [redacted]"
    (head,) = iter_heads(journal, lambda h: False)
    assert head["error"]["message"] == "denied: [redacted]"
    (h,) = RunDir(tmp_path).heads()
    assert h.error_message == "denied: [redacted]"
    assert KEY not in json.dumps(RunDir(tmp_path).read(h))


def test_an_older_journal_resumed_keeps_its_old_lines_scrubbed(tmp_path):
    journal = tmp_path / "trajectories.jsonl"
    old = record("old", f"my key is {KEY}") + b"\n"
    journal.write_bytes(old)
    write(journal, record("new", "fine"))
    assert written_scrubbed(journal) == [(len(old), journal.stat().st_size)]
    write(journal, record("newer", "fine"))  # the next writer goes on with the same span
    assert written_scrubbed(journal) == [(len(old), journal.stat().st_size)]
    texts = {r["key"]: r["steps"][0]["reply"]["text"] for r in iter_records(journal)}
    assert texts == {"old": "my key is [redacted]", "new": "fine", "newer": "fine"}


def test_lines_appended_by_another_writer_are_scrubbed(tmp_path):
    journal = tmp_path / "trajectories.jsonl"
    write(journal, record("a"))
    with open(journal, "ab") as fh:  # an older version resuming the run
        fh.write(record("b", f"my key is {KEY}") + b"\n")
    texts = [r["steps"][0]["reply"]["text"] for r in iter_records(journal)]
    assert texts == ["fine", "my key is [redacted]"]


def test_a_replaced_journal_or_another_scrubber_version_is_scrubbed_whole(tmp_path,
                                                                            monkeypatch):
    journal = tmp_path / "trajectories.jsonl"
    write(journal, record("a", "padding " * 20))
    size = journal.stat().st_size
    journal.write_bytes(record("b", f"k {KEY} " + "." * 200)[:size - 1] + b"\n")
    assert journal.stat().st_size == size  # the same length, other bytes
    assert written_scrubbed(journal) == []
    write(tmp_path / "second.jsonl", record("c"))
    monkeypatch.setattr("unseen.engine.scrubbed.VERSION", redact.VERSION + 1)
    assert written_scrubbed(tmp_path / "second.jsonl") == []


def test_a_key_in_use_here_is_scrubbed_from_the_writer_s_lines_too(tmp_path, monkeypatch):
    """The writer scrubbed the keys it knew; a reader with another key in its environment
    looks for that one (a substring search)."""
    journal = tmp_path / "trajectories.jsonl"
    write(journal, record("a", "the reader's key is plain-looking-token-42"))
    monkeypatch.setenv("VLLM_API_KEY", "plain-looking-token-42")
    (rec,) = iter_records(journal)
    assert rec["steps"][0]["reply"]["text"] == "the reader's key is [redacted]"
