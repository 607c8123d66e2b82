"""What ``--dry-run`` prints: the plan's estimate per backend as a table, or as JSON."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from .common import UserError, out, plain

DRY_FORMATS = ("table", "json")


def check_format(fmt: str, dry_run: bool) -> None:
    """``--format`` is the dry run's: table or json; refused without ``--dry-run``."""
    if fmt not in DRY_FORMATS:
        raise UserError(f"--format must be table or json, got {fmt!r}")
    if fmt != "table" and not dry_run:
        raise UserError("--format is the format of a --dry-run's estimate: add --dry-run")


def _n(x: int) -> str:
    return f"{x:,}"


def _usd(row: Any, field: str) -> str:
    if row.kind != "model":
        return f"$0 ({row.kind})"
    value = getattr(row, field)
    return "no price" if value is None else f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def print_estimate(estimate: Any, fmt: str) -> None:
    """The estimate (``unseen.dryrun.DryRunEstimate``) as ``fmt``: a table per backend with
    the rules, assumptions and prices under it, or its JSON."""
    if fmt == "json":
        plain(estimate.model_dump_json(indent=2))
        return
    from rich.table import Table

    where = f" into {estimate.run_dir}" if estimate.run_dir else ""
    skipped = f", {estimate.skipped} already done" if estimate.skipped else ""
    table = Table(title=f"dry run: {estimate.trajectories} trajectories{skipped}, no call "
                        f"made, nothing written{escape(where)}", title_justify="left")
    for col in ("backend", "traj", "calls", "in text", "in image", "out", "USD",
                "USD batch"):
        table.add_column(col, justify="left" if col == "backend" else "right",
                         overflow="fold")
    for r in estimate.backends:
        model = r.kind == "model"
        tokens = [_n(r.input_text_tokens), _n(r.input_image_tokens) + ("*" if r.fallback
                                                                      else ""),
                  _n(r.output_tokens)] if model else ["-", "-", "-"]
        table.add_row(escape(r.spec), _n(r.trajectories), _n(r.calls), *tokens,
                      _usd(r, "cost_usd"), _usd(r, "batch_cost_usd"))
    out.print(table)
    lines = [f"total: ${estimate.cost_usd:,.4f}; ${estimate.batch_cost_usd:,.4f} with each "
             "price's batch discount (the providers' batch APIs)"
             + (f"; no price for {', '.join(estimate.no_price)}: its cost is unknown (add "
                "one with --prices FILE; see `unseen prices`)" if estimate.no_price else ""),
             estimate.note]
    for r in estimate.backends:
        if r.image_rule is not None:
            flag = " (* a fallback: unseen knows no image rule for this model)" \
                if r.fallback else ""
            reasoning = f"; {_n(r.reasoning_tokens)} of its output tokens are reasoning" \
                if r.reasoning_tokens else ""
            lines.append(f"{r.spec}: images {r.image_rule}{flag}{reasoning}"
                         + (f"; price {r.price}" if r.price else ""))
        if r.unanswered:
            lines.append(f"{r.spec}: the simulator left {r.unanswered} trajectories "
                         "unanswered: calls they would have gone on to make are not counted")
    a = estimate.assumptions
    lines.append(f"text tokens: {a['text']}")
    for line in lines:
        out.print(escape(line), highlight=False)
    kinds = Table(title="output tokens assumed per reply", title_justify="left")
    for col in ("reply", "tokens", "what it holds"):
        kinds.add_column(col, justify="right" if col == "tokens" else "left", overflow="fold")
    for kind, v in a["output_tokens"].items():
        kinds.add_row(kind, _n(v["tokens"]), escape(v["reply"]))
    out.print(kinds)
    out.print(escape("plus, for a model whose profile thinks, reasoning tokens per reply by "
                     "reasoning effort: " + ", ".join(f"{k} {v}" for k, v in
                                                     a["reasoning_tokens"].items())),
              highlight=False)
