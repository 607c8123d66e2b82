"""A person's review of a built SceneFunRI folder (paper §3.4, the second round of quality
control): each candidate accepted, or rejected for one of the paper's reasons.

A build folder holds ``instances.jsonl`` (the instances a run uses) and ``review.jsonl`` (one
entry per instance the build made, by its stable id ``VISIT-DESCRIPTION``). A decision is
kept in that instance's entry as ``"decision": {"verdict", "reason", "note", "by", "at"}``;
a rejected instance leaves ``instances.jsonl`` and its line is kept in its entry
(``"instance"``), so nothing a person decided is lost. A rebuild into the same folder keeps
the decisions by id (:func:`carry_over`): the rejected stay out.

The paper's reasons (§3.4): ``duplicate`` (the same target and task as another instance),
``evidence`` (not enough visual evidence to infer where the target is), ``ambiguous``
(several plausible regions), ``other`` (with a note saying what).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from ....engine.userfiles import iter_lines
from .dataset import INSTANCES_FILE, DatasetError

REVIEW_FILE = "review.jsonl"
REASONS: dict[str, str] = {
    "duplicate": "duplicate",
    "evidence": "not enough visual evidence",
    "ambiguous": "several plausible regions",
    "other": "other",
}


class Decision(BaseModel):
    """A person's verdict on one instance; a rejection names one of :data:`REASONS`."""

    model_config = ConfigDict(extra="forbid")
    verdict: Literal["accept", "reject"]
    reason: Literal["duplicate", "evidence", "ambiguous", "other"] | None = None
    note: str = ""
    by: str = ""
    at: str = ""

    @model_validator(mode="after")
    def _reasoned(self) -> Decision:
        if self.verdict == "reject" and self.reason is None:
            raise ValueError("a rejection names its reason")
        if self.verdict == "accept" and self.reason is not None:
            raise ValueError("an acceptance has no reason")
        if self.reason == "other" and not self.note.strip():
            raise ValueError("'other' needs a note saying what")
        return self


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for n, line in iter_lines(path):  # a byte that is not UTF-8: one line naming it
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{path}:{n}: bad JSON ({exc})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise DatasetError(f"{path}:{n}: a line must be a JSON object with an 'id'")
        out.append(obj)
    return out


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Replace ``path`` at once (a stop never leaves half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Build:
    """A build folder's instances and review entries, and the decisions on them."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not (self.folder / INSTANCES_FILE).is_file():
            raise DatasetError(f"{self.folder}: no {INSTANCES_FILE}: not a SceneFunRI folder "
                               "(make one with `unseen data build`)")
        self.instances = _read_jsonl(self.folder / INSTANCES_FILE)
        self.entries = {e["id"]: e for e in _read_jsonl(self.folder / REVIEW_FILE)}
        for line in self.instances:  # an instance the build listed no entry for
            self.entries.setdefault(line["id"], {"id": line["id"]})

    def decision(self, iid: str) -> Decision | None:
        raw = self.entries.get(iid, {}).get("decision")
        return Decision.model_validate(raw) if raw else None

    def candidates(self) -> list[dict[str, Any]]:
        """Every instance a person reviews: those in ``instances.jsonl``, then the rejected
        (kept in their entries), in their order."""
        live = {line["id"] for line in self.instances}
        gone = [e["instance"] for e in self.entries.values()
                if e["id"] not in live and isinstance(e.get("instance"), dict)]
        return self.instances + gone

    def undecided(self) -> list[dict[str, Any]]:
        return [c for c in self.candidates() if self.decision(c["id"]) is None]

    def decide(self, iid: str, decision: Decision) -> None:
        """Record ``decision`` for instance ``iid`` and write both files: a rejected instance
        leaves ``instances.jsonl`` (its line kept in its entry), an accepted one is in it."""
        line = next((c for c in self.candidates() if c["id"] == iid), None)
        if line is None:
            raise KeyError(iid)
        entry = dict(self.entries.get(iid) or {"id": iid})
        entry["decision"] = decision.model_dump()
        if decision.verdict == "reject":
            entry["instance"] = line
            self.instances = [x for x in self.instances if x["id"] != iid]
        else:
            entry.pop("instance", None)
            if all(x["id"] != iid for x in self.instances):
                self.instances.append(line)
        self.entries[iid] = entry
        _write_jsonl(self.folder / REVIEW_FILE, list(self.entries.values()))
        _write_jsonl(self.folder / INSTANCES_FILE, self.instances)

    def counts(self) -> dict[str, int]:
        """How many accepted, rejected (and by reason), undecided."""
        c: Counter = Counter()
        for cand in self.candidates():
            d = self.decision(cand["id"])
            if d is None:
                c["undecided"] += 1
            else:
                c[d.verdict] += 1
                if d.reason:
                    c[f"reject:{d.reason}"] += 1
        return dict(c)


def carry_over(out: str | Path, lines: list[dict[str, Any]],
               review: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A rebuild's instance lines and review entries with the decisions already in ``out``
    kept by instance id: a rejected instance stays out of the lines (its line goes into its
    entry), an accepted one stays in. Entries of instances the rebuild no longer makes are
    kept too, so a decision is never lost."""
    old = {e["id"]: e for e in _read_jsonl(Path(out) / REVIEW_FILE) if e.get("decision")}
    made = {line["id"] for line in lines}
    entries = {e["id"]: dict(e) for e in review}
    for line in lines:
        entries.setdefault(line["id"], {"id": line["id"]})
    kept = []
    for line in lines:
        prior = old.get(line["id"])
        if prior is not None:
            entries[line["id"]]["decision"] = prior["decision"]
            if prior["decision"].get("verdict") == "reject":
                entries[line["id"]]["instance"] = line
                continue
        kept.append(line)
    gone = [e for iid, e in old.items() if iid not in made]
    return kept, list(entries.values()) + gone


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
