"""``unseen export RUN_DIR... --html DIR``: a static report that opens in a browser, no server.

``DIR/index.html`` holds, in plain HTML and a little CSS (no JavaScript):

- the comparison table of ``report.summarize`` (baseline ``direct`` when some run has it),
  each metric with its bootstrap interval, and the paired difference against the baseline;
- per-iteration curves (Dist and ``alive``) as PNGs, when some run has an iterative region
  strategy such as SPoE (``curves.curves`` drawn by ``plots.curve_png``);
- the instances, one row each with every trajectory's outcome, linked to its step strip
  (``renderers/strips.py``), for the first ``max_strips`` trajectories.

Every image lies in ``DIR/img/`` and is referenced by a relative path, so the folder can be
moved or zipped as a whole. All text from the runs is HTML-escaped.

A Director Task study run (``"benchmark": "director"``) gets its own report, written by
:mod:`unseen.export_director`; it is exported alone, never beside SceneFunRI runs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from .engine.journal import checked
from .engine.sanitize import shown
from .evals.scenefunri.report import (
    METRIC_COLUMNS,
    _fmt,
    _interval,
    _label,
    _n,
    current_records,
    journal_of,
    summarize,
)

MAX_STRIPS = 30
CURVE_PLOTS = ("dist", "alive")
_HEAD = {"cacc75": "CAcc@75", "cacc50": "CAcc@50", "miou": "mIoU", "dist": "Dist"}
_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 1.5em; color: #222; }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f2f2f2; }
td.l, th.l { text-align: left; }
.ci { color: #777; font-size: 85%; white-space: nowrap; }
.sig { color: #b00; font-weight: bold; }
.bad { color: #b00; }
.note { color: #555; font-size: 90%; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 90%; color: #555; }
"""


@dataclass
class ExportResult:
    index: Path
    table_rows: int = 0
    curves: list[Path] = field(default_factory=list)
    strips: list[Path] = field(default_factory=list)
    trajectories: int = 0
    notes: list[str] = field(default_factory=list)
    summary: str = ""  # what was written, in words, where the counts above do not fit


def _e(v: Any) -> str:
    """HTML-escaped, with no control byte (ESC, BEL) and no secret left."""
    return escape(shown(v), quote=True)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._")[:60] or "x"


# --- the comparison table -------------------------------------------------------------------


def table_html(rows: list[dict[str, Any]]) -> str:
    """The comparison table: one row per (model, strategy); metrics ×100 with [low, high];
    Δ against the baseline (bold red when its interval excludes 0); cost per trajectory."""
    deltas = any(r.get(f"delta_{m}") is not None for r in rows for m in METRIC_COLUMNS)
    head = ["model", "strategy", "n", "answered %"] + [_HEAD[m] for m in METRIC_COLUMNS]
    if deltas:
        head += [f"Δ {_HEAD[m]}" for m in METRIC_COLUMNS]
    head += ["calls/inst", "in tok/inst", "out tok/inst", "s/inst"]
    out = ['<div class=wrap><table class="summary">', "<thead><tr>"]
    out += [f'<th{" class=l" if h in ("model", "strategy") else ""}>{_e(h)}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for r in rows:
        cells = [f"<td class=l>{_e(_label(r))}</td>", f"<td class=l>{_e(r['strategy'])}</td>",
                 f"<td>{_e(_n(r))}</td>", f"<td>{_e(_fmt(r.get('answered'), 1))}</td>"]
        for m in METRIC_COLUMNS:
            cells.append(f"<td>{_e(_fmt(r.get(m)))}<br><span class=ci>"
                         f"{_e(_interval(r, m))}</span></td>")
        if deltas:
            for m in METRIC_COLUMNS:
                d = r.get(f"delta_{m}")
                if d is None:
                    cells.append("<td></td>")
                    continue
                sig = " class=sig" if r.get(f"delta_{m}_sig") else ""
                star = "*" if r.get(f"delta_{m}_sig") else ""
                cells.append(f"<td><span{sig}>{_e(_fmt(d, sign=True))}{star}</span><br>"
                             f"<span class=ci>{_e(_interval(r, f'delta_{m}'))}</span></td>")
        for key, digits in (("calls", 2), ("input_tokens", 0), ("output_tokens", 0),
                            ("seconds", 2)):
            cells.append(f"<td>{_e(_fmt(r.get(key), digits))}</td>")
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
    return f'<p class=note>{_e(" ".join(notes))}</p>'


# --- strips ------------------------------------------------------------------------------------


def _outcome(rec: dict[str, Any]) -> tuple[str, bool]:
    if rec.get("error") or rec.get("status") != "answered":
        kind = (rec.get("error") or {}).get("kind", "")
        return f"{rec.get('status', '?')}" + (f" ({kind})" if kind else ""), False
    m = rec.get("metrics") or {}
    return f"IoU {100 * m.get('iou', 0):.1f} · Dist {100 * m.get('dist', 0):.1f}", True


def _instances(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    from .evals.scenefunri.dataset import DatasetError, load_dataset

    data = config.get("data")
    if not data:
        return {}, "run.json names no dataset"
    try:
        return {i.id: i for i in load_dataset(data).instances}, ""
    except (DatasetError, OSError) as exc:
        return {}, str(exc)


# --- the page ----------------------------------------------------------------------------------


def _export_director(run_dirs: list[Path], director: list[Path], out_dir: str | Path,
                     baseline: str | None, max_strips: int) -> ExportResult:
    from .evals.scenefunri.report import RunDirError
    from .export_director import export_director

    if len(director) < len(run_dirs):
        other = [str(d) for d in run_dirs if d not in director]
        raise RunDirError(
            f"cannot export Director runs ({', '.join(map(str, director))}) together with "
            f"SceneFunRI runs ({', '.join(other)}): export each kind into its own folder")
    if len(director) > 1:
        raise RunDirError(f"export one Director run at a time, got {len(director)}: "
                          f"{', '.join(map(str, director))}")
    if baseline is not None:
        raise RunDirError("--baseline applies to SceneFunRI runs; a Director run's comparisons "
                          "are those its design names")
    return export_director(director[0], out_dir, max_images=max_strips)


def export_html(run_dirs: list[str | Path], out_dir: str | Path, *, baseline: str | None = None,
                max_strips: int = MAX_STRIPS) -> ExportResult:
    """Write ``out_dir/index.html`` and its images under ``out_dir/img/``.

    A Director study run is handed to :func:`export_director.export_director` (one run,
    alone; ``max_strips`` caps its example scene pictures)."""
    from .show import run_config, strip_record
    from .show_director import is_director

    run_dirs = [Path(d) for d in run_dirs]
    director = [d for d in run_dirs if is_director(d)]
    if director:
        return _export_director(run_dirs, director, out_dir, baseline, max_strips)
    out_dir = Path(out_dir)
    img = out_dir / "img"
    img.mkdir(parents=True, exist_ok=True)
    configs = [run_config(d) for d in run_dirs]  # refuses what is not a SceneFunRI run
    records = [(k, r) for k, d in enumerate(run_dirs) for r in current_records([d])]
    if baseline is None and any(r["strategy"] == "direct" for _, r in records):
        baseline = "direct"
    rows = summarize(run_dirs, baseline=baseline)
    result = ExportResult(index=out_dir / "index.html", table_rows=len(rows),
                          trajectories=len(records))

    body = [f"<h1>unseen report</h1><p class=note>runs: "
            f"{_e(', '.join(str(d) for d in run_dirs))}</p>",
            "<h2>Comparison</h2>", table_html(rows), _table_notes(rows)]

    # per-iteration curves
    from .evals.scenefunri.curves import curves, direct_baselines

    crows = curves(run_dirs, ceiling=True)
    if crows:
        from .renderers.plots import curve_png

        base = direct_baselines(run_dirs)
        body.append("<h2>Per iteration</h2>")
        for metric in CURVE_PLOTS:
            path = curve_png(crows, metric, img / f"curve-{metric}.png", base)
            result.curves.append(path)
            body.append(f'<figure><img src="img/{_e(path.name)}" alt="{_e(metric)} per '
                        f'iteration" width="700"><figcaption>{_e(metric)} per iteration '
                        "(×100); dashed: each model's direct; dotted: oracle ceiling"
                        "</figcaption></figure>")

    # instances and strips
    by_inst: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for k, r in records:
        by_inst[(k, r["instance_id"])].append(r)
    for recs in by_inst.values():
        recs.sort(key=lambda r: (r["model"], r["strategy"], r["sample"]))
    datasets = {}
    for k, cfg in enumerate(configs):
        datasets[k] = _instances(cfg)
        if datasets[k][1]:
            result.notes.append(f"{run_dirs[k]}: no strips ({datasets[k][1]})")

    inst_rows, figures = [], []
    for (k, iid) in sorted(by_inst, key=lambda key: (key[0], key[1])):
        insts, _ = datasets[k]
        inst = insts.get(iid)
        cells = []
        for r in by_inst[(k, iid)]:
            text, ok = _outcome(r)
            label = f"{r['model']} · {r['strategy']}" + (f" · s{r['sample']}" if r["sample"] else "")
            cell = f"{_e(label)}: <span{'' if ok else ' class=bad'}>{_e(text)}</span>"
            if inst is not None and len(result.strips) < max_strips:
                n = len(result.strips)
                name = f"strip-{n:03d}-{_slug(iid)}-{_slug(r['model'])}-{_slug(r['strategy'])}.png"
                strip_record(checked(r, journal_of(run_dirs[k])), inst, img / name, height=200)
                result.strips.append(img / name)
                cell += f' <a href="#strip-{n}">steps</a>'
                figures.append(f'<figure id="strip-{n}"><img src="img/{_e(name)}" '
                               f'alt="{_e(label)} on {_e(iid)}" loading="lazy">'
                               f"<figcaption>{_e(iid)} · {_e(label)}</figcaption></figure>")
            cells.append(cell)
        run = f" <span class=note>({_e(run_dirs[k].name)})</span>" if len(run_dirs) > 1 else ""
        instruction = inst.text.get("instruction", "") if inst is not None else ""
        inst_rows.append(f"<tr><td class=l>{_e(iid)}{run}</td><td class=l>{_e(instruction)}"
                         f"</td><td class=l>{'<br>'.join(cells)}</td></tr>")
    body.append("<h2>Instances</h2>")
    if len(result.strips) < result.trajectories:
        result.notes.append(
            f"step strips for the first {len(result.strips)} of {result.trajectories} "
            "trajectories; any other: unseen show RUN INSTANCE --strategy S --model M "
            "--sample K --png FILE")
    body += [f"<p class=note>{_e(n)}</p>" for n in result.notes]
    body.append('<table class="instances"><thead><tr><th class=l>instance</th>'
                "<th class=l>instruction</th><th class=l>trajectories: outcome</th></tr>"
                "</thead><tbody>" + "\n".join(inst_rows) + "</tbody></table>")
    if figures:
        body.append("<h2>Step strips</h2>")
        body += figures

    page = ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            "<title>unseen report</title><style>" + _CSS + "</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    result.index.write_text(page, encoding="utf-8")
    return result
