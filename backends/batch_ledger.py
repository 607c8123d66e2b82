"""The batch ledger, ``RUN_DIR/batches.jsonl``: what a run sent through a batch API, so a
killed run resumed pays for no request twice.

One JSON object a line, each with the ``driver`` (``openai``, ``gemini``) and an ``event``:

- ``intent`` (``intent``, ``custom_ids``, ``at``): written, fsynced, *before* a batch is
  submitted; the intent id goes with the batch (OpenAI: its ``metadata``; Gemini: its
  display name), so a batch whose submission was not recorded (the process died between
  the provider's answer and the next line) is found again by listing the provider's batches;
- ``submitted`` (``batch``, ``intent``, ``custom_ids``, ``at``): the batch's id;
- ``abandoned`` (``intent``): the provider has no batch of that intent (its submission
  failed, or a resume looked and found none): its lines may be sent again;
- ``ended`` (``batch``, ``state``, ``provider_state``, ``unusable``, ``at``): the batch
  finished and its results were read; ``unusable`` are the custom_ids without a usable
  result (an error line, a line it never ran), which a later batch may send again.

A custom_id maps to the last batch that sent it, unless that batch ended without a usable
result for it. A ledger written before ``unusable`` existed frees every line of a batch that
did not end ``done`` and keeps those of one that did.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.backend import ProviderError
from ..engine.types import Reply
from .batch_status import DONE

LEDGER = "batches.jsonl"


@dataclass
class BatchRecord:
    """One batch the ledger or this run knows: its lines, its state, its results once read."""

    id: str
    custom_ids: list[str]
    state: str = "running"
    results: dict[str, Reply | ProviderError] | None = None


@dataclass
class Intent:
    """A batch about to be submitted (or submitted, unrecorded): its lines and when."""

    id: str
    custom_ids: list[str]
    at: float


@dataclass
class Recovered:
    """What a ledger says for one driver: its batches, the batch each custom_id waits on,
    and the intents whose batch is not known."""

    batches: dict[str, BatchRecord] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)
    intents: dict[str, Intent] = field(default_factory=dict)

    def map(self, batch: BatchRecord) -> None:
        self.batches.setdefault(batch.id, batch)
        for cid in batch.custom_ids:
            self.known[cid] = batch.id

    def free(self, batch_id: str, custom_ids: list[str]) -> None:
        """These lines of the batch have no usable result: send them again when asked."""
        for cid in custom_ids:
            if self.known.get(cid) == batch_id:
                del self.known[cid]


def read(path: Path, driver: str) -> Recovered:
    """The ledger at ``path`` for ``driver`` (nothing when there is none; a torn last line,
    as a killed write leaves, is skipped)."""
    out = Recovered()
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("driver") != driver:
            continue
        kind, bid = event.get("event"), str(event.get("batch", ""))
        cids = [str(c) for c in event.get("custom_ids", [])]
        if kind == "intent":
            out.intents[str(event.get("intent"))] = Intent(
                str(event.get("intent")), cids, float(event.get("at") or 0.0))
        elif kind == "submitted":
            out.intents.pop(str(event.get("intent")), None)
            out.map(BatchRecord(bid, cids))
        elif kind == "abandoned":
            out.intents.pop(str(event.get("intent")), None)
        elif kind == "ended" and bid in out.batches:
            batch = out.batches[bid]
            batch.state = str(event.get("state", DONE))
            unusable = event.get("unusable")
            if unusable is None:  # an older ledger: by the batch's state
                unusable = [] if batch.state == DONE else batch.custom_ids
            out.free(bid, [str(c) for c in unusable])
    return out


def write(path: Path | None, driver: str, event: dict[str, Any]) -> None:
    """Append one event, flushed and fsynced: a batch paid for is never forgotten."""
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"driver": driver, **event, "at": event.get("at", time.time())})
                 + "\n")
        fh.flush()
        os.fsync(fh.fileno())
