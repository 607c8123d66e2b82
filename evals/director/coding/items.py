"""Coding a study's reasoning traces (§5 "Reasoning traces", Appendix E): which items, in
which batches, and where their codes are kept.

An *item* is one reply's reasoning trace: the last step of a trajectory whose reply carries
one. The coder sees only a neutral id, the trace and the reply (main pass), or a new neutral
id, the chosen block and the trace (``second`` pass: the hidden-block choices again, without
the visibility report). Test traces written to a known code (:func:`..sim.traces.test_traces`)
are mixed in unmarked, and so are a number of real items a second time under new ids
(:func:`repeat_items`); the report checks the coder against both.

Items are shuffled with the seed and cut into batches; each batch is one engine instance, so
a coding pass is an ordinary resumable run in ``RUN/coding/<pass>/`` (``run.json``,
``trajectories.jsonl``) beside ``items.jsonl``, which maps every neutral id back to its
trajectory (model, batch, condition, scene, sample, chosen block) or to its known codes.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ....engine.errors import UnseenError
from ....engine.journal import JOURNAL, latest
from ....engine.records import StepRecord, TrajectoryRecord
from ....engine.types import Instance
from ....engine.userfiles import read_json_lines
from ..sim.traces import test_traces
from ..study.study_file import reply_row, run_model_names
from ..task.codebook import Coded, Codes

CODING_DIR = "coding"
ITEMS_FILE = "items.jsonl"
RETRIES_FILE = "retries.jsonl"  # one line per round of re-asking the items left uncoded
PASSES = ("main", "second")


class CodingError(UnseenError, ValueError):
    """A coding pass that cannot start or be read."""


def pass_dir(run_dir: str | Path, pass_: str) -> Path:
    if pass_ not in PASSES:
        raise CodingError(f"unknown coding pass {pass_!r}; known: {', '.join(PASSES)}")
    return Path(run_dir) / CODING_DIR / pass_


def neutral_id(seed: int, pass_: str, key: str) -> str:
    """An id that tells the coder nothing (not the model, condition or scene)."""
    return "item-" + hashlib.sha256(f"{seed}/{pass_}/{key}".encode()).hexdigest()[:10]


def _traced_step(rec: TrajectoryRecord) -> StepRecord | None:
    for step in reversed(rec.get("steps") or []):
        if (step.get("reply") or {}).get("reasoning"):
            return step
    return None


def select(run_dir: str | Path, *, pass_: str = "main", models: Iterable[str] = (),
           conditions: Iterable[str] = (), batches: Iterable[str] = (),
           sets: Iterable[str] = (), seed: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The study's items for a pass, and how many selected replies carry no trace.

    The main pass takes every selected reply with a trace; the second pass only answered
    hidden-block choices. Filters match the design's model names, conditions, batches, sets.
    """
    run_dir = Path(run_dir)
    journal = run_dir / JOURNAL
    if not journal.is_file():
        raise CodingError(f"{run_dir} holds no {JOURNAL}: not a run directory")
    names = run_model_names(run_dir)
    want = {k: set(v) for k, v in (("model", models), ("condition", conditions),
                                   ("batch", batches), ("set", sets))}
    items, untraced = [], 0
    for key, rec in latest(journal).items():
        if "condition" not in (rec.get("params") or {}):
            continue
        row = {"key": key, **reply_row(rec, names)}
        if any(v and row[k] not in v for k, v in want.items()):
            continue
        pred = rec.get("prediction") if rec.get("status") == "answered" else None
        block = pred.get("block") if isinstance(pred, dict) else None
        metrics = rec.get("metrics") or {}
        role = None if block is None else ("hidden" if metrics.get("hidden") == 1.0 else
                                           "dv" if metrics.get("dv") == 1.0 else "other")
        if pass_ == "second" and role != "hidden":
            continue
        step = _traced_step(rec)
        if step is None:
            untraced += 1
            continue
        items.append({**row, "id": neutral_id(seed, pass_, key), "test": False,
                      "trace": step["reply"]["reasoning"], "reply": step["reply"]["text"],
                      "block": block, "role": role})
    items.sort(key=lambda it: it["id"])
    return items, untraced


def test_items(n: int, *, pass_: str = "main", seed: int = 0) -> list[dict[str, Any]]:
    """``n`` test traces written to a known code (``known``), as items with neutral ids."""
    out = []
    for i, (trace, codes, block) in enumerate(test_traces(n, random.Random(f"tests/{seed}/{pass_}"))):
        out.append({"key": f"test-{i:03d}", "id": neutral_id(seed, pass_, f"test-{i}"),
                    "test": True, "trace": trace, "reply": json.dumps({"block": block}),
                    "block": block, "known": codes.model_dump()})
    return out


test_items.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def is_real(item: dict[str, Any]) -> bool:
    """A study reply's trace in its first coding: neither a test trace nor a repeat."""
    return not item["test"] and not item.get("repeat_of")


def repeat_items(items: list[dict[str, Any]], n: int, *, pass_: str = "main",
                 seed: int = 0) -> list[dict[str, Any]]:
    """``n`` of the real ``items`` (seeded draw; all of them when fewer), each again under a
    new neutral id with ``repeat_of`` naming its first id: coded a second time within the
    same pass (Appendix E, "The real items, coded a second time in the main run, received
    the same two codes on all 30")."""
    real = [it for it in items if is_real(it)]
    drawn = random.Random(f"repeats/{seed}/{pass_}").sample(real, min(n, len(real)))
    return [{**it, "id": neutral_id(seed, pass_, f"repeat/{it['key']}"), "repeat_of": it["id"]}
            for it in drawn]


def with_tests(items: list[dict[str, Any]], n_tests: int, *, pass_: str = "main",
               seed: int = 0, repeats: int = 0) -> list[dict[str, Any]]:
    """``items``, ``n_tests`` test traces written to a known code and ``repeats`` real items
    coded a second time (:func:`repeat_items`), in one seeded random order. A test item's
    reply names only the block, so its intended ``sees`` code never rests on a report."""
    out = (items + test_items(n_tests, pass_=pass_, seed=seed)
           + repeat_items(items, repeats, pass_=pass_, seed=seed))
    random.Random(f"order/{seed}/{pass_}").shuffle(out)
    return out


def batches(items: list[dict[str, Any]], size: int, *, pass_: str = "main",
            prefix: str | None = None) -> list[Instance]:
    """Consecutive batches of ``size`` items as engine instances (``meta["items"]``: what the
    coder is shown; never the model, condition or scene), named ``PREFIX-NNNN``."""
    if size < 1:
        raise CodingError("the batch size must be at least 1")
    out = []
    for k in range(0, len(items), size):
        shown = [{"id": it["id"], "trace": it["trace"], "reply": it["reply"], "block": it["block"]}
                 for it in items[k:k + size]]
        out.append(Instance(id=f"{prefix or pass_}-{k // size:04d}", image="", width=1, height=1,
                            meta={"items": shown, "second_pass": pass_ == "second"}))
    return out


def retry_rounds(folder: Path) -> list[list[str]]:
    """The item ids of each earlier round of re-asking, in order."""
    path = folder / RETRIES_FILE
    if not path.is_file():
        return []
    rounds: list[list[str]] = []
    for n, rec in enumerate(read_json_lines(path), 1):
        ids = rec.get("items")
        if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            raise CodingError(f"{path}:{n}: items must be a list of item ids")
        rounds.append(ids)
    return rounds


def all_batches(folder: Path, items: list[dict[str, Any]], size: int,
                pass_: str) -> list[Instance]:
    """The pass's batches: the items in order, then each recorded retry round's items."""
    out = batches(items, size, pass_=pass_)
    by_id = {it["id"]: it for it in items}
    for r, ids in enumerate(retry_rounds(folder), 1):
        out += batches([by_id[i] for i in ids], size, pass_=pass_, prefix=f"{pass_}-retry{r}")
    return out


def add_retry_round(folder: Path, items: list[dict[str, Any]], finished: set[str],
                    batch_ids: list[str]) -> list[str]:
    """Record a new round with the items no finished batch coded; returns their ids (none:
    nothing recorded). Every batch must have finished first (``finished``: instance ids
    with a journal record), so a batch not yet run is never asked twice."""
    pending = [b for b in batch_ids if b not in finished]
    if pending:
        raise CodingError(f"{len(pending)} batches have not run yet (e.g. {pending[0]}): "
                          "finish the pass first (rerun without --retry-uncoded)")
    codes = load_codes(folder)
    left = [it["id"] for it in items if it["id"] not in codes]
    if left:
        with open(folder / RETRIES_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"items": left}) + "\n")
    return left


def save_items(folder: Path, items: list[dict[str, Any]]) -> None:
    """Write ``items.jsonl``, or check that an earlier pass into ``folder`` coded the same
    items in the same order (so its finished batches still mean the same)."""
    path = folder / ITEMS_FILE
    lines = "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)
    if path.is_file():
        if path.read_text(encoding="utf-8") != lines:
            raise CodingError(
                f"{path} lists other items (the run has new replies, or other filters, seed, "
                f"or test count were given): code into a fresh pass or remove {folder}")
        return
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(lines, encoding="utf-8")


def load_items(folder: Path) -> list[dict[str, Any]]:
    path = folder / ITEMS_FILE
    if not path.is_file():
        raise CodingError(f"{folder} holds no {ITEMS_FILE}: run `unseen director code` first")
    items = read_json_lines(path)
    for n, it in enumerate(items, 1):
        if not all(isinstance(it.get(k), str) for k in ("id", "key")):
            raise CodingError(f"{path}:{n}: an item needs a string id and key")
    return items


def load_codes(folder: Path) -> dict[str, Coded]:
    """Every item's codes from a pass's journal (an item coded in a later record wins)."""
    out: dict[str, Coded] = {}
    for rec in latest(folder / JOURNAL).values():
        pred = rec.get("prediction") if rec.get("status") == "answered" else None
        for item, code in ((pred or {}).get("codes") or {}).items():
            out[item] = Coded.model_validate(code)
    return out


def coded_items(run_dir: str | Path, pass_: str = "main") -> list[dict[str, Any]]:
    """The pass's items, each with ``codes`` (a :class:`Codes` dict, or None when the coder
    gave none it could use) and ``quotes`` (the coder's quotes, or None)."""
    folder = pass_dir(run_dir, pass_)
    codes = load_codes(folder)
    out = []
    for it in load_items(folder):
        c = codes.get(it["id"])
        out.append({**it, "codes": c.codes().model_dump() if c else None,
                    "quotes": c.model_dump(include={"reading_quote", "sees_quote",
                                                    "works_out_quote"}) if c else None})
    return out


def codes_by_key(run_dir: str | Path, pass_: str = "main") -> dict[str, Coded]:
    """Trajectory key → the coder's codes with quotes (empty when the pass has not run)."""
    folder = Path(run_dir) / CODING_DIR / pass_
    if not (folder / ITEMS_FILE).is_file():
        return {}
    codes = load_codes(folder)
    return {it["key"]: codes[it["id"]] for it in load_items(folder)
            if is_real(it) and it["id"] in codes}


def code_measures(codes: dict[str, Any], role: str | None) -> dict[str, float]:
    """A coded reply's measures for the study's analysis (``analysis.rows``): the reading
    (``own_view``, ``dv_reading``, ``digit_reading``, ``prior_reading``), ``works_out``, and
    ``hidden_unseen``: a hidden-block choice whose trace takes the director not to see it."""
    c = Codes.model_validate(codes)
    out = {"own_view": float(c.reading == "own_view"),
           "dv_reading": float(c.reading == "director_view"),
           "digit_reading": float(c.reading == "largest_digit"),
           "prior_reading": float(c.reading == "prior_knowledge"),
           "works_out": float(c.works_out)}
    if role is not None:  # the reply chose a block (``role``: hidden, dv or other)
        out["hidden_unseen"] = float(role == "hidden" and c.sees == "unseen")
    return out


def trace_measures(run_dir: str | Path) -> dict[str, dict[str, float]]:
    """Trajectory key → coded measures, from the main pass (empty when there is none)."""
    folder = Path(run_dir) / CODING_DIR / "main"
    if not (folder / ITEMS_FILE).is_file():
        return {}
    return {it["key"]: code_measures(it["codes"], it.get("role"))
            for it in coded_items(run_dir, "main") if is_real(it) and it["codes"]}
