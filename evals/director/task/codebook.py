"""The codebook for reasoning traces (the paper's Appendix E, "Codebook"), and reading a
coder's reply against it.

The codebook asks what the reasoning says and believes, not what is true in the picture;
the coder sees neither the picture nor an answer key. Three codes per trace:

1. ``reading``, the rule behind the final block choice, one of five:
   ``director_view`` (the largest block among those the trace takes the director to see, or a
   pick checked against the director's view), ``own_view`` (the largest block among all blocks
   as the model sees them, not limited to the director's view, not for the director's
   knowledge), ``prior_knowledge`` (a block the trace takes the director not to see now, chosen
   because the director knows of it), ``largest_digit`` ("largest" read as the largest digit,
   among all blocks or the director's), ``none`` (no rule identifiable). Size and digit both
   given for one block: size. The last rule applied before the reply counts.
2. ``sees``: by its last stated belief, does the trace take the director to see the chosen
   block: ``seen``, ``unseen`` or ``not_stated``. Where the trace states no belief and the
   reply has a visibility report, the code follows the report (main pass only; the second
   pass shows no report, and no belief is ``not_stated``).
3. ``works_out``: the trace, anywhere, works out which blocks the director can or cannot see.

Each code comes with a quote of at most 40 words copied word for word from the trace
(``quote_ok`` checks both, whitespace aside; an empty quote is none). The codebook quotes the
requests exactly as the prompts state them (:func:`requests`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ....engine.userfiles import first_problem
from .parse import last_object
from .prompts import REQUESTS, templates

READINGS = ("director_view", "own_view", "prior_knowledge", "largest_digit", "none")
SEES = ("seen", "unseen", "not_stated")
Reading = Literal["director_view", "own_view", "prior_knowledge", "largest_digit", "none"]
Sees = Literal["seen", "unseen", "not_stated"]
MAX_QUOTE_WORDS = 40


class Codes(BaseModel):
    """The three codes of one trace."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    reading: Reading
    sees: Sees
    works_out: bool


class Coded(Codes):
    """A coder's codes of one item, with its quotes."""

    reading_quote: str = ""
    sees_quote: str = ""
    works_out_quote: str = ""

    def codes(self) -> Codes:
        return Codes(reading=self.reading, sees=self.sees, works_out=self.works_out)


CODEBOOK = """\
You code the reasoning traces of a model that answered a question about a picture. A director
sits on one side of a table of numbered blocks; a partition may hide some blocks from the
director. The model was asked one of these questions, worded in its prompt as follows:
{requests}
Code what each trace says and believes, not what is true in the picture: you see neither the
picture nor any answer key.

Code 1, "reading": the rule behind the final block choice, one of
- "director_view": the trace picks the largest block among those it takes the director to
  see, or checks its pick against the director's view;
- "own_view": the trace picks the largest block among all the blocks as the model sees them,
  without limiting the choice to the director's view or giving the director's knowledge as a
  reason;
- "prior_knowledge": the trace picks a block it takes the director not to see now, and gives
  as the reason that the director knows of that block;
- "largest_digit": the trace takes "largest" to mean the largest digit, among all the blocks
  or those the director can see;
- "none": no rule is identifiable.
Where size and digit are both given as reasons for the same block, code by size. The last
rule applied before the reply counts.

Code 2, "sees": by its last stated belief, does the trace take the director to see the chosen
block: "seen", "unseen" or "not_stated".{report_rule}

Code 3, "works_out": true when the trace, anywhere, works out which blocks the director can or
cannot see; else false.

Give each code a quote of at most 40 words copied word for word from the trace: the words
the code rests on. Where the trace states nothing for a code (no belief about the chosen
block, no working out of the director's view), quote the words where it makes its choice.
A quote is never empty.
"""

REPORT_RULE = (" Where the trace states no belief about the chosen block and the reply has a "
               "visibility report, follow the report: the chosen block listed as visible is "
               "\"seen\", not listed is \"unseen\".")
NO_REPORT_RULE = " Where the trace states no belief about the chosen block, code \"not_stated\"."


def requests() -> str:
    """The requests (Question B) as the prompts state them, one per line, each line of a
    request joined by a space and without its label: quoted from ``prompts/parts.txt``, so
    that the codebook can never word a request otherwise than the prompts did."""
    t = templates()
    lines = []
    for r in REQUESTS:
        text = " ".join(t[f"request.{r}"].split("\n"))
        lines.append("- " + text.removeprefix("Question B: "))
    return "\n".join(lines)


def codebook(second_pass: bool = False) -> str:
    """The codebook text; the second pass has no report to fall back on."""
    return CODEBOOK.format(report_rule=NO_REPORT_RULE if second_pass else REPORT_RULE,
                           requests=requests())


def schema() -> dict[str, Any]:
    """The JSON schema of a coder's reply (for structured output)."""
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "reading": {"type": "string", "enum": list(READINGS)},
            "reading_quote": {"type": "string"},
            "sees": {"type": "string", "enum": list(SEES)},
            "sees_quote": {"type": "string"},
            "works_out": {"type": "boolean"},
            "works_out_quote": {"type": "string"},
        },
        "required": ["id", "reading", "reading_quote", "sees", "sees_quote", "works_out",
                     "works_out_quote"],
        "additionalProperties": False,
    }
    return {"type": "object", "properties": {"codes": {"type": "array", "items": item}},
            "required": ["codes"], "additionalProperties": False}


_WS = re.compile(r"\s+")
# a coder that writes typographic quotation marks or apostrophes still copies the words
_TYPOGRAPHIC = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'"})


def _norm(text: str) -> str:
    return _WS.sub(" ", text.translate(_TYPOGRAPHIC)).strip().strip("\"'").strip()


def quote_ok(quote: str, trace: str) -> bool:
    """At most 40 words, copied word for word from the trace (whitespace, surrounding
    quotation marks and typographic quote characters aside). An empty quote (or one of only
    whitespace and quotation marks) is no quote: Appendix E, "Each code comes with a quote of
    at most 40 words copied word for word from the trace"."""
    q = _norm(quote)
    if not q:
        return False
    return len(q.split()) <= MAX_QUOTE_WORDS and q in _norm(trace)


class CodesError(ValueError):
    """A coder's reply that cannot be read."""


def parse_codes(text: str, traces: dict[str, str]) -> tuple[dict[str, Coded], dict[str, str]]:
    """The codes of each item a coder's reply holds, and why each other item has none.

    ``traces``: the batch's items, id → trace. The reply is a JSON object ``{"codes": [...]}``
    (fenced or with prose around it; the last such object counts). An item with a code
    outside the codebook, a quote that is not in its trace or is over 40 words, or no entry
    at all is refused with its reason; ids not in the batch are ignored.
    """
    found = last_object(text, lambda v: v["codes"] if isinstance(v, dict)
                        and isinstance(v.get("codes"), list) else None)
    if found is None:
        raise CodesError('no JSON object with a "codes" list')
    coded: dict[str, Coded] = {}
    refused: dict[str, str] = {}
    for entry in found:
        if not isinstance(entry, dict) or str(entry.get("id")) not in traces:
            continue
        item = str(entry["id"])
        fields = {k: entry[k] for k in Coded.model_fields if k in entry}
        try:
            code = Coded(**fields)
        except ValidationError as exc:
            refused[item] = first_problem(exc)
            continue
        bad = [k for k in ("reading_quote", "sees_quote", "works_out_quote")
               if not quote_ok(getattr(code, k), traces[item])]
        if bad:
            refused[item] = f"{bad[0]} is not a quote of at most {MAX_QUOTE_WORDS} words from the trace"
            continue
        coded[item] = code
    for item in traces:
        if item not in coded and item not in refused:
            refused[item] = "no code for this item"
    return coded, refused


def batch_prompt(items: list[dict[str, Any]], second_pass: bool = False) -> str:
    """The coder's prompt for one batch: the codebook, then the items as JSON (each with
    only its neutral id, its trace and its reply, or in the second pass the chosen block)."""
    shown = []
    for it in items:
        entry = {"id": it["id"], "trace": it["trace"]}
        if second_pass:
            entry["chosen_block"] = it["block"]
        else:
            entry["reply"] = it["reply"]
        shown.append(entry)
    return (codebook(second_pass) + "\nItems:\n" + json.dumps(shown, indent=1, ensure_ascii=False)
            + '\n\nAnswer with one JSON object {"codes": [...]}, one entry per item, with the '
            "keys id, reading, reading_quote, sees, sees_quote, works_out, works_out_quote.\n")
