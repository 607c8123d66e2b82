"""What the commands share: the consoles every text passes through (control sequences and
secrets removed), the one-line user error, and the lines a run command ends with."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ..engine.errors import UnseenError
from ..engine.sanitize import SafeConsole, shown

# every text the commands print passes the sanitiser (control sequences, secrets) on its way
out = SafeConsole()
err = SafeConsole(stderr=True)


def plain(*parts: object, end: str = "\n") -> None:
    """``print`` for plain-text output (JSON, CSV, markdown, prompts), sanitised the same way."""
    sys.stdout.write(shown(" ".join(str(p) for p in parts)) + end)

FORMATS = ("table", "json", "csv", "md", "latex")


class UserError(UnseenError):
    """Raised inside commands for a one-line error and exit status 2."""


def user_errors() -> tuple[type[BaseException], ...]:
    """What a user can cause: every error of the project derives from ``UnseenError``; a
    missing or unreadable path is the operating system's own."""
    from ..engine.errors import UnseenError

    return (UnseenError, FileNotFoundError, NotADirectoryError, PermissionError)


def interrupted(what: str, run_dir: Path) -> None:
    err.print(f"interrupted: finished {what} are saved in {run_dir}; rerun the same "
              f"command with --out {run_dir} to resume", soft_wrap=True, highlight=False)
    raise typer.Exit(130)


def quiet_or_resumed(result: Any, quiet: bool, what: str) -> bool:
    """With --quiet, print only the run directory (True: nothing more to say); else say
    how many ``what`` a resume skipped."""
    if quiet:
        out.print(str(result.run_dir))
        return True
    if result.skipped:
        out.print(f"resumed: {result.skipped} {what} were already done")
    return False


#: the exit status of a run that stopped at its cost cap (``--max-cost``)
COST_CAP_EXIT = 3


def close(result: Any, what: str, strict: bool, quiet: bool) -> None:
    """The command's last line: how many new ``what`` failed, by error kind (stdout; stderr
    with --quiet, whose stdout is the run directory alone). Exit 1 when every new one failed,
    or with --strict when any did; exit 3 when the run stopped at its cost cap, which the
    last line says, with the amount spent."""
    failures = result.failures
    failed = sum(failures.values())
    capped = getattr(result, "cost_capped", False)
    if failed:
        _failed_line(result, what, failures, quiet, capped)
    if getattr(result, "max_cost", None) is not None:
        _cost_line(result, what, quiet, capped)
    if failed and strict:
        raise typer.Exit(1)


def _cost_line(result: Any, what: str, quiet: bool, capped: bool) -> None:
    spent = f"spent ${result.spent:.4f} of --max-cost ${result.max_cost:g}"
    if before := getattr(result, "spent_before", 0.0):  # the run directory's earlier runs
        spent += f" (${before:.4f} of it before this invocation)"
    if not capped:
        (err if quiet else out).print(spent, soft_wrap=True, highlight=False, markup=False)
        return
    left = max(0, result.total - result.skipped - result.done)
    (err if quiet else out).print(
        f"stopped at the cost cap: {spent} ({result.done} new {what} journaled, those in "
        f"flight finished; {left} not started); to go on, rerun the same command with the "
        "same --out and a higher --max-cost (what the run directory spent counts)",
        soft_wrap=True, highlight=False, markup=False)
    raise typer.Exit(COST_CAP_EXIT)


def _failed_line(result: Any, what: str, failures: dict[str, int], quiet: bool,
                 capped: bool) -> None:
    failed = sum(failures.values())
    counts = ", ".join(f"{kind} {n}" for kind, n in failures.items())
    if failed == result.done and not capped:
        kind = next(iter(failures))
        example = " ".join(str(result.examples.get(kind, "")).split())[:160]
        err.print(f"[red]error:[/] all {failed} new {what} failed: {escape(counts)}"
                  + (f" (first {escape(kind)}: {escape(example)})" if example else "")
                  + "; rerun the same command to retry them", soft_wrap=True, highlight=False)
        raise typer.Exit(1)
    line = (f"{failed} of {result.done} new {what} failed: {escape(counts)}; rerun the same "
            "command to retry them")
    (err if quiet else out).print(line, soft_wrap=True, highlight=False)


def print_reasons(by_error: dict[str, int], result: Any = None) -> None:
    """The unanswered trajectories by reason; with the run's ``result``, how many replies
    stopped at a length limit (answered or not) and which answers are fallbacks."""
    per = getattr(result, "by_strategy", None) or {}
    if by_error:
        reasons = ", ".join(f"{k} {v}{_split(k, per)}" for k, v in sorted(by_error.items()))
        out.print(f"[yellow]unanswered by reason:[/] {escape(reasons)}", soft_wrap=True)
    if result is None:
        return
    if result.length_stops:
        out.print(f"[yellow]stopped at a length limit:[/] {result.length_stops} replies "
                  "(finish_reason length / MAX_TOKENS; raise max_tokens)", soft_wrap=True)
    for strategy, n in sorted(result.fallbacks.items()):
        out.print(f"[yellow]{escape(strategy)}:[/] {n} trajectories answered with an earlier "
                  "step's answer (the last step gave none; see `unseen show`)", soft_wrap=True)


def _split(kind: str, per: dict[str, dict[str, int]]) -> str:
    """`` (cot 10, cot-sr 2)``: a reason's count by strategy, by strategy label."""
    if not per:
        return ""
    parts = [f"{label} {n[kind]}" for label, n in sorted(per.items()) if n.get(kind)]
    return f" ({', '.join(parts)})"


def print_servers(run_dir: Path) -> None:
    """A line of per-server counts for each backend spread over several servers."""
    from ..backends.servers import server_summary
    from ..engine.rundir import RunDir

    config = RunDir(run_dir).config
    for desc in config.backends if config is not None else []:
        if line := server_summary(desc):
            out.print(line, soft_wrap=True, highlight=False, markup=False)


