"""``unseen export RUN --html DIR`` on a Director Task study run: the header, the rates and
changes tables with the numbers of ``unseen director analyze``, the plots and the example
scenes, all by relative path; mixed inputs refused in one line.

One tiny study per module (4 scenes at 512x384, two samples, three conditions, one family
comparison and one margin test) answered by ``sim:director-strong``. The page is checked as
written and, when Debian's chromium is installed, as a headless browser loads it: a copy of
the page with a probe script reports each table's rows and each image's natural width.
"""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from helpers import chromium, run_tiny_study, tiny_design
from PIL import Image
from test_export import _browser, _parse
from typer.testing import CliRunner

from unseen import cli
from unseen.engine.rundir import RunDirError
from unseen.evals.director.analysis import shown as shown_cells
from unseen.evals.director.analysis.analyze import analyze_run
from unseen.evals.director.analysis.shown import interval, pct
from unseen.evals.director.analysis.tables import to_dict
from unseen.views.export import export_html

TINY = tiny_design(
    description="a tiny study & its <check>", samples=2, n=4,
    batches={"q": ["move", "move/novis", "move/twoturn"]},
    comparisons=[{"batch": "q", "base": "move/novis", "variant": "move", "family": "s4",
                  "label": "visibility question"},
                 {"batch": "q", "base": "move", "variant": "move/twoturn",
                  "measure": "accuracy", "margin": True}])
CONDITIONS = ("move", "move/novis", "move/twoturn")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, director_scenes) -> Path:
    return run_tiny_study(tmp_path_factory.mktemp("dexport"), TINY, ["sim:director-strong"],
                          director_scenes, cache=False)[1]


@pytest.fixture(scope="module")
def report(tmp_path_factory, run_dir) -> Path:
    out = tmp_path_factory.mktemp("dsite") / "site"
    res = CliRunner().invoke(cli.app, ["export", str(run_dir), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "index.html" in res.output
    return out


@pytest.fixture(scope="module")
def data(run_dir) -> dict:
    return to_dict(analyze_run(run_dir))  # the export's defaults: 2000 resamples, seed 0


def _html(report: Path) -> str:
    return (report / "index.html").read_text(encoding="utf-8")


def _text(html: str) -> str:
    """The page's text: tags dropped, entities resolved, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_header_conditions_and_comparisons(report, data):
    html = _html(report)
    page = _parse(html)
    assert page.scripts == 0
    text = _text(html)
    assert "Director study tiny" in text
    assert "a tiny study & its <check>" in text and "<check>" not in html  # escaped
    assert "sim-director-strong SIMULATED" in text and "main (4 scenes)" in text
    assert "replies 24" in text
    for cond in CONDITIONS:
        assert f"<th>{cond}</th>" in html
    assert "visibility question" in text and "move/twoturn − move: accuracy; batch q" in text
    assert "Family s4: Benjamini-Hochberg" in text and "Margin tests" in text
    assert "Legend" in text and "∗: an increase or a decrease" in text
    # one rates table (model × 9 measures, two derived from the report) and two changes
    # tables of one row each
    assert page.rows == {"rates": 1 + 9, "changes": 4}
    assert len(data["changes"]) == 2


def test_numbers_match_the_analysis(report, data):
    text = _text(_html(report))
    for c in data["changes"]:
        assert c["status"] == "ok"
        # an interval cut at ±100 points ends in ‡ (stats.compare, "The rule")
        cut = "‡" if c["clipped"] else ""
        diff, ci = pct(c["diff"], signed=True), interval(c["low"], c["high"]) + cut
        row = f"{c['model']} SIMULATED {diff} {ci}"
        assert row in text, row
        assert f"{c['method']} {c['n']} {c['G']}" in text
    first, margin = data["changes"]
    p = "<0.001" if first["p"] < 0.001 else f"{first['p']:.3f}"
    # the page prints the mark as the tables do (∗ / †), not as the data spells it, and an
    # interval cut at ±100 points ends in ‡
    cut = "‡" if first["clipped"] else ""
    shown = shown_cells._MARK[first["mark"] or ""]
    assert f"{interval(first['low'], first['high'])}{cut} {shown}".strip() in text
    assert p in text
    verdict = "within" if margin["equivalent"] else "not within"
    cut = "‡" if margin["clipped"] else ""
    assert f"{interval(margin['low'], margin['high'])}{cut} {verdict} {margin['method']}" in text
    move = next(r for r in data["rates"] if r["condition"] == "move")
    hidden = move["measures"]["hidden"]
    assert f"{pct(hidden['share'])} {interval(hidden['low'], hidden['high'], ends=pct)}" in text
    assert f"{move['answered']}/{move['n']}" in text


def test_images_are_relative_pngs_that_exist(report):
    page = _parse(_html(report))
    names = [Path(s).name for s in page.imgs]
    assert {"forest_s4.png", "forest_margin.png", "hidden_q.png"} <= set(names)
    scenes = [n for n in names if n.startswith("scene-")]
    assert len(scenes) == 3 * len(CONDITIONS)  # the first 3 scenes × the first batch
    for src in page.imgs + [h for h in page.links if not h.startswith("#")]:
        assert src.startswith("img/") and "://" not in src and ".." not in src
        with Image.open(report / src) as im:
            assert im.format == "PNG"
            im.verify()
    assert all(h[1:] in page.ids for h in page.links if h.startswith("#"))


def test_scene_captions(report, director_scenes):
    from unseen.evals.director.scenes.dataset import load_scenes
    from unseen.views.director.marks import key_text

    text = _text(_html(report))
    for cond in CONDITIONS:
        assert f"condition {cond} · batch q · sample 0" in text
    scenes = {i.id: i for i in load_scenes(director_scenes / "main")[0]}
    for sid in ("main-000", "main-001", "main-002"):
        assert text.count(f"key: {key_text(scenes[sid].truth)}") >= len(CONDITIONS)
    assert "main-003" not in text  # the first 3 scenes only
    assert text.count("key: hidden ") == 3 * len(CONDITIONS)
    assert "report: visible {" in text and "choice: block " in text


def test_mixed_and_several_runs_are_refused(tmp_path, run_dir, sample_data, run_main):
    import unseen

    other = tmp_path / "sfri"
    unseen.run(sample_data, ["direct"], ["sim"], out=other, cache=False, progress=False, limit=1)
    with pytest.raises(RunDirError, match="together with SceneFunRI runs"):
        export_html([other, run_dir], tmp_path / "x")
    with pytest.raises(RunDirError, match="one Director run at a time"):
        export_html([run_dir, run_dir], tmp_path / "x")
    code, _, err = run_main(["export", str(run_dir), str(other), "--html", str(tmp_path / "y")])
    assert code == 2 and "together with SceneFunRI runs" in err and err.count("\n") == 1
    assert not (tmp_path / "y" / "index.html").exists()


_PROBE = """<script>
window.addEventListener("load", () => {
  const out = {imgs: [...document.images].map(i => [i.getAttribute("src"), i.naturalWidth,
                                                     i.complete]),
               tables: [...document.querySelectorAll("table")].map(t => [t.className,
                                                                         t.rows.length,
                                                                         t.offsetWidth])};
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.slow
def test_chromium_renders_tables_and_images(report, tmp_path):
    exe = chromium()
    site = tmp_path / "site"
    shutil.copytree(report, site)  # the probe goes into a copy: the report has no script
    probe = site / "probe.html"
    probe.write_text(_html(site).replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = _browser(exe, tmp_path, "--virtual-time-budget=5000", "--dump-dom",
                   probe.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stdout[-2000:]
    got = json.loads(unescape(m.group(1)))
    assert len(got["imgs"]) == 12
    for src, width, complete in got["imgs"]:
        assert complete and width > 0, src
    assert [t[0] for t in got["tables"]] == ["rates", "changes", "changes"]
    assert all(rows > 1 and width > 0 for _, rows, width in got["tables"])
