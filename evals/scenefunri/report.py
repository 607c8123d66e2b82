"""Comparison tables from run directories: one row per (model, strategy).

Every number is derived from the journals alone. Metrics are the paper's aggregates ×100;
beside them the cost: answered %, calls, tokens and seconds per instance.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...engine.journal import JOURNAL, iter_records
from .metrics import aggregate

METRIC_COLUMNS = ("cacc75", "cacc50", "miou", "dist")
HEADERS = {
    "model": "model", "strategy": "strategy", "n": "n", "answered": "answered %",
    "cacc75": "CAcc@75", "cacc50": "CAcc@50", "miou": "mIoU", "dist": "Dist",
    "calls": "calls/inst", "input_tokens": "in tok/inst", "output_tokens": "out tok/inst",
    "seconds": "s/inst",
}
LOWER_IS_BETTER = {"dist"}


class RunDirError(ValueError):
    """A path that is not a run directory."""


def journal_of(run_dir: str | Path) -> Path:
    path = Path(run_dir) / JOURNAL
    if not path.is_file():
        raise RunDirError(f"{run_dir}: not a run directory (no {JOURNAL})")
    return path


def current_records(run_dirs: Iterable[str | Path]) -> Iterable[dict[str, Any]]:
    """The last record of each key across run directories, streamed per directory."""
    for run_dir in run_dirs:
        last: dict[str, dict[str, Any]] = {}
        for rec in iter_records(journal_of(run_dir)):
            last[rec["key"]] = rec
        yield from last.values()


def summarize(run_dirs: Iterable[str | Path], baseline: str | None = None) -> list[dict[str, Any]]:
    """Rows keyed ``model``, ``strategy``, ``n``, ``answered``, the metrics and cost columns.

    With ``baseline`` (a strategy label), each row of a model also gets ``delta_<metric>``
    against that model's baseline row, as in the paper's Table 3.
    """
    groups: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"metrics": [], "answered": 0, "calls": 0, "in": 0, "out": 0, "sec": 0.0,
                 "simulated": False, "backend": ""}
    )
    for rec in current_records(run_dirs):
        g = groups[(rec["model"], rec["strategy"])]
        g["metrics"].append(rec.get("metrics") or {})
        g["answered"] += rec["status"] == "answered"
        g["simulated"] = g["simulated"] or rec.get("simulated", False)
        g["backend"] = rec["backend"]
        g["sec"] += rec.get("seconds", 0.0)
        for step in rec.get("steps", []):
            reply = step["reply"]
            g["calls"] += not reply.get("cached", False)
            usage = reply.get("usage") or {}
            g["in"] += usage.get("input_tokens", 0)
            g["out"] += usage.get("output_tokens", 0)
    rows = []
    for (model, strat), g in sorted(groups.items()):
        n = len(g["metrics"])
        rows.append({
            "model": model, "strategy": strat, "backend": g["backend"],
            "simulated": g["simulated"], "n": n,
            "answered": 100 * g["answered"] / n,
            **aggregate(g["metrics"]),
            "calls": g["calls"] / n, "input_tokens": g["in"] / n, "output_tokens": g["out"] / n,
            "seconds": g["sec"] / n,
        })
    if baseline:
        base = {r["model"]: r for r in rows if r["strategy"] == baseline}
        if not base:
            raise RunDirError(f"baseline strategy {baseline!r} is not in these runs")
        for r in rows:
            b = base.get(r["model"])
            for m in METRIC_COLUMNS:
                r[f"delta_{m}"] = r[m] - b[m] if b and r is not b else None
    return rows


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.{digits}f}"
    return str(v)


def _tag(r: dict[str, Any]) -> str:
    """Rows not measured on a real model say so."""
    if r["backend"].startswith("baseline"):
        return " (rule)"
    return " (sim)" if r["simulated"] else ""


def _cells(r: dict[str, Any], delta_fmt: str = "{:+.2f}") -> list[str]:
    out = [r["model"] + _tag(r), r["strategy"], str(r["n"]),
           _fmt(r["answered"], 1)]
    for m in METRIC_COLUMNS:
        cell = _fmt(r[m])
        d = r.get(f"delta_{m}")
        if d is not None:
            cell += " " + delta_fmt.format(d)
        out.append(cell)
    out += [_fmt(r["calls"]), _fmt(r["input_tokens"], 0), _fmt(r["output_tokens"], 0),
            _fmt(r["seconds"], 3)]
    return out


_COLS = ["model", "strategy", "n", "answered", *METRIC_COLUMNS, "calls", "input_tokens",
         "output_tokens", "seconds"]


def render(rows: list[dict[str, Any]], fmt: str = "table", width: int | None = None) -> str | Any:
    """Rows as ``json``, ``csv``, ``md`` or ``latex`` text, or a rich Table for ``table``.

    A table narrower than 110 columns (``width``) leaves out tokens and seconds per instance.
    """
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        keys = list(rows[0].keys()) if rows else _COLS
        w = csv.DictWriter(buf, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    headers = [HEADERS[c] for c in _COLS]
    if fmt == "md":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
        return "\n".join(lines)
    if fmt == "latex":
        esc = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("@", "@")  # noqa: E731
        lines = [r"\begin{tabular}{ll" + "r" * (len(headers) - 2) + "}", r"\toprule",
                 " & ".join(esc(h) for h in headers) + r" \\", r"\midrule"]
        lines += [" & ".join(esc(c) for c in _cells(r, "({:+.2f})")) + r" \\" for r in rows]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines)
    if fmt == "table":
        from rich import box
        from rich.table import Table

        sim = any(r["simulated"] for r in rows)
        narrow = width is not None and width < 110
        table = Table(title="SceneFunRI (metrics ×100)" + (" · SIMULATED rows marked (sim)" if sim else ""),
                      box=box.SIMPLE_HEAD, pad_edge=False,
                      caption="tokens and s/inst left out at this width; --format md has all"
                      if narrow else None)
        short = ["model", "strategy", "n", "ans%", "CAcc@75", "CAcc@50", "mIoU", "Dist",
                 "calls", "tok in/out", "s/inst"][: 9 if narrow else 11]
        for i, h in enumerate(short):
            if i < 2:
                table.add_column(h, min_width=10 if i == 0 else 8)
            else:
                table.add_column(h, justify="right", no_wrap=True)
        for r in rows:
            cells = _cells(r)
            for j, m in enumerate(METRIC_COLUMNS):
                d = r.get(f"delta_{m}")
                if d:
                    better = d < 0 if m in LOWER_IS_BETTER else d > 0
                    cells[4 + j] = f"[{'green' if better else 'red'}]{cells[4 + j]}[/]"
            extra = [] if narrow else [f"{cells[9]}/{cells[10]}", cells[11]]
            table.add_row(*cells[:9], *extra)
        return table
    raise ValueError(f"unknown format {fmt!r}; choose table, json, csv, md or latex")
