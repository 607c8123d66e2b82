"""The human check of the coder (Appendix E, "Human check"): answer sheets for people to code
by the same codebook, and their agreement with the automatic codes and with each other.

A sheet holds traces drawn ``per_stratum`` from each stratum (model × condition × the block
chosen: director-view, hidden or other), without regard to any automatic code and with no
model and scene twice, plus ``tests`` test traces written to a known code, unmarked, in one
seeded order. Each row shows a new neutral id, the trace and the reply, and empty columns
``reading``, ``sees`` and ``works_out`` to fill in. The key (``RUN/coding/sheets/KEY``) maps
the ids back; it is never part of the sheet.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from ....engine.userfiles import read_json_lines, read_text
from ..task.codebook import READINGS, SEES
from .agreement import cohen_kappa, kappa_interval
from .items import CODING_DIR, CodingError, coded_items, is_real, neutral_id, select, test_items

SHEET_COLUMNS = ("id", "trace", "reply", "reading", "sees", "works_out")
ROLES = ("dv", "hidden", "other")


def draw(run_dir: str | Path, *, per_stratum: int = 3, tests: int = 6, seed: int = 0,
         models: list[str] | None = None, conditions: list[str] | None = None) -> list[dict[str, Any]]:
    """The sheet's items, in the order shown (module docstring)."""
    items, _ = select(run_dir, models=models or (), conditions=conditions or ())
    strata: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        if it["role"] is not None:
            strata[(it["model"], it["condition"], it["role"])].append(it)
    rng = random.Random(f"sheet/{seed}")
    used: set[tuple[str, str]] = set()
    chosen = []
    for key in sorted(strata):
        pool = strata[key]  # in id order, as select gives them
        rng.shuffle(pool)
        taken = 0
        for it in pool:
            if taken == per_stratum:
                break
            if (it["model"], it["scene"]) in used:
                continue
            used.add((it["model"], it["scene"]))
            chosen.append({**it, "stratum": "/".join(key)})
            taken += 1
    for it in chosen:
        it["id"] = neutral_id(seed, "sheet", it["key"])
    chosen += test_items(tests, pass_="sheet", seed=seed)
    rng.shuffle(chosen)
    return chosen


def write_sheet(items: list[dict[str, Any]], sheet: Path, key: Path) -> None:
    """The sheet (CSV for people) and its key (JSON lines, kept apart)."""
    sheet.parent.mkdir(parents=True, exist_ok=True)
    with open(sheet, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(SHEET_COLUMNS)
        for it in items:
            w.writerow([it["id"], it["trace"], it["reply"], "", "", ""])
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items),
                   encoding="utf-8")


def sheet_key_path(run_dir: str | Path, seed: int = 0) -> Path:
    return Path(run_dir) / CODING_DIR / "sheets" / f"key-{seed}.jsonl"


_TRUE = {"true", "yes", "1", "y"}
_FALSE = {"false", "no", "0", "n"}


def read_sheet(path: Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    """A filled sheet's codes by id; a missing column, an unknown id, a code outside the
    codebook, an item left blank or one coded on two rows with different codes is an error
    naming the file and row (a row repeated with the same codes counts once)."""
    if not path.is_file():
        raise CodingError(f"no sheet at {path}")
    try:
        rows = list(csv.DictReader(io.StringIO(read_text(path), newline="")))
    except csv.Error as exc:
        raise CodingError(f"{path}: not a readable CSV sheet ({exc})") from None
    out: dict[str, dict[str, Any]] = {}
    first_row: dict[str, int] = {}
    for n, row in enumerate(rows, 2):
        missing = [c for c in ("id", "reading", "sees", "works_out") if c not in row]
        if missing:
            raise CodingError(f"{path}: no column {missing[0]!r}")
        if any(not isinstance(row[c], str) for c in ("id", "reading", "sees", "works_out")):
            raise CodingError(f"{path}:{n}: the row has fewer cells than the header")
        item = row["id"].strip()
        if item not in ids:
            raise CodingError(f"{path}:{n}: id {item!r} is not on this sheet's key")
        reading = row["reading"].strip().lower().replace(" ", "_").replace("-", "_")
        sees = row["sees"].strip().lower().replace(" ", "_").replace("-", "_")
        works = row["works_out"].strip().lower()
        if reading not in READINGS:
            raise CodingError(f"{path}:{n}: reading {row['reading']!r} is not one of {', '.join(READINGS)}")
        if sees not in SEES:
            raise CodingError(f"{path}:{n}: sees {row['sees']!r} is not one of {', '.join(SEES)}")
        if works not in _TRUE | _FALSE:
            raise CodingError(f"{path}:{n}: works_out {row['works_out']!r} is not true or false")
        codes = {"reading": reading, "sees": sees, "works_out": works in _TRUE}
        if item in out and out[item] != codes:  # the same codes twice is one coding
            raise CodingError(f"{path}:{n}: id {item!r} is coded again, otherwise than on row "
                              f"{first_row[item]}: keep one of the rows")
        out[item] = codes
        first_row.setdefault(item, n)
    left = ids - set(out)
    if left:
        raise CodingError(f"{path}: {len(left)} items of the key are not coded (e.g. {sorted(left)[0]})")
    return out


def _pair(a: list[str], b: list[str], seed: int) -> dict[str, Any]:
    lo, hi = kappa_interval(a, b, seed=seed)
    return {"n": len(a), "same": sum(x == y for x, y in zip(a, b, strict=True)),
            "kappa": cohen_kappa(a, b), "kappa_lo": lo, "kappa_hi": hi}


def agreement(run_dir: str | Path, sheets: list[Path], seed: int = 0) -> dict[str, Any]:
    """Each coder's test traces, and on the real traces the reading and ``sees`` codes of
    every pair among the automatic coder (main pass) and the people."""
    key_path = sheet_key_path(run_dir, seed)
    if not key_path.is_file():
        raise CodingError(f"no sheet key at {key_path}: draw a sheet with `unseen director "
                          "sheet` first (with the same --seed)")
    key = read_json_lines(key_path)
    ids = {it["id"] for it in key}
    coders = {p.stem: read_sheet(p, ids) for p in sheets}
    auto = {it["key"]: it["codes"] for it in coded_items(run_dir, "main") if is_real(it)}
    real = [it for it in key if not it["test"]]
    if all(it["key"] in auto and auto[it["key"]] for it in real):
        coders = {"automatic": {it["id"]: auto[it["key"]] for it in real}, **coders}
    tests = {name: sum(codes[it["id"]] == it["known"] for it in key if it["test"])
             for name, codes in coders.items() if name != "automatic"}
    names = list(coders)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            row: dict[str, Any] = {"a": a, "b": b}
            for code in ("reading", "sees"):
                row[code] = _pair([coders[a][it["id"]][code] for it in real],
                                  [coders[b][it["id"]][code] for it in real], seed)
            pairs.append(row)
    return {"items": len(real), "tests": sum(it["test"] for it in key), "test_right": tests,
            "pairs": pairs, "automatic": "automatic" in coders}
