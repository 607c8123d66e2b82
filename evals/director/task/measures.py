"""Director Task measures (§3 "Measures"), per reply: the benchmark's scorer.

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

A measure that does not apply to a reply is absent (never 0), so rates are shares of the
replies it applies to. Unanswered replies carry no measures (only the scene strata); rates
are over answered ones. The rows an analysis reads, with the measures derived from these and
those of the coded traces, are ``analysis.rows``.
"""

from __future__ import annotations

from typing import Any

from ....engine.types import Instance


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


def strata(instance: Instance) -> dict[str, float]:
    """Scene properties a comparison may stratify by (kept for unanswered replies too)."""
    key = instance.truth
    return {"hidden_top_digit": float(key["hidden_digit"] == max(key["digits"])),
            "apparent_flag": float(bool(key.get("apparent_size_flag")))}
