"""What the coded traces say (§5, Figure 5 and Table 11), and how far the coder can be trusted.

``summarize(run_dir)`` gives, from the main pass: per model, batch and condition the share of
traces with each reading and the share that work out the director's view; per model, batch
and condition the hidden-block choices by whether the trace takes the director to see the
chosen block; the test traces given their intended codes; items the coder left uncoded. With a
second pass: for each hidden-block choice coded in both, whether the ``sees`` code is the
same, and Cohen's κ with its interval.

Every rendering says which replies a simulator gave (their models shown as ``NAME (sim)``)
and whether the coder was a simulator.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ....engine.journal import read_run_json
from ..study.study_file import run_simulated
from ..task.codebook import READINGS, SEES
from .agreement import cohen_kappa, kappa_interval
from .items import CODING_DIR, ITEMS_FILE, coded_items, is_real, pass_dir


def _groups(items: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        if is_real(it):
            out[(it["model"], it["batch"], it["condition"])].append(it)
    return dict(sorted(out.items()))


def _tests(items: list[dict[str, Any]]) -> dict[str, Any]:
    tests = [it for it in items if it["test"]]
    coded = [it for it in tests if it["codes"]]
    same = {k: sum(it["codes"][k] == it["known"][k] for it in coded)
            for k in ("reading", "sees", "works_out")}
    both = sum(it["codes"]["reading"] == it["known"]["reading"]
               and it["codes"]["sees"] == it["known"]["sees"] for it in coded)
    return {"n": len(tests), "coded": len(coded), "reading_and_sees": both, **same}


def summarize(run_dir: str | Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    if not (run_dir / CODING_DIR / "main" / ITEMS_FILE).is_file():
        from .items import CodingError

        raise CodingError(f"{run_dir} has no coded traces: run `unseen director code {run_dir} "
                          "--coder SPEC` first")
    main = coded_items(run_dir, "main")
    readings, hidden = [], []
    for (model, batch, cond), its in _groups(main).items():
        coded = [it["codes"] for it in its if it["codes"]]
        n = len(coded)
        count = Counter(c["reading"] for c in coded)
        readings.append({"model": model, "batch": batch, "condition": cond, "traces": len(its),
                         "coded": n, **{r: count[r] / n if n else None for r in READINGS},
                         "works_out": sum(c["works_out"] for c in coded) / n if n else None})
        hid = [it["codes"] for it in its if it["codes"] and it.get("role") == "hidden"]
        if hid:
            sees = Counter(c["sees"] for c in hid)
            hidden.append({"model": model, "batch": batch, "condition": cond,
                           "hidden_choices": len(hid), **{s: sees[s] for s in SEES}})
    out: dict[str, Any] = {
        "run": str(run_dir), "simulated": run_simulated(run_dir), "coders": _coders(run_dir),
        "readings": readings, "hidden": hidden,
        "examples": _examples(main),
        "tests": {"main": _tests(main)},
        "uncoded": {"main": sum(1 for it in main if not it["codes"] and is_real(it))},
        "repeats": _repeats(main),
    }
    if (run_dir / CODING_DIR / "second" / ITEMS_FILE).is_file():
        second = coded_items(run_dir, "second")
        out["tests"]["second"] = _tests(second)
        out["uncoded"]["second"] = sum(1 for it in second if not it["codes"] and is_real(it))
        out["second_pass"] = _second_pass(main, second)
    return out


def _coders(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per pass that has run, the coder's backend spec and whether it is a simulator."""
    out = {}
    for p in ("main", "second"):
        path = pass_dir(run_dir, p) / "run.json"
        if path.is_file():
            backends = read_run_json(path.parent).get("backends") or [{}]
            out[p] = {"spec": backends[0].get("spec", "?"),
                      "simulated": bool(backends[0].get("simulated"))}
    return out


def notices(summary: dict[str, Any]) -> list[str]:
    """What is simulated: the replies of some models, the coder of a pass."""
    out = []
    if summary.get("simulated"):
        out.append("SIMULATED: the replies and traces of " + ", ".join(summary["simulated"])
                   + " come from the offline simulator (shown as \"(sim)\"), not from those "
                   "models; they are no finding about any model.")
    sim_coders = [f"{p} pass ({c['spec']})" for p, c in summary.get("coders", {}).items()
                  if c["simulated"]]
    if sim_coders:
        out.append("SIMULATED coder: the codes of the " + ", ".join(sim_coders) + " come from the "
                   "simulator reading its own traces back, not from a coding model.")
    return out


def _repeats(main: list[dict[str, Any]]) -> dict[str, Any]:
    """The real items coded a second time in the pass: how many, how many got codes both
    times, and of those how many got the same reading and ``sees`` code (the paper's "the
    same two codes"), the same reading, the same ``sees`` and the same ``works_out``."""
    first = {it["id"]: it["codes"] for it in main if is_real(it)}
    again = [it for it in main if it.get("repeat_of")]
    both = [(first[it["repeat_of"]], it["codes"]) for it in again
            if it["codes"] and first.get(it["repeat_of"])]
    same = {k: sum(a[k] == b[k] for a, b in both) for k in ("reading", "sees", "works_out")}
    two = sum(a["reading"] == b["reading"] and a["sees"] == b["sees"] for a, b in both)
    return {"n": len(again), "coded_both": len(both), "same_two_codes": two, **same}


def _examples(main: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model and reading, the first coded trace in scene order (then condition, sample)
    with the coder's quote, as §5 quotes the first own-view trace."""
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for it in sorted((it for it in main if is_real(it) and it["codes"]),
                     key=lambda it: (it["scene"], it["condition"], it["sample"])):
        k = (it["model"], it["codes"]["reading"])
        if k not in first:
            first[k] = {"model": it["model"], "reading": it["codes"]["reading"],
                        "scene": it["scene"], "condition": it["condition"],
                        "sample": it["sample"], "choice": it.get("role"),
                        "quote": it["quotes"]["reading_quote"]}
    order = {r: i for i, r in enumerate(READINGS)}
    return sorted(first.values(), key=lambda e: (e["model"], order[e["reading"]]))


def _second_pass(main: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model, batch and condition: hidden-block choices coded in both passes whose
    ``sees`` code is the same, and κ over them with its interval."""
    first = {it["key"]: it["codes"] for it in main if is_real(it) and it["codes"]}
    pairs: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    for it in second:
        if is_real(it) and it["codes"] and it["key"] in first:
            pairs[(it["model"], it["batch"], it["condition"])].append(
                (first[it["key"]]["sees"], it["codes"]["sees"]))
    rows = []
    for (model, batch, cond), ps in sorted(pairs.items()):
        a, b = [p[0] for p in ps], [p[1] for p in ps]
        lo, hi = kappa_interval(a, b)
        rows.append({"model": model, "batch": batch, "condition": cond, "n": len(ps),
                     "same": sum(x == y for x, y in ps),
                     "unseen_first": a.count("unseen"), "kappa": cohen_kappa(a, b),
                     "kappa_lo": lo, "kappa_hi": hi})
    return rows


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


READING_NAMES = {"director_view": "director view", "own_view": "own view",
                 "prior_knowledge": "prior knowl.", "largest_digit": "largest digit",
                 "none": "no rule"}
SEES_NAMES = {"seen": "seen", "unseen": "unseen", "not_stated": "not stated"}


def tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """The report's sections: (title, column names, rows); a simulated model as ``NAME (sim)``."""
    sim = set(summary.get("simulated") or ())

    def shown(model: str) -> str:
        return f"{model} (sim)" if model in sim else model

    sections: list[tuple[str, list[str], list[list[Any]]]] = []
    head = ["model", "batch", "condition", "traces", "coded",
            *(READING_NAMES[r] for r in READINGS), "works out"]
    sections.append(("Readings of \"the largest block\" (share of coded traces)", head,
                     [[shown(r["model"]), r["batch"], r["condition"], r["traces"], r["coded"],
                       *(_pct(r[k]) for k in READINGS), _pct(r["works_out"])]
                      for r in summary["readings"]]))
    sections.append(("Hidden-block choices: does the trace take the director to see the block?",
                     ["model", "batch", "condition", "choices", *SEES_NAMES.values()],
                     [[shown(r["model"]), r["batch"], r["condition"], r["hidden_choices"],
                       *(r[s] for s in SEES)] for r in summary["hidden"]]))
    sections.append(("First trace of each reading in scene order, with the coder's quote",
                     ["model", "reading", "scene", "condition", "choice", "quote"],
                     [[shown(e["model"]), READING_NAMES[e["reading"]], e["scene"], e["condition"],
                       e["choice"] or "–", e["quote"] or "–"] for e in summary["examples"]]))
    if "second_pass" in summary:
        sections.append(("Second pass (trace and chosen block only): same 'sees' code",
                         ["model", "batch", "condition", "n", "same", "κ", "95% interval"],
                         [[shown(r["model"]), r["batch"], r["condition"], r["n"], r["same"],
                           f"{r['kappa']:.2f}", f"[{r['kappa_lo']:.2f}, {r['kappa_hi']:.2f}]"]
                          for r in summary["second_pass"]]))
    checks = [[p, t["n"], t["coded"], t["reading_and_sees"], t["works_out"],
               summary["uncoded"][p]] for p, t in summary["tests"].items()]
    sections.append(("Coder checks: test traces written to a known code",
                     ["pass", "tests", "coded", "reading and sees as intended",
                      "works-out as intended", "real items uncoded"], checks))
    rep = summary.get("repeats")
    if rep:
        sections.append(("Coder checks: real items coded a second time in the main pass",
                         ["items", "coded both times", "same reading and sees",
                          "same reading", "same sees", "same works-out"],
                         [[rep["n"], rep["coded_both"], rep["same_two_codes"], rep["reading"],
                           rep["sees"], rep["works_out"]]]))
    return sections


_LEFT = {"model", "batch", "condition", "pass", "reading", "scene", "choice", "quote"}


def render(summary: dict[str, Any], fmt: str = "table", width: int = 120) -> str:
    """``table`` (rich, for a terminal ``width`` wide), ``md``, ``html`` (tables for the
    export) or ``json``."""
    if fmt == "json":
        return json.dumps({**summary, "notices": notices(summary)}, indent=2)
    sections = tables(summary)
    notes = notices(summary)
    if fmt == "html":
        from html import escape as html_escape

        from ....engine.sanitize import shown

        def escape(text: str) -> str:  # no control byte or secret reaches the page
            return html_escape(shown(text))

        def cls(col: str) -> str:  # the export's stylesheet right-aligns cells but these
            return " class=l" if col in _LEFT else ""

        parts = []
        for title, cols, rows in sections:
            head = "".join(f"<th{cls(c)}>{escape(str(c))}</th>" for c in cols)
            body = "".join("<tr>" + "".join(f"<td{cls(k)}>{escape(str(c))}</td>"
                                            for k, c in zip(cols, row, strict=True)) + "</tr>"
                           for row in rows)
            parts.append(f"<h3>{escape(title)}</h3><table><thead><tr>{head}</tr></thead>"
                         f"<tbody>{body}</tbody></table>")
        return "\n".join([*(f"<p class=banner><b>{escape(n)}</b></p>" for n in notes), *parts])
    if fmt == "md":
        parts = []
        for title, cols, rows in sections:
            lines = [f"### {title}", "", "| " + " | ".join(cols) + " |",
                     "|" + "---|" * len(cols)]
            lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
            parts.append("\n".join(lines))
        return "\n\n".join([*(f"**{n}**" for n in notes), *parts]) + "\n"
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    console = Console(file=buf, width=width, force_terminal=False)
    for n in notes:
        console.print(n, markup=False, highlight=False)
    for title, cols, rows in sections:
        table = Table(title=title, title_justify="left")
        for c in cols:
            table.add_column(c, justify="left" if c in _LEFT else "right")
        for row in rows:
            table.add_row(*(str(c) for c in row))
        console.print(table)
    return buf.getvalue()
