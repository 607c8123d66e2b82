"""The rows a Director study's analysis reads: one per reply of a run directory, its
measures (``task.measures.score``, stored by the run) joined with those derived from them and
with the measures of its coded reasoning trace.

Derived when the rows are read (:func:`derived`, so runs scored before they existed have them):

* ``hidden_listed``: a hidden-block choice whose report lists the hidden block (Table 9:
  "all with reports that list the hidden block as visible"), where the reply has a report;
* ``hidden_left_out``: among the replies whose report leaves the hidden block out, a
  hidden-block choice (Table 12: "Among the replies that leave it out, ... still choose it").

Replies whose reasoning trace has been coded (``unseen director code``) also carry the
trace measures of :func:`..coding.items.code_measures`: ``own_view``, ``dv_reading``,
``digit_reading``, ``prior_reading``, ``works_out`` and ``hidden_unseen``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ....engine.journal import JOURNAL, latest
from ...costs import record_usage
from ..coding.items import trace_measures
from ..study.study_file import reply_row, run_model_names


def derived(row: dict[str, Any]) -> dict[str, float]:
    """The measures derived from a row's stored ones (module docstring)."""
    if "hidden" not in row or "report_excludes_hidden" not in row:
        return {}
    out = {"hidden_listed": float(row["hidden"] == 1 and row["report_excludes_hidden"] == 0)}
    if row["report_excludes_hidden"] == 1:
        out["hidden_left_out"] = float(row["hidden"])
    return out


def rows(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """One row per reply of a study run (the last record of each key).

    Keys: model, backend, simulated (a simulated respondent gave the reply), batch,
    condition, set, scene, sample, answered, error, the measures that apply (0.0/1.0), the
    derived ones, and the scene strata ``hidden_top_digit`` (the hidden block carries the
    largest digit on the table) and ``apparent_flag``; ``served_model`` (the backend's
    model, which a price is looked up by) and ``usage`` (the reply's token counts)."""
    run_dir = Path(run_dir)
    names = run_model_names(run_dir)
    coded = trace_measures(run_dir)
    for rec in latest(run_dir / JOURNAL).values():
        params = rec["params"]
        if "condition" not in params:
            continue
        row = {
            **reply_row(rec, names),
            "simulated": bool(rec["simulated"]),
            "answered": rec["status"] == "answered",
            "error": err["kind"] if (err := rec["error"]) else None,
            "length_stops": int(rec["notes"].get("length_stops", 0)),
            "served_model": rec["model"], "usage": record_usage(rec),
            **rec["metrics"],
            **coded.get(rec["key"], {}),
        }
        yield {**row, **derived(row)}
