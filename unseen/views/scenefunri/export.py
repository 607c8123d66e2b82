"""The HTML page of SceneFunRI runs (``unseen export RUN... --html DIR``):

- a SIMULATED banner when the simulator answered (rules are marked ``(rule)`` in the table);
- the comparison table of ``report.summarize`` (baseline ``direct`` when some run has it):
  each metric with its bootstrap interval and, under it, the paired difference against the
  baseline; the cost per instance; sized to fit a 1280 px window;
- per-iteration curves (Dist and ``alive``) as PNGs, when some run has an iterative region
  strategy such as SPoE (``curves.curves`` drawn by ``plots.curve_png``);
- the instances, one row each with every trajectory's outcome, linked to its step strip
  (``renderers/strips.py``), for the first ``max_strips`` trajectories.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ...engine.journal import checked
from ...engine.records import TrajectoryRecord
from ...engine.rundir import RunDir
from ...evals.scenefunri.report.cells import (
    METRIC_COLUMNS,
    cost_note,
    fmt_num,
    has_costs,
    interval_text,
    model_label,
    n_cell,
    serving_notes,
    usd_text,
)
from ...evals.scenefunri.report.summary import run_records, summarize
from ..common import ExportResult, banner, e, error_kind, fold_label, slug, strip_figure
from ..protocol import ExportOptions, ExportPage, Section

CURVE_PLOTS = ("dist", "alive")
_HEAD = {"cacc75": "CAcc@75", "cacc50": "CAcc@50", "miou": "mIoU", "dist": "Dist"}
CSS = """
table.summary td.m { white-space: nowrap; }
table.summary .d { display: block; font-size: 90%; }
"""


def table_html(rows: list[dict[str, Any]]) -> str:
    """The comparison table: one row per (model, strategy); metrics ×100 with [low, high]
    and, below, Δ against the baseline (bold red when its interval excludes 0) with its
    interval; cost per instance."""
    deltas = any(r.get(f"delta_{m}") is not None for r in rows for m in METRIC_COLUMNS)
    head = ["model", "strategy", "n", "answered %"] + [
        _HEAD[m] + (" / Δ" if deltas else "") for m in METRIC_COLUMNS]
    head += ["calls/ inst", "in tok/ inst", "out tok/ inst", "s/ inst"]
    costed = has_costs(rows)
    if costed:
        head.append("USD/ inst")
    out = ['<div class=wrap><table class="summary">', "<thead><tr>"]
    out += [f'<th{" class=l" if h in ("model", "strategy") else ""}>{e(h)}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for r in rows:
        cells = [f"<td class='l text'>{e(model_label(r))}</td>",
                 f"<td class='l text'>{e(fold_label(r['strategy']))}</td>",
                 f"<td>{e(n_cell(r))}</td>", f"<td>{e(fmt_num(r.get('answered'), 1))}</td>"]
        for m in METRIC_COLUMNS:
            cell = (f"<td class=m>{e(fmt_num(r.get(m)))}<br><span class=ci>"
                    f"{e(interval_text(r, m))}</span>")
            d = r.get(f"delta_{m}")
            if d is not None:
                sig = " sig" if r.get(f"delta_{m}_sig") else ""
                star = "*" if sig else ""
                cell += (f"<span class='d{sig}'>Δ {e(fmt_num(d, sign=True))}{star}</span>"
                         f"<span class=ci>{e(interval_text(r, f'delta_{m}'))}</span>")
            out_cell = cell + "</td>"
            cells.append(out_cell)
        for key, digits in (("calls", 2), ("input_tokens", 0), ("output_tokens", 0),
                            ("seconds", 2)):
            cells.append(f"<td>{e(fmt_num(r.get(key), digits))}</td>")
        if costed:  # per instance, and in all under it
            total = usd_text(r, "cost_total_usd") if r.get("cost_total_usd") is not None else ""
            cells.append(f"<td class=m>{e(usd_text(r))}"
                         + (f"<br><span class=ci>Σ {e(total)}</span>" if total else "") + "</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _table_notes(rows: list[dict[str, Any]]) -> str:
    notes = ["Metrics ×100; Dist: lower is better."]
    r = next((r for r in rows if r.get("ci_resamples")), None)
    if r is not None:
        notes.append(f"[low, high]: {100 * r['ci_level']:g} % percentile bootstrap over "
                     f"instances, {r['ci_resamples']} resamples, seed {r['ci_seed']}.")
    base = next((r["baseline"] for r in rows if r.get("baseline")), None)
    if base:
        notes.append(f"Δ: paired difference against {base} of the same model; * its "
                     "paired-bootstrap interval excludes 0.")
    if any(r.get("kind") == "rule" for r in rows):
        notes.append("(rule): a fixed reference rule (baseline:...), no model.")
    if has_costs(rows):
        notes.append(cost_note(rows) + ".")
    notes += [line + "." for line in serving_notes(rows)]
    return f'<p class=note>{e(" ".join(notes))}</p>'


def _outcome(rec: TrajectoryRecord) -> tuple[str, bool]:
    if rec["error"] or rec["status"] != "answered":
        kind = error_kind(rec, "")
        return f"{rec['status']}" + (f" ({kind})" if kind else ""), False
    m = rec["metrics"]
    return f"IoU {100 * (m.get('iou') or 0):.1f} · Dist {100 * (m.get('dist') or 0):.1f}", True


def _dataset(run: RunDir) -> tuple[dict[str, Any], str]:
    from ...evals.scenefunri.data.dataset import DatasetError, load_dataset

    data = run.config.data if run.config is not None else ""
    if not data:
        return {}, "run.json names no dataset"
    try:
        return {i.id: i for i in load_dataset(data).instances}, ""
    except (DatasetError, OSError) as exc:
        return {}, str(exc)


def export(runs: list[RunDir], out_dir: Path, options: ExportOptions,
           result: ExportResult) -> ExportPage:
    """The page's sections; strips and curves under ``out_dir/img/``."""
    from .show import strip_record, worst_key

    recs = [(k, r) for k, run in enumerate(runs) for r in run_records(run)]
    baseline = options.baseline
    if baseline is None and any(r["strategy"] == "direct" for _, r in recs):
        baseline = "direct"
    from ...backends.prices import price_for

    # refused: nothing written
    rows = summarize(runs, baseline=baseline, pool=options.pool, prices=price_for)
    img = out_dir / "img"
    img.mkdir(parents=True, exist_ok=True)
    result.table_rows, result.trajectories = len(rows), len(recs)
    sim = sorted({r["model"] for _, r in recs if r["simulated"]
                  and not r["backend"].startswith("baseline")})
    sections = [Section("", f"<h1>unseen report</h1><p class=note>runs: "
                            f"{e(', '.join(str(r.path) for r in runs))}</p>" + banner(sim)),
                Section("Comparison", table_html(rows) + _table_notes(rows), "comparison")]
    sections += _curves(runs, img, result, rows)

    by_inst: dict[tuple[int, str], list[TrajectoryRecord]] = defaultdict(list)
    for k, r in recs:
        by_inst[(k, r["instance_id"])].append(r)
    for group in by_inst.values():
        group.sort(key=lambda r: (r["model"], r["strategy"], r["sample"]))
    datasets = {k: _dataset(run) for k, run in enumerate(runs)}
    for k, (_, why) in datasets.items():
        if why:
            result.notes.append(f"{runs[k].path}: no strips ({why})")
    inst_rows, figures = [], []
    # worst first, as `unseen show` orders them, so the strips drawn are the worst ones
    def badness(key: tuple[int, str]) -> tuple:
        outcomes = [(r["status"], (r.get("metrics") or {}).get("dist")) for r in by_inst[key]]
        return (worst_key(key[1], outcomes), key[0])

    for (k, iid) in sorted(by_inst, key=badness):
        inst = datasets[k][0].get(iid)
        cells = []
        for r in by_inst[(k, iid)]:
            text, ok = _outcome(r)
            label = f"{r['model']} · {r['strategy']}" + (f" · s{r['sample']}" if r["sample"]
                                                         else "")
            cell = f"{e(label)}: <span{'' if ok else ' class=bad'}>{e(text)}</span>"
            if inst is not None and len(result.strips) < options.max_strips:
                n = len(result.strips)
                name = f"strip-{n:03d}-{slug(iid)}-{slug(r['model'])}-{slug(r['strategy'])}.png"
                strip_record(checked(r, runs[k].journal), inst, img / name, height=200)
                result.strips.append(img / name)
                cell += f' <a href="#strip-{n}">steps</a>'
                figures.append(strip_figure(n, name, f"{iid} · {label}"))
            cells.append(cell)
        run = f" <span class=note>({e(runs[k].path.name)})</span>" if len(runs) > 1 else ""
        instruction = inst.text.get("instruction", "") if inst is not None else ""
        inst_rows.append(f"<tr><td class='l id'>{e(iid)}{run}</td><td class='l text'>"
                         f"{e(instruction)}</td><td class='l text'>{'<br>'.join(cells)}</td></tr>")
    if len(result.strips) < result.trajectories:
        result.notes.append(
            f"step strips for {len(result.strips)} of {result.trajectories} trajectories, "
            "of the worst instances first (as unseen show orders them); any other: unseen show RUN INSTANCE --strategy S --model M "
            "--sample K --png FILE")
    sections.append(Section(
        "Instances", "".join(f"<p class=note>{e(n)}</p>" for n in result.notes)
        + '<div class=wrap><table class="instances"><thead><tr><th class=l>instance</th>'
        "<th class=l>instruction</th><th class=l>trajectories: outcome</th></tr></thead>"
        "<tbody>" + "\n".join(inst_rows) + "</tbody></table></div>", "instances"))
    if figures:
        sections.append(Section("Step strips", "\n".join(figures), "strips"))
    return ExportPage("unseen report", sections, CSS, nav=True)  # contents, as the Director's


def _curves(runs: list[RunDir], img: Path, result: ExportResult,
            rows: list[dict[str, Any]]) -> list[Section]:
    from ...evals.scenefunri.report.curves import curves, direct_baselines

    crows = curves(runs, ceiling=True)
    if not crows:
        return []
    from ...renderers.plots import curve_png

    base = direct_baselines(runs, rows)  # the table's direct rows: the same means
    figures = []
    for metric in CURVE_PLOTS:
        path = curve_png(crows, metric, img / f"curve-{metric}.png", base)
        result.curves.append(path)
        figures.append(f'<figure><img src="img/{e(path.name)}" alt="{e(metric)} per '
                       f'iteration" width="700"><figcaption>{e(metric)} per iteration (×100); '
                       "dashed: each model's direct; dotted: oracle ceiling</figcaption>"
                       "</figure>")
    return [Section("Per iteration", "\n".join(figures), "curves")]
