"""``compare --paper``: the SceneFunRI paper's Tables 2 and 3 laid out as the paper lays them
out, its quoted rows beside ours.

- **Table 2** (the basic prompt, our ``direct``): the models grouped in the paper's series
  (Qwen 3.5, InternVL3, Gemma 3, Spatial Reasoning, Gemini, then the human baseline); under
  each paper row, our row of the same model. As the paper marks them: the best value of each
  metric within a series (bold and underlined there; bold here, ``**x**`` in markdown) and the
  best of all models, the human baseline aside (yellow there; ``★`` here). Paper and ours are
  marked each among its own rows. Our models the paper does not have close the table as a
  series of their own.
- **Table 3**, its two panels: strong-instruction prompts (Hidden, Common, Both) and
  reasoning prompts (CoT, CoT-SR), each prompt with its change against the basic prompt of the
  same model: as printed in the paper, and ours (our row minus our ``direct`` row of that
  model: the paired difference when ``compare --baseline direct`` computed it, else the
  difference of the two rows' means).

Where our runs have no row for a paper model or prompt, the row says so. A paper model is
matched to one of ours by name, letters and digits only, ignoring case and an ``org/``
prefix (``Qwen/Qwen3.5-27B`` is the paper's ``Qwen3.5-27B``); our name may go on past the
paper's with a ``-`` suffix (``gemini-3-flash-preview`` is ``Gemini 3 Flash``). One family has
several spellings: InternVL3_5, InternVL3.5 and InternVL3 are one (``paper.SAME_FAMILY``), so
``OpenGVLab/InternVL3_5-38B`` is Table 2's ``InternVL3-38B`` and Table 3's ``InternVL3_5-38B``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .cells import HEADERS, LOWER_IS_BETTER, METRIC_COLUMNS, model_label
from .paper import CITATION, NOTE, SAME_FAMILY, STRATEGY

PANELS = (("Strong-instruction prompting (the paper's Table 3, left)", ("Hidden", "Common", "Both")),
          ("Reasoning-based prompting (the paper's Table 3, right)", ("CoT", "CoT-SR")))
HUMAN_SERIES = "Human"
OTHER_SERIES = "Not in the paper"
MISSING = "–"


# each family's spellings at the start of a name, up to its "-" (the size)
_FAMILIES = [(re.compile(rf"^(?:{'|'.join(map(re.escape, names))})(?=-|$)"), names[0])
             for names in SAME_FAMILY]


def _key(name: str) -> str:
    base = name.rsplit("/", 1)[-1].lower()
    for spelling, family in _FAMILIES:
        base = spelling.sub(family, base)
    return re.sub(r"[^a-z0-9]", "", base)


def matches(paper_model: str, ours: str) -> bool:
    """Whether our model name is the paper's ``paper_model`` (see the module's docstring)."""
    p, o = _key(paper_model), ours.rsplit("/", 1)[-1].lower()
    if _key(ours) == p:
        return True
    # a longer name of ours: the paper's name, then a "-" and more ("-preview", "-001")
    m = re.match(r"(.*?)-[a-z0-9.]+$", o)
    while m:
        if _key(m.group(1)) == p:
            return True
        m = re.match(r"(.*?)-[a-z0-9.]+$", m.group(1))
    return False


@dataclass
class Line:
    """One row of a layout: ``label`` (the model, or the prompt), ``source`` (``paper`` or
    ``ours``), a value per metric with its change (Table 3) and marks (Table 2), or ``note``
    in place of the values."""

    label: str
    source: str
    values: dict[str, float | None]
    changes: dict[str, float | None]
    note: str = ""
    series_best: frozenset[str] = frozenset()
    overall_best: frozenset[str] = frozenset()
    heading: bool = False  # a series title or a model of Table 3: no values


def _better(m: str) -> Callable[[Sequence[float]], float]:
    return min if m in LOWER_IS_BETTER else max


def _best(group: list[Line]) -> dict[str, float]:
    """The best value of each metric among ``group``."""
    out = {}
    for m in METRIC_COLUMNS:
        vals = [v for x in group if (v := x.values.get(m)) is not None]
        if vals:
            out[m] = _better(m)(vals)
    return out


def _mark(lines: list[Line], groups: dict[str, list[Line]]) -> None:
    """Series bests within each group and the best overall (of every line given); ties are
    all marked."""
    for group in groups.values():
        best = _best(group)
        for x in group:
            x.series_best = frozenset(m for m, v in best.items() if x.values.get(m) == v)
    best = _best(lines)
    for x in lines:
        x.overall_best = frozenset(m for m, v in best.items() if x.values.get(m) == v)


def _ours(r: dict[str, Any]) -> Line:
    return Line(model_label(r), "ours", {m: r.get(m) for m in METRIC_COLUMNS}, {})


def _missing() -> Line:
    """Our row where the runs have none: "–" in every cell."""
    return Line("", "ours", {}, {}, note=MISSING)


def table2(run: list[dict[str, Any]], quoted: list[dict[str, Any]]) -> list[Line]:
    """The lines of Table 2: a heading per series, each paper model's row and ours beneath."""
    basic = [r for r in run if r["strategy"] == STRATEGY["basic"] and r.get("kind") != "rule"]
    paper2 = [r for r in quoted if r.get("table") == "2"]
    used: set[int] = set()
    out: list[Line] = []
    paper_groups: dict[str, list[Line]] = {}
    our_groups: dict[str, list[Line]] = {}
    for series in dict.fromkeys(r["series"] for r in paper2):
        out.append(Line(series if series == HUMAN_SERIES else f"{series} series", "", {}, {},
                        heading=True))
        for p in (r for r in paper2 if r["series"] == series):
            line = Line(p["model"], "paper", {m: p[m] for m in METRIC_COLUMNS}, {})
            out.append(line)
            if series != HUMAN_SERIES:
                paper_groups.setdefault(series, []).append(line)
            human = series == HUMAN_SERIES
            mine = [i for i, r in enumerate(basic) if i not in used and (
                r.get("kind") == "human" if human else matches(p["model"], r["model"]))]
            used.update(mine)
            for i in mine:
                ours = _ours(basic[i])
                ours.label = "" if basic[i]["model"] == p["model"] else ours.label
                out.append(ours)
                if not human:
                    our_groups.setdefault(series, []).append(ours)
            if not mine:
                out.append(_missing())
    others = [_ours(r) for i, r in enumerate(basic) if i not in used]
    if others:
        out.append(Line(OTHER_SERIES, "", {}, {}, heading=True))
        out += others
        our_groups[OTHER_SERIES] = others
    _mark([x for g in paper_groups.values() for x in g], paper_groups)
    _mark([x for g in our_groups.values() for x in g], our_groups)
    return out


def table3(run: list[dict[str, Any]], quoted: list[dict[str, Any]],
           prompts: Sequence[str]) -> list[Line]:
    """The lines of one panel of Table 3: per model a heading, then per prompt the paper's row
    and ours, each with its change against the basic prompt."""
    paper3 = [r for r in quoted if r.get("table") == "3" and r["paper_setting"] in prompts]
    by_model: dict[str, dict[str, dict[str, Any]]] = {}
    for r in run:
        by_model.setdefault(r["model"], {})[r["strategy"]] = r
    out: list[Line] = []
    used: set[str] = set()

    def ours_line(model: str | None, prompt: str) -> Line:
        rows = by_model.get(model or "", {})
        r, base = rows.get(STRATEGY[prompt]), rows.get(STRATEGY["basic"])
        if r is None:
            return _missing()
        line = _ours(r)
        line.label = ""
        for m in METRIC_COLUMNS:
            if r.get("baseline") == STRATEGY["basic"] and r.get(f"delta_{m}") is not None:
                line.changes[m] = r[f"delta_{m}"]
            elif base is not None and r.get(m) is not None and base.get(m) is not None:
                line.changes[m] = r[m] - base[m]
        return line

    for model in dict.fromkeys(r["model"] for r in paper3):
        mine = next((k for k in by_model if k not in used and matches(model, k)), None)
        if mine is not None:
            used.add(mine)
        heading = model if mine in (None, model) else f"{model} (ours: {mine})"
        out.append(Line(heading, "", {}, {}, heading=True))
        for p in (r for r in paper3 if r["model"] == model):
            out.append(Line(p["paper_setting"], "paper", {m: p[m] for m in METRIC_COLUMNS},
                            {m: p.get(f"delta_{m}") for m in METRIC_COLUMNS}))
            out.append(ours_line(mine, p["paper_setting"]))
    for model, rows in by_model.items():
        if model in used or not any(STRATEGY[p] in rows for p in prompts):
            continue
        kind = next(iter(rows.values())).get("kind")
        if kind == "rule":
            continue
        out.append(Line(model_label(next(iter(rows.values()))), "", {}, {}, heading=True))
        for prompt in prompts:
            if STRATEGY[prompt] in rows:
                ours = ours_line(model, prompt)
                ours.label = prompt
                out.append(ours)
    return out


def notes2() -> list[str]:
    return [f"paper: {NOTE} ({CITATION}); ours: the runs' {STRATEGY['basic']} rows (the basic "
            "prompt); intervals are in the comparison table",
            "bold: the best in its series; ★: the best of all models, the human baseline "
            "aside (as the paper marks them); paper and ours each among its own rows",
            f"{MISSING}: the runs have no such row"]


def notes3() -> list[str]:
    return [f"paper: {NOTE} ({CITATION}), with its printed change against the basic prompt; "
            f"ours: our row and its change against our {STRATEGY['basic']} row of the same model",
            "green: better than the basic prompt, red: worse (Dist: lower is better)",
            f"{MISSING}: the runs have no such row; a model with no paper rows is not in the "
            "paper"]


TITLE2 = "The paper's Table 2: the basic prompt, models by series (×100)"


def headers() -> list[str]:
    return [HEADERS[m] + ("↓" if m in LOWER_IS_BETTER else "↑") for m in METRIC_COLUMNS]
