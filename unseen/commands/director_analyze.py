"""``unseen director analyze``: the study's tables, or the paper's tables and figures by number,
in one of four formats, and with ``--drop-apparent`` the verdicts that change against all
scenes.

Errors a user can cause raise :class:`evals.director.analysis.analyze.AnalysisError` (one line, exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..backends.prices import price_for
from ..engine.errors import warn
from ..engine.sanitize import shown
from ..evals.director.analysis.analyze import Analysis, AnalysisError, analyze_run, load_run
from ..evals.director.analysis.plots import plot_analysis as plot
from ..evals.director.analysis.tables import FORMATS, render

#: Where --paper writes the figures without --plots.
PAPER_FIGURES = "paper-figures"


def _coding(run_dir: Path) -> dict[str, Any] | None:
    """The coding summary of the run, or None when its traces have not been coded."""
    from ..evals.director.coding.items import CodingError
    from ..evals.director.coding.report import summarize

    try:
        return summarize(run_dir)
    except CodingError:
        return None


def incomplete(run_dir: Path, analysis: Analysis) -> str | None:
    """What a warning says of a journal that holds fewer replies than the design plans for
    its models (``Design.calls``) or ends in a torn line (a killed or truncated write); None
    for a complete one."""
    from ..engine.journal import JOURNAL

    planned = sum(analysis.design.calls(m) for m in analysis.models)
    path = Path(run_dir) / JOURNAL
    with open(path, "rb") as fh:
        fh.seek(-1, 2)
        torn = fh.read(1) != b"\n"
    if analysis.n_replies >= planned and not torn:
        return None
    tail = " and ends in a torn line" if torn else ""
    return (f"{path} holds {analysis.n_replies} of the {planned} replies the design plans"
            f"{tail}: the tables cover those only (rerun director run with this --out to "
            "finish it)")


def analyze_command(run_dir: Path, design: str | None, *, fmt: str, plots: Path | None,
                    paper: bool, n_boot: int, seed: int, drop_apparent: bool, console: Any,
                    status: Any) -> None:
    """Print the analysis of ``run_dir`` on ``console``; say each file written on ``status``."""
    if fmt not in FORMATS:
        raise AnalysisError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    with status.status("fitting the comparisons…"):
        loaded = load_run(run_dir, design)  # one pass over the journal for both analyses
        analysis = analyze_run(run_dir, n_boot=n_boot, seed=seed, drop_apparent=drop_apparent,
                               prices=price_for, loaded=loaded)
        full = (analyze_run(run_dir, n_boot=n_boot, seed=seed, loaded=loaded) if drop_apparent
                else None)
    if (gap := incomplete(run_dir, full or analysis)) is not None:
        warn(gap)
    written: list[Path] = []
    if paper:
        from ..evals.director.paper.figures import draw
        from ..evals.director.paper.tables import layouts
        from ..evals.director.paper.tables import render as render_paper

        lays = layouts(analysis, _coding(run_dir))
        result = render_paper(analysis, lays, fmt, width=console.width)
        written = draw(analysis, lays, plots or run_dir / PAPER_FIGURES)
    else:
        result = render(analysis, fmt, width=console.width)
        if plots is not None:
            written = plot(analysis, plots)
    if full is not None:
        result = _with_verdicts(result, full, analysis, fmt)
    if isinstance(result, str):
        print(shown(result))  # no control sequence or secret from a model's text
    else:
        console.print(result)
    for path in written:
        status.print(f"wrote {path}", highlight=False, soft_wrap=True)


def _with_verdicts(result: Any, full: Analysis, part: Analysis, fmt: str) -> Any:
    """``result`` and the verdicts that changed without the apparent-size scenes."""
    from ..evals.director.paper.verdicts import changed
    from ..evals.director.paper.verdicts import render as render_verdicts

    rows = changed(full, part)
    if fmt == "json":
        return json.dumps({**json.loads(result), "verdicts_changed": rows}, indent=2,
                          ensure_ascii=False)
    if fmt in ("md", "latex"):
        return result.rstrip("\n") + "\n\n" + render_verdicts(rows, fmt) + "\n"
    from rich.console import Group
    from rich.text import Text

    return Group(result, Text(""), render_verdicts(rows, fmt))
