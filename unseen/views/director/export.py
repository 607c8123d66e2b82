"""``unseen export RUN --html DIR`` for a Director Task study run (``"benchmark": "director"``).

``DIR/index.html`` holds, in plain HTML and a little CSS (no JavaScript):

- a header: the design (name, description), the models (``SIMULATED`` where a simulated
  respondent answered), the replies and the scene sets;
- the rates tables of :func:`evals.director.analysis.analyze.analyze_run`, per batch and scene set:
  conditions × models, each measure's share with its [low, high] interval, and under each
  the hidden-block bars of :func:`plots.plot_analysis`;
- the changes tables, per family (then the margin tests with their verdicts, then the
  comparisons in no family): the change in points with its interval, the mark (∗ / †),
  p, adjusted p, method, n and scenes, each under its forest plot;
- the legend;
- example scenes: for the first :data:`EXAMPLE_SCENES` scenes, each condition of the first
  batch, sample 0, the first model: the marked scene beside its text panel
  (:func:`show_director.write_png`), captioned with the condition, the report, the choice
  and the answer key.

The numbers are those of ``unseen director analyze`` (the same rounding and the same cells as
its markdown). Every image lies in ``DIR/img/`` under a relative path; all text is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...engine.records import TrajectoryRecord
from ...engine.rundir import RunDir, RunDirError, serving_lines
from ...evals.director.analysis.analyze import (
    MARGIN_GROUP,
    N_BOOT,
    Analysis,
    AnalysisError,
    Change,
    analyze_run,
)
from ...evals.director.analysis.plots import plot_analysis as plot
from ...evals.director.analysis.plots import slug as plot_slug
from ...evals.director.analysis.shown import (
    change_cells,
    group_title,
    legend,
    rate_rows,
    rate_tables,
    what,
)
from ..common import ExportResult, e, error_kind, img_attrs, slug
from ..protocol import ExportOptions, ExportPage, Section
from .marks import choice_role, chosen_block, fields_text, key_text
from .png import write_png
from .run import DirectorRun

#: Plots are drawn at 150 dpi: shown at the size they would have at 96 CSS pixels an inch.
PLOT_SCALE = 96 / 150
#: Example scenes drawn (each condition of the first batch, sample 0, the first model).
EXAMPLE_SCENES = 3

CSS = """
dl.head { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dl.head dt { color: #555; }
dl.head dd { margin: 0; }
td.m { font-style: italic; }
tr.first td { border-top: 2px solid #999; }
.dagger { color: #b36b00; font-weight: bold; }
.within { color: #2e7d32; font-weight: bold; }
.notwithin { color: #b00; }
.status { color: #777; font-style: italic; }
.what { color: #666; font-size: 90%; }
figure.scene img { max-width: 100%; }
"""


def export(runs: list[RunDir], out_dir: Path, options: ExportOptions, result: ExportResult, *,
           examples: int = EXAMPLE_SCENES, n_boot: int = N_BOOT, seed: int = 0) -> ExportPage:
    """The page of one study run; its plots and example scenes under ``out_dir/img/``.

    ``examples``: scenes drawn for each condition of the first batch; ``options.max_strips``
    caps the scene pictures in all. Raises :class:`RunDirError` for several runs, a
    ``--baseline``, or a run that cannot be analysed (one line, for the CLI)."""
    if len(runs) > 1:
        raise RunDirError(f"export one Director run at a time, got {len(runs)}: "
                          f"{', '.join(str(r.path) for r in runs)}")
    if options.baseline is not None:
        raise RunDirError("--baseline applies to SceneFunRI runs; a Director run's comparisons "
                          "are those its design names")
    run = DirectorRun.open(runs[0])
    try:
        from ...backends.prices import price_for

        analysis = analyze_run(run.path, n_boot=n_boot, seed=seed, prices=price_for)
    except AnalysisError as exc:
        raise RunDirError(str(exc)) from None
    img = out_dir / "img"
    img.mkdir(parents=True, exist_ok=True)
    result.trajectories = analysis.n_replies
    plots = {p.name: p for p in plot(analysis, img)}
    result.curves = list(plots.values())
    used: set[str] = set()

    def figure(name: str, alt: str, caption: str) -> str:
        if name not in plots:
            return ""
        used.add(name)
        return (f'<figure><img src="img/{e(name)}" alt="{e(alt)}"'
                f"{img_attrs(plots[name], PLOT_SCALE)}><figcaption>{e(caption)}</figcaption>"
                "</figure>")

    simulated = _simulated(run)
    sections = [Section("", _header(run, analysis, simulated))]
    if analysis.costs:
        sections.append(Section("Cost", _cost_html(analysis), "cost"))

    # rates, each table followed by its hidden-block bars
    rate_html = []
    tables = rate_tables(analysis)
    keys = list(dict.fromkeys((r.batch, r.set) for r in analysis.rates))
    sets_of: dict[str, int] = {}
    for batch, _ in keys:
        sets_of[batch] = sets_of.get(batch, 0) + 1
    for k, (t, (batch, set_)) in enumerate(zip(tables, keys, strict=True)):
        html, n = _rates_table(t, simulated, f"rates-{k}")
        result.table_rows += n
        rate_html.append(html)
        name = f"hidden_{plot_slug(batch)}" + (f"_{plot_slug(set_)}" if sets_of[batch] > 1
                                                else "") + ".png"
        rate_html.append(figure(name, f"hidden-block rates, batch {batch}",
                                f"Hidden-block choices per condition, batch {batch}"
                                + (f", set {set_}" if sets_of[batch] > 1 else "")
                                + " (% of answered replies, 95% interval over scenes)"))
    sections.append(Section("Rates", "\n".join(h for h in rate_html if h), "rates"))

    # changes, per group, each table with its forest plot
    if analysis.changes:
        changes_html, groups = [], []
        for group, changes in analysis.groups():
            anchor = f"group-{slug(group)}"
            title = group_title(analysis, group, changes)
            html, n = _changes_table(group, changes, simulated, analysis.label)
            result.table_rows += n
            changes_html += [f'<h3 id="{e(anchor)}">{e(title)}</h3>', html,
                             figure(f"forest_{plot_slug(group)}.png", f"forest plot of {group}",
                                    "The changes above: points with 95% intervals")]
            groups.append((anchor, title))
        sections.append(Section("Changes", "\n".join(h for h in changes_html if h), "changes",
                                groups))
    else:
        sections.append(Section("Changes", "<p class=note>The design names no comparisons.</p>",
                                "changes"))

    from ...evals.director.coding.items import CODING_DIR, ITEMS_FILE
    from ...evals.director.coding.report import render as render_codes
    from ...evals.director.coding.report import summarize as summarize_codes

    if (run.path / CODING_DIR / "main" / ITEMS_FILE).is_file():
        sections.append(Section(
            "Reasoning traces", "<p class=note>Coded by `unseen director code` against the "
            "codebook of Appendix E.</p>" + render_codes(summarize_codes(run.path), "html"),
            "traces"))
    lines = serving_lines(analysis.serving, analysis.dropped) + legend(analysis)
    sections.append(Section("Legend", "\n".join(f"<p class=note>{e(line)}</p>"
                                                for line in lines), "legend"))
    rest = [p for name, p in plots.items() if name not in used]
    if rest:
        sections.append(Section("Other figures", "\n".join(figure(p.name, p.stem, p.stem)
                                                           for p in rest), "figures"))
    scenes_html = _examples(run, img, analysis, examples, options.max_strips, result)
    if scenes_html:
        sections.append(Section("Example scenes", "\n".join(scenes_html), "scenes"))
    result.summary = (f"{len(tables)} rates tables, {len(analysis.changes)} changes, "
                      f"{len(result.curves)} plots, {len(result.strips)} example scenes of "
                      f"{analysis.n_replies} replies")
    return ExportPage(f"Director study {analysis.design.name}", sections, CSS, nav=True)


def _cost_html(a: Analysis) -> str:
    """What each real model's replies cost: replies, US dollars per reply and in all."""
    from ...evals.director.analysis import costs as cost_rows

    out = ["<div class=wrap><table>", "<thead><tr>",
           *(f"<th{' class=l' if j == 0 else ''}>{e(h)}</th>"
             for j, h in enumerate(cost_rows.HEADERS)), "</tr></thead><tbody>"]
    for c in a.costs:
        name, *rest = cost_rows.cells(c)
        out.append(f"<tr><td class='l text'>{e(name)}</td>"
                   + "".join(f"<td>{e(x)}</td>" for x in rest) + "</tr>")
    out.append("</tbody></table></div>")
    out.append(f"<p class=note>{e(cost_rows.note(a.costs))}</p>")
    return "\n".join(out)


# --- header ----------------------------------------------------------------------------------


def _simulated(run: DirectorRun) -> dict[str, str]:
    """Model name → backend spec, for the models a simulated respondent answered."""
    config = run.run.config
    backends = run.study.get("backends") or (config.backends if config else []) or []
    out = {}
    for b in backends:
        if b.get("simulated") or b.get("provider") == "sim":
            out[b.get("model", b.get("spec", "?"))] = b.get("spec", "?")
    return out


def _model_html(model: str, simulated: dict[str, str],
                label: Callable[[str], str] = str) -> str:
    """The model as the page shows it: a simulated one by name with its SIMULATED tag,
    any other as ``label`` names it (a person's name marked ``(human)``)."""
    if model in simulated:
        return e(model) + f'<span class=simtag title="{e(simulated[model])}">SIMULATED</span>'
    return e(label(model))


def _header(run: DirectorRun, a: Analysis, simulated: dict[str, str]) -> str:
    d = a.design
    sets = run.study.get("scenes") or {}
    set_text = ", ".join(f"{name} ({v.get('n', '?')} scenes)" for name, v in sets.items()) or \
        ", ".join(sorted({r.set for r in a.rates}))
    models = ", ".join(_model_html(m, simulated, a.label) for m in a.models)
    rows = [("design", e(d.name) + (f" — {e(d.description)}" if d.description else "")),
            ("models", models), ("replies", e(a.n_replies)), ("scene sets", e(set_text)),
            ("batches", e(", ".join(b.name for b in d.batches))),
            ("samples", e(d.samples)),
            ("run", e(run.path) + (f" · {e(run.run.config.created_at)}"
                                    if run.run.config and run.run.config.created_at else ""))]
    out = [f"<h1>Director study {e(d.name)}</h1>"]
    if simulated:
        sim = [m for m in a.models if m in simulated]
        out.append(f"<p class=banner><b>SIMULATED</b>: the replies of {e(', '.join(sim))} "
                   "come from a simulated respondent, not a model; its numbers test the "
                   "pipeline, not a model.</p>")
    out.append("<dl class=head>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
               + "</dl>")
    return "\n".join(out)


# --- tables ----------------------------------------------------------------------------------


def _rates_table(t: Any, simulated: dict[str, str], anchor: str) -> tuple[str, int]:
    """A rates table: per model a row for the answer rate and one per measure; a column per
    condition. Returns the HTML and its body rows."""
    rows = rate_rows(t)
    span = {m: sum(1 for r in rows if r[0] == m) for m in t.models}
    out = [f'<h3 id="{e(anchor)}">{e(t.title)}</h3>',
           f'<div class=wrap><table class="rates" id="{e(anchor)}-table"><thead><tr>'
           "<th class=l>model</th><th class=l>measure</th>"
           + "".join(f"<th>{e(c)}</th>" for c in t.conditions) + "</tr></thead><tbody>"]
    last = None
    for model, label, cells in rows:
        first = model != last
        tr = "<tr class=first>" if first and last is not None else "<tr>"
        shown = _model_html(model, simulated, lambda m: t.labels.get(m, m))
        head = (f'<td class=l rowspan="{span[model]}">{shown}</td>'
                if first else "")
        last = model
        tds = []
        for value, ci, note in cells:
            parts = [e(value)]
            if ci:
                parts.append(f"<br><span class=ci>{e(ci)}</span>")
            if note:
                parts.append(f"<br><span class=ci>{e(note)}</span>")
            tds.append("<td>" + "".join(parts) + "</td>")
        out.append(f"{tr}{head}<td class='l m'>{e(label)}</td>{''.join(tds)}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out), len(rows)


_MARK_CLASS = {"*": "sig", "†": "dagger"}


def _changes_table(group: str, changes: Sequence[Change], simulated: dict[str, str],
                   label: Callable[[str], str] = str) -> tuple[str, int]:
    margin = group == MARGIN_GROUP
    head = ["comparison", "model", "change (points)", "95% interval",
            *(["within margin"] if margin else ["mark", "p", "adj. p"]), "method", "n", "scenes"]
    out = ['<div class=wrap><table class="changes"><thead><tr>'
           + "".join(f'<th{" class=l" if h in ("comparison", "model") else ""}>{e(h)}</th>'
                     for h in head) + "</tr></thead><tbody>"]
    span: dict[int, int] = {}
    for c in changes:
        span[c.index] = span.get(c.index, 0) + 1
    last = None
    for c in changes:
        v = change_cells(c)
        first = c.index != last
        tr = "<tr class=first>" if first and last is not None else "<tr>"
        k = c.comparison
        sub = f"<br><span class=what>{e(what(k))}</span>" if k.label else ""
        title = (f'<td class=l rowspan="{span[c.index]}"><b>{e(k.title if k.label else what(k))}'
                 f"</b>{sub}</td>") if first else ""
        last = c.index
        cls = _MARK_CLASS.get(c.mark, "")
        if c.ok:
            diff = f"<span class={cls}>{e(v['diff'])}</span>" if cls else e(v["diff"])
        else:
            diff = f'<span class=status title="{e(c.note)}">{e(v["diff"])}</span>'
            if c.note and c.status != "not asked":
                diff += f"<br><span class=ci>{e(c.note)}</span>"
        cells = [f"<td class=l>{_model_html(c.model, simulated, label)}</td>", f"<td>{diff}</td>",
                 f"<td>{e(v['interval'])}</td>"]
        if margin:
            vcls = {True: "within", False: "notwithin"}.get(c.equivalent, "") \
                if c.equivalent is not None else ""
            cells.append(f"<td><span class={vcls}>{e(v['verdict'])}</span></td>" if vcls
                         else "<td></td>")
        else:
            mark = (f"<span class={cls}>{e(v['mark'])}</span>" if cls else e(v["mark"]))
            cells += [f"<td>{mark}</td>", f"<td>{e(v['p'])}</td>", f"<td>{e(v['p_adj'])}</td>"]
        cells += [f"<td>{e(v[x])}</td>" for x in ("method", "n", "G")]
        out.append(tr + title + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out), len(changes)


# --- example scenes ----------------------------------------------------------------------------


def _caption(rec: TrajectoryRecord, inst: Any) -> list[str]:
    """Caption lines: condition, report, choice, key."""
    p = rec["params"]
    lines = [f"condition {p.get('condition', '?')} · batch {p.get('batch', '')} · "
             f"sample {rec['sample']}"]
    pred = rec["prediction"] if isinstance(rec["prediction"], dict) else {}
    m = rec["metrics"]
    if rec["status"] != "answered":
        kind = error_kind(rec, "")
        lines.append(f"unanswered ({kind or rec['status']})")
    report = {k: v for k, v in pred.items() if k in ("visible", "known", "count")}
    if report:
        ok = {"visible": "accuracy", "known": "known", "count": "count"}
        marks = [("✓" if m[ok[k]] >= 1 else "✗") for k in report if ok[k] in m]
        lines.append(f"report: {fields_text(report)}" + (f" {' '.join(marks)}" if marks else ""))
    elif rec["status"] == "answered":
        lines.append("report: not asked")
    block = chosen_block(rec)
    if block is not None:
        lines.append(f"choice: block {block}" + (f" ({choice_role(block, inst.truth)})"
                                                 if inst is not None else ""))
    lines.append("key: " + (key_text(inst.truth) if inst is not None else "unavailable"))
    return lines


def _examples(run: DirectorRun, img: Path, analysis: Analysis, n_scenes: int,
              cap: int | None, result: ExportResult) -> list[str]:
    """The first scenes under each condition of the first batch (sample 0, first model)."""
    if n_scenes <= 0 or cap == 0:
        return []
    records = run.records()
    batches = [b for b in analysis.design.batches
               if any(r["params"].get("batch") == b.name for r in records)]
    if not batches:
        return []
    batch = batches[0]
    mine = [r for r in records if r["params"].get("batch") == batch.name]
    model = next((m for m in analysis.models if any(run.model(r) == m for r in mine)),
                 run.model(mine[0]))
    mine = [r for r in mine if run.model(r) == model]
    first_sample = min(r["sample"] for r in mine)
    by = {(r["instance_id"], r["params"]["condition"]): r for r in mine
          if r["sample"] == first_sample}
    scene_ids = sorted({sid for sid, _ in by})[:n_scenes]
    conds = [c for c in batch.conditions if any((s, c) in by for s in scene_ids)]
    out = [f"<p class=note>{e(model)}, batch {e(batch.name)}, sample {first_sample}: the "
           f"first {len(scene_ids)} scenes under each of its conditions. Red: the hidden block; "
           "green: the director-view block; magenta: the chosen block. Any other: unseen show "
           "RUN SCENE --strategy CONDITION --model M --sample K --png FILE</p>"]
    notes: list[str] = []
    capped = 0
    for sid in scene_ids:
        inst, why = run.scene(sid)
        out.append(f'<h3 id="scene-{e(slug(sid))}">{e(sid)}</h3>')
        if inst is None:
            notes.append(f"{sid}: {why}")
        for cond in conds:
            rec = by.get((sid, cond))
            if rec is None:
                continue
            head, *more = _caption(rec, inst)
            caption = "<br>".join([f"<b>{e(head)}</b>", *map(e, more)])
            if (cap is not None and len(result.strips) >= cap) or inst is None:
                capped += inst is not None
                out.append(f"<p class=note>{caption}</p>")
                continue
            name = f"scene-{len(result.strips):03d}-{slug(sid)}-{slug(cond)}.png"
            try:
                write_png(run.run, sid, img / name, strategy=rec["strategy"],
                          model=rec["backend"] or model, sample=rec["sample"])
            except (ValueError, OSError) as exc:
                notes.append(f"{sid} {cond}: {exc}")
                out.append(f"<p class=note>{caption}</p>")
                continue
            result.strips.append(img / name)
            out.append(f'<figure class=scene><a href="img/{e(name)}"><img src="img/{e(name)}" '
                       f'alt="{e(sid)} under {e(cond)}"{img_attrs(img / name)}></a>'
                       f"<figcaption>{caption}</figcaption></figure>")
    if notes:
        result.notes += notes
        out.insert(1, "".join(f"<p class='note bad'>{e(n)}</p>" for n in notes))
    if capped:
        note = f"scene pictures for the first {cap} of {(cap or 0) + capped} (--max-strips)"
        result.notes.append(note)
        out.insert(1, f"<p class=note>{e(note)}</p>")
    return out
