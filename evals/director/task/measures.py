"""Director Task measures (§3 "Measures"), per reply, and the rows analysis reads.

Per answered reply, with the scene's key:

* ``accuracy``: the visibility report is correct, i.e. lists exactly the blocks the director
  can see (as a set); only where the prompt asks for the report (``visible``);
* ``hidden``: the choice names the hidden block (whatever the report says);
* ``dv``: the choice names the director-view block (the largest block the director sees);
* ``joint``: a hidden-block choice beside a correct visibility report;
* ``ldv``: the choice names the largest-digit visible block, only in scenes where that block
  is not the director-view block;
* ``ldv_other``: among choices other than the director-view block (in those scenes), the
  choice takes the largest-digit visible block; its mean is the share of Table 4;
* ``count``: the block-count answer is right; ``known``: the knowledge report lists exactly
  the visible blocks;
* ``report_excludes_hidden`` (a filter, not a rate): the reply's report (``visible`` or
  ``known``) leaves the hidden block out.

Derived when the rows are read (:func:`derived`, so runs scored before they existed have them):

* ``hidden_listed``: a hidden-block choice whose report lists the hidden block (Table 9:
  "all with reports that list the hidden block as visible"), where the reply has a report;
* ``hidden_left_out``: among the replies whose report leaves the hidden block out, a
  hidden-block choice (Table 12: "Among the replies that leave it out, ... still choose it").

Replies whose reasoning trace has been coded (``unseen director code``) also carry the
trace measures of :func:`.coding.items.code_measures`: ``own_view``, ``dv_reading``,
``digit_reading``, ``prior_reading``, ``works_out`` and ``hidden_unseen``.

A measure that does not apply to a reply is absent (never 0), so rates are shares of the
replies it applies to. Unanswered replies carry no measures (only the scene strata); rates
are over answered ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ....engine.journal import JOURNAL, latest
from ....engine.types import Instance
from ...costs import record_usage
from ..coding.items import trace_measures
from ..study.study_file import (
    STUDY_FILE,
    model_names,
    read_study,
    reply_row,
    run_model_names,
    run_simulated,
)

# kept here for the callers that read them from this module
__all__ = ["STUDY_FILE", "derived", "model_names", "read_study", "reply_row", "rows",
           "run_model_names", "run_simulated", "score", "strata"]

def score(instance: Instance, prediction: Any) -> dict[str, float]:
    """The measures of one reply (``prediction``: the parsed fields, or None)."""
    key = instance.truth
    visible = set(key["visible_digits"])
    hidden, dv, ldv = key["hidden_digit"], key["director_view_digit"], key["largest_digit_visible"]
    out = strata(instance)
    if not isinstance(prediction, dict):
        return out
    report = None
    if "visible" in prediction:
        report = set(prediction["visible"])
        out["accuracy"] = float(report == visible)
    if "known" in prediction:
        out["known"] = float(set(prediction["known"]) == visible)
        report = set(prediction["known"]) if report is None else report
    if report is not None:
        out["report_excludes_hidden"] = float(hidden not in report)
    if "count" in prediction:
        out["count"] = float(prediction["count"] == len(key["digits"]))
    if "block" in prediction:
        block = prediction["block"]
        out["hidden"] = float(block == hidden)
        out["dv"] = float(block == dv)
        if "accuracy" in out:
            out["joint"] = float(out["hidden"] and out["accuracy"])
        if ldv is not None:
            out["ldv"] = float(block == ldv)
            if block != dv:
                out["ldv_other"] = float(block == ldv)
    return out


def derived(row: dict[str, Any]) -> dict[str, float]:
    """The measures derived from a row's stored ones (module docstring)."""
    if "hidden" not in row or "report_excludes_hidden" not in row:
        return {}
    out = {"hidden_listed": float(row["hidden"] == 1 and row["report_excludes_hidden"] == 0)}
    if row["report_excludes_hidden"] == 1:
        out["hidden_left_out"] = float(row["hidden"])
    return out


def strata(instance: Instance) -> dict[str, float]:
    """Scene properties a comparison may stratify by (kept for unanswered replies too)."""
    key = instance.truth
    return {"hidden_top_digit": float(key["hidden_digit"] == max(key["digits"])),
            "apparent_flag": float(bool(key.get("apparent_size_flag")))}


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
