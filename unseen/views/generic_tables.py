"""The generic views' tables: a verdict from the scorer's metrics, one row per (model,
strategy) with the mean of every metric, as a rich table, JSON, CSV, markdown, LaTeX or
HTML."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from rich import box as rich_box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table

from ..engine.journal import RESUMABLE_ERRORS
from ..engine.rundir import Head
from .common import e, fold_label, number, value_text, who
from .select import NoMatch

FORMATS = ("table", "json", "csv", "md", "latex")


def verdict(head: Head) -> str:
    """correct / wrong by the first 0-or-1 metric; unanswered, error (a provider's failure),
    or answered (no such metric)."""
    if head.status != "answered":
        return "error" if head.error_kind in RESUMABLE_ERRORS else "unanswered"
    for v in head.metrics.values():
        if isinstance(v, int | float) and v in (0, 1):
            return "correct" if v >= 1 else "wrong"
    return "answered"


def metric_rows(heads: Iterable[Head]) -> list[dict[str, Any]]:
    """One row per (model, strategy): ``model`` (marked by ``who``), ``strategy``, ``n``,
    ``instances``, ``answered`` (%), ``kind`` and the mean of each metric over the
    trajectories that have it."""
    groups: dict[tuple[str, str], list[Head]] = defaultdict(list)
    for h in heads:
        groups[(h.model, h.strategy)].append(h)
    rows = []
    for (model, strategy), hs in groups.items():
        sums: dict[str, list[float]] = defaultdict(list)
        for h in hs:
            for k, v in h.metrics.items():
                if isinstance(v, int | float):
                    sums[k].append(float(v))
        kind = hs[0].kind
        rows.append({"model": model, "label": who(model, kind), "strategy": strategy,
                     "kind": kind, "n": len(hs), "instances": len({h.instance_id for h in hs}),
                     "answered": 100 * sum(h.answered for h in hs) / len(hs),
                     **{k: sum(v) / len(v) for k, v in sums.items()}})
    order = {"model": 0, "human": 1, "sim": 2, "rule": 3}
    rows.sort(key=lambda r: (order.get(str(r["kind"]), 9), r["model"], r["strategy"]))
    return rows


def metric_names(rows: list[dict[str, Any]]) -> list[str]:
    fixed = {"model", "label", "strategy", "kind", "n", "instances", "answered"}
    return list(dict.fromkeys(k for r in rows for k in r if k not in fixed))


def render_rows(rows: list[dict[str, Any]], fmt: str, title: str,
                width: int | None = None) -> str | RenderableType:
    """The metric rows as a rich table or as json, csv, md or latex text."""
    names = metric_names(rows)
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["model", "label", "strategy", "kind", "n",
                                            "instances", "answered", *names])
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    head = ["model", "strategy", "n", "answered %", *names]

    def cells(r: dict[str, Any]) -> list[str]:
        n = str(r["n"]) if r["n"] == r["instances"] else f"{r['instances']} ({r['n']} traj.)"
        return [r["label"], r["strategy"], n, f"{r['answered']:.1f}",
                *(number(r[k]) if k in r else "" for k in names)]

    if fmt == "md":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "--:|" * (len(head) - 2)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |"
                  for r in rows]
        return "\n".join(lines)
    if fmt == "latex":
        def tex(s: str) -> str:
            return "".join("\\" + c if c in "&%$#_{}" else c for c in s)
        lines = [r"\begin{tabular}{ll" + "r" * (len(head) - 2) + "}", r"\toprule",
                 " & ".join(tex(h) for h in head) + r" \\", r"\midrule"]
        lines += [" & ".join(tex(c) for c in cells(r)) + r" \\" for r in rows]
        return "\n".join([*lines, r"\bottomrule", r"\end{tabular}"])
    if fmt != "table":
        raise NoMatch(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    sim = any(r["kind"] == "sim" for r in rows)
    table = Table(title=title + (" · SIMULATED rows marked (sim)" if sim else ""),
                  box=rich_box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  title_justify="left", caption="metrics: the mean over trajectories, as the "
                  "benchmark's scorer writes them", caption_justify="left")
    table.add_column("model", overflow="fold")
    table.add_column("strategy", overflow="fold")
    for h in head[2:]:
        table.add_column(h, justify="right", no_wrap=True)
    for r in rows:
        c = cells(r)
        table.add_row(escape(c[0]), escape(fold_label(c[1])), *c[2:])
    return table



def rows_html(rows: list[dict[str, Any]]) -> str:
    """The generic metric rows (``generic.metric_rows``) as an HTML table."""
    names = metric_names(rows)
    out = ['<div class=wrap><table class="summary"><thead><tr><th class=l>model</th>'
           "<th class=l>strategy</th><th>n</th><th>answered %</th>"
           + "".join(f"<th>{e(k)}</th>" for k in names) + "</tr></thead><tbody>"]
    for r in rows:
        cells = [f"<td class=l>{e(r['label'])}</td>",
                 f"<td class='l text'>{e(fold_label(r['strategy']))}</td>",
                 f"<td>{e(r['n'])}</td>", f"<td>{r['answered']:.1f}</td>"]
        cells += [f"<td>{e(value_text(r[k])) if k in r else ''}</td>" for k in names]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)
