"""What the ``--batch`` run tests share: fast batch settings, a deterministic answer for the
fake server, and readers of the fake's batches and of a run's batch ledger."""

from __future__ import annotations

import json
from pathlib import Path

from fake_providers import Reply

#: a batch window and poll fit for a local fake server; no cache, no progress bar
FAST = {"batch_window_s": 0.2, "batch_poll_s": 0.02, "backoff_base_s": 0.01, "cache": False,
        "progress": False}


def answer(rec) -> Reply:
    """Boxes for box prompts, a region for SPoE's, a Director report for the Director's."""
    text = json.dumps(rec.body)
    if "LESS likely" in text:
        return Reply("A")
    if "block" in text and "visible" in text:
        return Reply('{"visible": [1, 2], "block": 3}')
    key = "box_2d" if rec.protocol == "gemini" else "box"
    return Reply(json.dumps({key: [100, 200, 300, 400]}))


def batches_made(fp) -> list[str]:
    """The batch-creating calls the fake server got (either provider)."""
    return [p for m, p in fp.batch_calls if m == "POST" and p.rstrip("/").endswith(
        ("/batches", ":batchGenerateContent"))]


def ledger(run_dir: Path) -> list[dict]:
    """The run's batch ledger (``batches.jsonl``), without a torn last line."""
    path = Path(run_dir) / "batches.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def sent(run_dir: Path) -> int:
    """How many batches the run's ledger records as sent."""
    return sum(e["event"] == "submitted" for e in ledger(run_dir))


def stable(rows: list[dict]) -> list[dict]:
    """What a batch run and a run without must share: each trajectory's answer, metrics,
    and every step's prompt and reply text."""
    keep = ("key", "instance_id", "strategy", "status", "prediction", "metrics")
    return sorted(({k: r[k] for k in keep} | {"texts": [s["reply"]["text"] for s in r["steps"]],
                                              "prompts": [s["prompt"] for s in r["steps"]]}
                   for r in rows), key=lambda r: r["key"])


def finish_all(fp) -> None:
    """Every batch the fake holds finishes at its next poll."""
    for stored in fp._batches.values():
        stored.in_progress_polls = stored.polls
