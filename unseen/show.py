"""Plain step-by-step printing of run directories (a richer view comes later)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .evals.scenefunri.report import current_records, render, summarize


def _fold(text: str, lines: int = 6) -> str:
    parts = (text or "").splitlines()
    if len(parts) <= lines:
        return "\n".join(parts)
    return "\n".join(parts[:lines]) + f"\n… ({len(parts) - lines} more lines)"


def _box(b: Any) -> str:
    return "none" if not b else "[" + ", ".join(f"{v:.0f}" for v in b) + "]"


def show_summary(console: Console, run_dir: Path, worst: int = 20) -> None:
    """Per (model, strategy) metrics and failures, then instances worst first by Dist."""
    console.print(render(summarize([run_dir]), "table", width=console.width))
    records = list(current_records([run_dir]))
    failures: dict[str, int] = {}
    for r in records:
        if r.get("error"):
            failures[r["error"]["kind"]] = failures.get(r["error"]["kind"], 0) + 1
    if failures:
        console.print("unanswered by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())))
    table = Table(title=f"instances, worst first (first {worst} of {len(records)})")
    for col in ("instance", "model", "strategy", "sample", "status", "Dist×100", "IoU×100"):
        table.add_column(col)
    records.sort(key=lambda r: -(r.get("metrics") or {}).get("dist", 0.0))
    for r in records[:worst]:
        m = r.get("metrics") or {}
        status = r["status"] if not r.get("error") else f"{r['status']} ({r['error']['kind']})"
        table.add_row(r["instance_id"], r["model"], r["strategy"], str(r["sample"]), status,
                      f"{100 * m.get('dist', float('nan')):.1f}", f"{100 * m.get('iou', 0):.1f}")
    console.print(table)


def show_instance(console: Console, run_dir: Path, instance: str, *, strategy: str | None = None,
                  model: str | None = None, sample: int | None = None) -> None:
    """Every matching trajectory of one instance, step by step."""
    found = 0
    for r in current_records([run_dir]):
        if r["instance_id"] != instance:
            continue
        if (strategy and r["strategy"] != strategy) or (model and r["model"] != model) or (
            sample is not None and r["sample"] != sample
        ):
            continue
        found += 1
        sim = " [magenta](SIMULATED)[/]" if r.get("simulated") else ""
        console.rule(f"{escape(r['instance_id'])} · {escape(r['model'])}{sim} · "
                     f"{escape(r['strategy'])} · sample {r['sample']}")
        for s in r["steps"]:
            reply = s["reply"]
            console.print(f"[bold]step {s['index']}[/] ({s['name']})  images: "
                          + ", ".join(Path(i["path"]).name for i in s["images"]))
            console.print("[dim]prompt:[/]\n" + escape(_fold(s["prompt"])))
            if reply.get("reasoning"):
                console.print("[dim]reasoning:[/]\n" + escape(_fold(reply["reasoning"], 4)))
            if reply.get("error"):
                console.print(f"[red]error:[/] {escape(reply['error']['kind'])}: {escape(reply['error']['message'])}")
            else:
                console.print("[dim]reply:[/] " + escape(_fold(reply["text"], 4)))
            if s.get("parse_error"):
                console.print(f"[red]parse error:[/] {escape(s['parse_error'])}")
            else:
                console.print(f"[dim]parsed:[/] {escape(str(s.get('parsed')))}")
            if s.get("region"):
                console.print(f"[dim]region:[/] {_box(s['region'])}")
            usage = reply.get("usage") or {}
            console.print(f"[dim]tokens in/out/reasoning:[/] {usage.get('input_tokens', 0)}/"
                          f"{usage.get('output_tokens', 0)}/{usage.get('reasoning_tokens', 0)}  "
                          f"[dim]latency:[/] {reply.get('latency_s', 0):.3f} s"
                          + ("  [cyan](cached)[/]" if reply.get("cached") else ""))
        m = r.get("metrics") or {}
        console.print(f"[bold]prediction[/] {_box(r.get('prediction'))}  status {r['status']}  "
                      + "  ".join(f"{k} {100 * v:.1f}" for k, v in m.items()))
    if not found:
        raise ValueError(f"no trajectory of instance {instance!r} in {run_dir} matches")
