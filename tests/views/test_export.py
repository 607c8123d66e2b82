"""``unseen export --html``: a static report (table, curves, step strips) that a browser opens
from the file system.

One small run per module: the test set's first four instances, ``direct`` and ``spoe:T=3``
with the simulator. The page is checked as written (every <img> a PNG under img/), and, when
Debian's chromium is installed, as a headless browser loads it (its DOM and a screenshot).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import chromium
from PIL import Image, ImageStat
from typer.testing import CliRunner

import unseen
from unseen import cli
from unseen.evals.scenefunri.report.summary import summarize
from unseen.views.export import export_html
from unseen.views.scenefunri.export import table_html


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.rows: dict[str, int] = {}
        self.scripts = 0
        self._table: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.imgs.append(a["src"])
        elif tag == "a":
            self.links.append(a["href"])
        elif tag == "script":
            self.scripts += 1
        elif tag == "table":
            self._table.append(a.get("class", ""))
        elif tag == "tr" and self._table:
            self.rows[self._table[-1]] = self.rows.get(self._table[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._table.pop()


def _parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, sample_data):
    out = tmp_path_factory.mktemp("export") / "r"
    unseen.run(sample_data, ["direct", "spoe:T=3"], ["sim"], out=out, cache=False,
               progress=False, limit=4)
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory, run_dir):
    out = tmp_path_factory.mktemp("html") / "site"
    res = CliRunner().invoke(cli.app, ["export", str(run_dir), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 table rows, 2 curves, 8 of 8 trajectories" in res.output
    return out


def test_page_references_valid_pngs_by_relative_path(report):
    page = _parse((report / "index.html").read_text(encoding="utf-8"))
    assert page.scripts == 0
    # 2 curves + 8 strips (4 instances × direct, spoe)
    assert len(page.imgs) == 10
    assert sum(s.startswith("img/curve-") for s in page.imgs) == 2
    for src in page.imgs:
        assert src.startswith("img/") and "://" not in src
        path = report / src
        assert path.is_file(), src
        with Image.open(path) as im:
            assert im.format == "PNG"
            im.verify()
    # the summary: a header row and one per (model, strategy); instances: header + 4
    assert page.rows == {"summary": 3, "instances": 5}
    # every "steps" link points at a figure on the page, and the contents at the sections
    anchors = [h for h in page.links if h.startswith("#")]
    assert len([h for h in anchors if h.startswith("#strip-")]) == 8
    assert len(anchors) == 8 + 4 and all(h[1:] in page.ids for h in anchors)


def test_table_has_intervals_and_deltas(report, run_dir):
    html = (report / "index.html").read_text(encoding="utf-8")
    rows = summarize([run_dir], baseline="direct")
    spoe = next(r for r in rows if r["strategy"] == "spoe:T=3")
    assert f"{spoe['dist']:.2f}" in html
    assert f"[{spoe['dist_low']:.2f}, {spoe['dist_high']:.2f}]" in html
    assert f"{spoe['delta_dist']:+.2f}" in html
    assert "paired difference against direct" in html


def test_text_is_escaped():
    row = {"model": "<script>alert(1)</script>", "strategy": "a&b\"", "kind": "model",
           "n": 1, "instances": 1, "dist": 1.0, "dist_low": 0.5, "dist_high": 2.0}
    html = table_html([row])
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "a&amp;b&quot;" in html


def test_strip_cap_with_note(tmp_path, run_dir):
    res = export_html([run_dir], tmp_path / "site", max_strips=3)
    assert len(res.strips) == 3 and res.trajectories == 8
    html = res.index.read_text(encoding="utf-8")
    assert "step strips for 3 of 8 trajectories, of the worst instances first" in html
    assert len(_parse(html).imgs) == 2 + 3


def test_strips_and_instances_come_worst_first_as_show_orders_them(tmp_path, run_dir):
    """The strips drawn are of the worst instances (most unanswered, then highest Dist), in
    the order ``unseen show`` lists them, not the first instances by id."""
    import json

    from unseen.views.scenefunri.show import worst_key

    records = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text()
               .splitlines()]
    by_id: dict[str, list] = {}
    for r in records:
        by_id.setdefault(r["instance_id"], []).append(
            (r["status"], (r.get("metrics") or {}).get("dist")))
    worst = sorted(by_id, key=lambda i: worst_key(i, by_id[i]))
    assert worst != sorted(worst)  # the run tells the two orders apart
    res = export_html([run_dir], tmp_path / "site", max_strips=1)
    assert worst[0] in res.strips[0].name
    html = res.index.read_text(encoding="utf-8")
    positions = [html.index(f"<td class='l id'>{i}") for i in worst]
    assert positions == sorted(positions)


def test_runs_sharing_a_model_and_strategy_pool_only_when_asked(tmp_path, run_dir):
    """As ``compare`` does: two runs with the same (model, strategy) are one row with
    --pool, refused without it (nothing written)."""
    shutil.copytree(run_dir, tmp_path / "again", ignore=shutil.ignore_patterns("run.lock"))
    argv = ["export", str(run_dir), str(tmp_path / "again"), "--html", str(tmp_path / "site")]
    res = CliRunner().invoke(cli.app, argv)
    assert res.exit_code != 0 and "--pool" in str(res.exception or res.output)
    assert not (tmp_path / "site").exists()
    res = CliRunner().invoke(cli.app, [*argv, "--pool"])
    assert res.exit_code == 0, res.output
    assert "2 table rows" in res.output and "of 16 trajectories" in res.output


def _browser(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_chromium_loads_the_page(report, tmp_path):
    exe = chromium()
    url = (report / "index.html").resolve().as_uri()
    dom = _browser(exe, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = _parse(dom.stdout)
    assert page.rows == {"summary": 3, "instances": 5}
    assert len(page.imgs) == 10 and all((report / s).is_file() for s in page.imgs)
    assert "spoe:T=3" in dom.stdout

    shot = tmp_path / "shot.png"
    res = _browser(exe, tmp_path, f"--screenshot={shot}", "--window-size=1200,900", url)
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    with Image.open(shot) as im:
        assert im.size == (1200, 900)
        stat = ImageStat.Stat(im.convert("L"))
        lo, hi = im.convert("L").getextrema()
    assert hi - lo > 100 and stat.stddev[0] > 10  # text, table lines, the curve: not blank


# --- reading well (issue 18) -----------------------------------------------------------------


def test_a_simulated_run_says_so_in_a_banner(report):
    html = (report / "index.html").read_text(encoding="utf-8")
    banner = re.search(r"<p class=banner>(.*?)</p>", html, re.S)
    assert banner and "SIMULATED" in banner.group(1) and "sim-default" in banner.group(1)
    assert html.index("class=banner") < html.index('class="summary"')  # before the numbers


_WIDTHS = """<script>
window.addEventListener("load", () => {
  const right = el => Math.ceil(el.getBoundingClientRect().right);
  const out = {view: window.innerWidth, page: document.documentElement.scrollWidth,
               tables: [...document.querySelectorAll("table")].map(t => [t.className, right(t)]),
               wraps: [...document.querySelectorAll(".wrap")].map(w => [w.scrollWidth,
                                                                        w.clientWidth])};
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory, sample_data):
    """Six rows with deltas and long model names: the widest table a SceneFunRI page has."""
    out = tmp_path_factory.mktemp("wide")
    unseen.run(sample_data, ["direct", "spoe:T=3", "direct:prompt=both"],
               ["sim", "sim:noisy,unparseable=0.5,skill=0.2"], out=out / "r", cache=False,
               progress=False, limit=4)
    res = CliRunner().invoke(cli.app, ["export", str(out / "r"), "--html", str(out / "site")])
    assert res.exit_code == 0, res.output
    return out / "site"


@pytest.mark.slow
def test_no_table_overflows_a_1280_px_window(wide_report, tmp_path):
    exe = chromium()
    site = tmp_path / "site"
    shutil.copytree(wide_report, site)  # the probe goes into a copy: the report has no script
    probe = site / "probe.html"
    probe.write_text((site / "index.html").read_text(encoding="utf-8")
                     .replace("</body>", _WIDTHS + "</body>"), encoding="utf-8")
    dom = _browser(exe, tmp_path, "--window-size=1280,900", "--virtual-time-budget=5000",
                   "--dump-dom", probe.resolve().as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    data = json.loads(unescape(m.group(1)))
    assert data["view"] <= 1280 and data["page"] <= data["view"], data
    assert {c for c, _ in data["tables"]} == {"summary", "instances"}
    assert all(r <= data["view"] for _, r in data["tables"]), data
    assert all(s <= c for s, c in data["wraps"]), data  # nothing to scroll sideways
    shot = tmp_path / "shot.png"
    res = _browser(exe, tmp_path, f"--screenshot={shot}", "--window-size=1280,900",
                   (site / "index.html").resolve().as_uri())
    assert res.returncode == 0 and Image.open(shot).size == (1280, 900)


def test_the_report_opens_with_its_contents(tmp_path, run_dir):
    html = export_html([run_dir], tmp_path / "site", max_strips=2).index.read_text("utf-8")
    nav = html[html.index("<nav>"):html.index("</nav>")]
    for anchor in ("comparison", "instances", "strips"):
        assert f'href="#{anchor}"' in nav and f'id="{anchor}"' in html
    assert html.index("<nav>") < html.index('id="comparison"')
