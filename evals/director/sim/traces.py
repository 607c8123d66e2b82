"""Reasoning traces of the simulated Director respondent, written to known codes
(:mod:`..task.codebook`), and a reader that recovers those codes from the text.

A trace is three to five English sentences composed from templates: two opening fillers, the
working out of the director's view (``works_out``), the reading sentence
(``reading``), the belief about the chosen block (``sees``). :func:`read_trace` is the exact
inverse for these traces, which makes the simulator a known truth for checking a coder
(:func:`test_traces`: the paper mixes such traces into the coded ones).
"""

from __future__ import annotations

import random
import re
from typing import Any

from ..task.codebook import READINGS, SEES, Codes

# --- writing -----------------------------------------------------------------------------------

# Every sentence states at most the one belief of its family, so that the codes a coder reads
# are exactly the codes written. The openings state no belief about visibility at all.
_OPENINGS = ("The director sits across the table from me.",
             "Let me look at the numbered blocks on the table.",
             "There are several numbered blocks on the table.")
# the request, restated: still no belief (so every trace has at least three sentences)
_REQUESTS = ("The director asked me to move the largest block.",
             "I need to decide which block the instruction refers to.",
             "The instruction is to move the largest block.")
_WORKS_OUT = ("The partition hides block {hidden} from the director, so the director's view "
              "holds {visible}.",
              "Block {hidden} is behind the partition on the director's side, which leaves "
              "{visible} in the director's view.",
              "Working out the director's view, the partition covers block {hidden} and leaves "
              "{visible} in sight.")
# where the trace believes the director sees every block (its report lists the hidden one)
_WORKS_OUT_ALL = ("The partition hides no block from the director, so the director's view "
                  "holds {visible}.",
                  "Nothing is behind the partition on the director's side, which leaves "
                  "{visible} in the director's view.")
# this phrasing places the chosen block in the director's view, a belief about it: used only
# where the trace goes on to state that same belief
_DIRECTOR_VIEW_STATED = "Among the blocks the director can see, the largest is {block}."
_DIRECTOR_VIEW = ("Going by the director's perspective, the largest block is {block}.",
                  "The director means the largest block from their side of the table, which "
                  "is {block}.")
_READING = {
    "own_view": ('The phrasing "the largest block" likely means the largest among all blocks, '
                 "which is {block}.",
                 "The largest block on the whole table is {block}, so that is the one to move."),
    "prior_knowledge": ("The director placed block {block} earlier, so they know it is there "
                        "even though they cannot see it now.",
                        "The director put block {block} there before, so they know about it "
                        "even though they cannot see it now."),
    "largest_digit": ("The largest number among the blocks is {block}, so I take that one.",
                      "Reading largest as the biggest digit, block {block} has it."),
    "none": ("I will go with block {block}.", "My answer is block {block}."),
}
_SEES = {"seen": ("The director can see block {block}.",
                  "Block {block} is in the director's view."),
         "unseen": ("The director cannot see block {block} from where they sit.",
                    "Block {block} is out of the director's view.")}


def _blocks(digits: list[int]) -> str:
    """``blocks 1, 4 and 6``, ``block 5`` or ``no block``."""
    ds = [str(int(d)) for d in digits]
    if not ds:
        return "no block"
    if len(ds) == 1:
        return f"block {ds[0]}"
    return f"blocks {', '.join(ds[:-1])} and {ds[-1]}"


def check_codes(codes: Codes) -> None:
    """Raise ``ValueError`` for codes no trace can carry unambiguously: a prior-knowledge
    reading states that the director cannot see the block, and working out the director's
    view states a belief about every block, the chosen one included."""
    if codes.reading == "prior_knowledge" and codes.sees != "unseen":
        raise ValueError("a prior_knowledge reading states the block unseen: sees must be "
                         f"'unseen', not {codes.sees!r}")
    if codes.works_out and codes.sees == "not_stated":
        raise ValueError("working out the director's view states a belief about the chosen "
                         "block: sees cannot be 'not_stated'")


def valid_codes() -> list[Codes]:
    """Every combination of codes :func:`write_trace` writes."""
    out = []
    for reading in READINGS:
        for sees in SEES:
            for works_out in (False, True):
                c = Codes(reading=reading, sees=sees, works_out=works_out)
                try:
                    check_codes(c)
                except ValueError:
                    continue
                out.append(c)
    return out


def write_trace(codes: Codes, block: int, hidden: int, visible: list[int],
                rng: random.Random) -> str:
    """A reasoning trace whose codes under the codebook are exactly ``codes``, for a reply
    choosing ``block``; ``hidden`` is the block hidden from the director and ``visible`` the
    blocks the trace believes the director sees (where it lists ``hidden``, the trace believes
    nothing hidden). Raises ``ValueError`` for codes :func:`check_codes` refuses."""
    check_codes(codes)
    block, hidden = int(block), int(hidden)
    visible = sorted(int(d) for d in visible)
    sentences = [rng.choice(_OPENINGS), rng.choice(_REQUESTS)]
    if codes.works_out:
        forms = _WORKS_OUT_ALL if hidden in visible else _WORKS_OUT
        sentences.append(rng.choice(forms).format(hidden=hidden, visible=_blocks(visible)))
    if codes.reading == "director_view":
        forms = (_DIRECTOR_VIEW_STATED, *_DIRECTOR_VIEW) if codes.sees == "seen" else _DIRECTOR_VIEW
    else:
        forms = _READING[codes.reading]
    sentences.append(rng.choice(forms).format(block=block))
    # the prior-knowledge sentence already states the block unseen; restating it is optional
    restate = codes.reading != "prior_knowledge" or rng.random() < 0.5
    if codes.sees in _SEES and restate:
        sentences.append(rng.choice(_SEES[codes.sees]).format(block=block))
    return " ".join(sentences)


# --- reading -----------------------------------------------------------------------------------


def _pattern(template: str) -> re.Pattern[str]:
    """A template as a regex matching one whole sentence, its blanks as digits or lists."""
    parts = re.split(r"(\{\w+\})", template)
    blank = {"{block}": r"\d+", "{hidden}": r"\d+",
             "{visible}": r"(?:no block|block \d+|blocks (?:\d+, )*\d+ and \d+)"}
    return re.compile("".join(blank.get(p, re.escape(p)) for p in parts))


_READ_WORKS_OUT = [_pattern(t) for t in (*_WORKS_OUT, *_WORKS_OUT_ALL)]
_READ_READING = [(reading, _pattern(t)) for reading, forms in
                 [("director_view", (_DIRECTOR_VIEW_STATED, *_DIRECTOR_VIEW)), *_READING.items()]
                 for t in forms]
_READ_SEES = [(sees, _pattern(t)) for sees, forms in _SEES.items() for t in forms]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def read_trace(text: str) -> Codes:
    """The codes of a trace :func:`write_trace` wrote (its exact inverse). Sentences are
    matched whole against the templates; as the codebook says, the last reading and the last
    belief count, and a prior-knowledge sentence is a belief that the block is unseen. Any
    other text (a real model's trace) reads as ``none``, ``not_stated`` and no working out,
    except for template sentences it happens to hold. Never raises."""
    return _scan(text)[0]


def trace_quotes(text: str) -> dict[str, str]:
    """The sentence behind each code :func:`read_trace` reads (``reading_quote``,
    ``sees_quote``, ``works_out_quote``; empty where no sentence gave the code)."""
    return _scan(text)[1]


def last_sentence(text: str) -> str:
    """The trace's last non-empty sentence (whitespace collapsed)."""
    sentences = [s for s in _SENTENCE_END.split(" ".join(str(text).split())) if s.strip()]
    return sentences[-1] if sentences else ""


def _scan(text: Any) -> tuple[Codes, dict[str, str]]:
    reading: Any = "none"
    sees: Any = "not_stated"
    works_out = False
    quotes = {"reading_quote": "", "sees_quote": "", "works_out_quote": ""}
    if not isinstance(text, str):
        return Codes(reading=reading, sees=sees, works_out=works_out), quotes
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        if any(p.fullmatch(sentence) for p in _READ_WORKS_OUT):
            works_out = True
            quotes["works_out_quote"] = sentence
            continue
        found = next((r for r, p in _READ_READING if p.fullmatch(sentence)), None)
        if found is not None:
            reading = found
            quotes["reading_quote"] = sentence
            if found == "prior_knowledge":
                sees = "unseen"
                quotes["sees_quote"] = sentence
            continue
        found = next((s for s, p in _READ_SEES if p.fullmatch(sentence)), None)
        if found is not None:
            sees = found
            quotes["sees_quote"] = sentence
    return Codes(reading=reading, sees=sees, works_out=works_out), quotes


# --- the simulated reply's codes ----------------------------------------------------------------


def sim_codes(role: str, report: list[int] | None, works_out_question: bool, knobs: Any,
              rng: random.Random, chosen_hidden: bool = False) -> Codes:
    """The latent codes of a simulated reply whose chosen block has ``role`` (one of
    ``respondent.CHOICES``) and is (``chosen_hidden``) or is not the hidden block. A reply
    with a visibility report (``report``), or to a condition that asks one or a count
    (``works_out_question``), works out the director's view; others with probability
    ``trace_works_out``. ``knobs``: the :class:`.respondent.DirectorKnobs`."""
    if role == "own":
        reading = "prior_knowledge" if rng.random() < knobs.trace_prior else "own_view"
    else:
        reading = {"dv": "director_view", "ldv": "largest_digit", "other": "none"}[role]
    works_out = (works_out_question or report is not None
                 or rng.random() < knobs.trace_works_out)
    if reading == "prior_knowledge":
        sees = "unseen"
    elif works_out:
        # having worked out the view, the trace states a belief about the chosen block; for
        # the hidden block that is mostly (not always) the right one
        if chosen_hidden:
            sees = "unseen" if rng.random() < knobs.trace_states_unseen else "seen"
        else:
            sees = "seen"
    else:
        sees = "seen" if rng.random() < knobs.trace_states_seen else "not_stated"
    return Codes(reading=reading, sees=sees, works_out=works_out)


# --- test traces for a coder -------------------------------------------------------------------


def _scene(rng: random.Random) -> tuple[int, list[int]]:
    """A random scene: (hidden block, visible blocks), 4 to 7 distinct digits from 1 to 9."""
    digits = rng.sample(range(1, 10), rng.randint(4, 7))
    return digits[0], sorted(digits[1:])


def _block_for(codes: Codes, hidden: int, visible: list[int], rng: random.Random) -> int:
    """A chosen block that fits the codes, so a test trace reads as a plausible reply."""
    if codes.reading == "prior_knowledge" or (codes.reading == "own_view"
                                              and codes.sees == "unseen"):
        return hidden
    if codes.reading == "director_view":
        return max(visible)
    if codes.reading == "own_view":
        return max(hidden, *visible)
    if codes.reading == "largest_digit":
        return max(visible) if codes.sees == "seen" else max(hidden, *visible)
    return rng.choice([hidden, *visible])


def test_traces(n: int, rng: random.Random) -> list[tuple[str, Codes, int]]:
    """``n`` traces written to known codes, for checking a coder: ``(trace, codes, chosen
    block)``. They cycle through the valid combinations of codes (in an order that covers
    every reading, every sees value and both works_out values within the first five), each
    on a random scene."""
    # a director-view pick the trace then believes unseen codes unambiguously (the last belief
    # counts) but reads as a contradiction: no use for checking a coder
    combos = [c for c in valid_codes() if (c.reading, c.sees) != ("director_view", "unseen")]
    # lead with five combinations that together cover every value of every code
    lead = [Codes(reading="director_view", sees="seen", works_out=True),
            Codes(reading="own_view", sees="not_stated", works_out=False),
            Codes(reading="prior_knowledge", sees="unseen", works_out=False),
            Codes(reading="largest_digit", sees="unseen", works_out=True),
            Codes(reading="none", sees="seen", works_out=False)]
    rest = [c for c in combos if c not in lead]
    rng.shuffle(rest)
    order = lead + rest
    out = []
    for i in range(n):
        codes = order[i % len(order)]
        hidden, visible = _scene(rng)
        block = _block_for(codes, hidden, visible, rng)
        out.append((write_trace(codes, block, hidden, visible, rng), codes, block))
    return out


test_traces.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
