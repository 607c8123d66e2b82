"""Cost in currency beside quality: ``compare`` (every format), ``show``, ``director analyze``
(json too) and the HTML export carry US dollars per instance (per reply) and in all, from the
journal's token counts × the price table at view time; the legend names the prices and their
dates, and "no price" for a model without one (never 0); the simulator and rules have none."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fake_providers import Reply
from helpers import read_journal, run_tiny_study, tiny_design
from rich.console import Console

import unseen
from unseen.backends.prices import using
from unseen.engine.rundir import RunDir
from unseen.views import CompareOptions, views_for

PRICES = ('[[price]]\npattern = "acme-vision"\ninput = 100.0\ncached_input = 10.0\n'
          'output = 1000.0\nbatch_discount = 0.5\ndate = 2026-12-01\nsource = "a test"\n')
CALL = dict(prompt_tokens=1000, cached_tokens=500, completion_tokens=100, reasoning_tokens=60)
CALL_COST = (500 * 100 + 500 * 10 + 100 * 1000) / 1e6  # $0.155
N = 4


@pytest.fixture(scope="module")
def prices_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prices") / "prices.toml"
    path.write_text(PRICES, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, sample_data, fake_server):
    """A run of acme-vision-7b (on the fake server) and of the simulator, N instances each."""
    fake_server.reset(Reply('{"box": [100, 200, 300, 400]}', **CALL))
    out = tmp_path_factory.mktemp("costs") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test")
        unseen.run(sample_data, ["direct"], ["openai:acme-vision-7b", "sim"], out=out,
                   base_url=fake_server.openai_base_url, box_format="norm1000", limit=N,
                   cache=False, progress=False)
    return out


def compare(run_main, run_dir, *more):
    code, out, err = run_main(["compare", str(run_dir), *more])
    assert code == 0, err
    return out


def test_json_carries_the_cost_per_instance_and_in_all(run_main, run_dir, prices_file):
    rows = {r["model"]: r for r in json.loads(compare(run_main, run_dir, "--format", "json",
                                                      "--prices", str(prices_file)))}
    acme, sim = rows["acme-vision-7b"], rows["sim-default"]
    assert acme["cost_usd"] == pytest.approx(CALL_COST)
    assert acme["cost_total_usd"] == pytest.approx(N * CALL_COST)
    assert acme["price"]["origin"] == str(prices_file) and acme["price"]["date"] == "2026-12-01"
    assert sim["cost_usd"] is None and sim["price"] is None and not sim["costed"]


def test_a_model_without_a_price_says_so_never_zero(run_main, run_dir, monkeypatch):
    monkeypatch.delenv("UNSEEN_PRICES", raising=False)
    rows = {r["model"]: r for r in json.loads(compare(run_main, run_dir, "--format", "json"))}
    assert rows["acme-vision-7b"]["costed"] and rows["acme-vision-7b"]["cost_usd"] is None
    md = compare(run_main, run_dir, "--format", "md")
    acme_line = next(line for line in md.splitlines() if line.startswith("| acme-vision-7b"))
    assert acme_line.endswith("| no price | no price |")
    assert "no price (add one with --prices FILE): acme-vision-7b" in md


def test_md_csv_and_latex_have_the_cost_columns_and_the_legend(run_main, run_dir, prices_file):
    md = compare(run_main, run_dir, "--format", "md", "--prices", str(prices_file))
    header = md.splitlines()[0]
    assert header.endswith("| USD/inst | USD total |")
    acme = next(line for line in md.splitlines() if line.startswith("| acme-vision-7b"))
    assert acme.endswith(f"| {CALL_COST:.3f} | {N * CALL_COST:.3f} |")
    sim = next(line for line in md.splitlines() if line.startswith("| sim-default"))
    assert sim.endswith("|  |  |")  # the simulator has no cost
    assert ("prices per 1M tokens in/cached/out: acme-vision-7b $100.00/$10.00/$1000.00 "
            f"({prices_file}, read 2026-12-01)") in md
    table = list(csv.DictReader(io.StringIO(compare(run_main, run_dir, "--format", "csv",
                                                    "--prices", str(prices_file)))))
    acme_row = next(r for r in table if r["model"] == "acme-vision-7b")
    assert float(acme_row["cost_usd"]) == pytest.approx(CALL_COST)
    assert json.loads(acme_row["price"])["input"] == 100.0
    tex = compare(run_main, run_dir, "--format", "latex", "--prices", str(prices_file))
    assert "USD/inst. & USD total" in tex and f"& {CALL_COST:.3f} & {N * CALL_COST:.3f}" in tex


def shown(renderable, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_shows_the_cost_or_says_it_left_it_out(run_dir, prices_file, width):
    with using(prices_file):
        # no paired differences (compare's default pairs against direct): the cost columns
        table = views_for("scenefunri").compare([RunDir.open(run_dir)],
                                                CompareOptions(baseline=""), "table", width)
    text = shown(table, width)
    assert max(len(line) for line in text.splitlines()) <= width
    header = next(line for line in text.splitlines() if "model / strategy" in line)
    if width == 120:
        assert "$/inst" in header
        assert f"{CALL_COST:.3f}" in text and f"Σ{N * CALL_COST:.3f}" in text
        flat = " ".join(text.split())  # the note wraps where the price file's path ends
        assert "cost: USD per instance" in flat and "read 2026-12-01" in flat
    else:  # left out like the other costs, and said so
        assert "$/inst" not in header
        assert "$/inst" in " ".join(text.split()).split("left out at this width:")[1]


def test_a_journal_before_cached_tokens_still_reads_and_costs(run_main, run_dir, prices_file,
                                                              tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    lines = []
    for rec in read_journal(old):
        for s in rec["steps"]:
            s["reply"]["usage"].pop("cached_input_tokens", None)
        lines.append(json.dumps(rec))
    (old / "trajectories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = {r["model"]: r for r in json.loads(compare(run_main, old, "--format", "json",
                                                      "--prices", str(prices_file)))}
    # no cached count: every input token at the input rate
    assert rows["acme-vision-7b"]["cost_usd"] == pytest.approx((1000 * 100 + 100 * 1000) / 1e6)


def test_show_and_the_export_carry_the_cost(run_main, run_dir, prices_file, tmp_path):
    from unseen.views.show import show_summary

    console = Console(file=io.StringIO(), width=140, color_system=None)
    with using(prices_file):
        show_summary(console, run_dir, strategy=None, model=None)
    out = console.file.getvalue()
    assert "$/inst" in out and f"{CALL_COST:.3f}" in out and "read 2026-12-01" in out
    inst = read_journal(run_dir)[0]["instance_id"]
    code, out, err = run_main(["show", str(run_dir), inst, "--model", "acme-vision-7b",
                               "--no-images", "--prices", str(prices_file)])
    assert code == 0, err
    assert f"${CALL_COST:.3f}" in out
    code, out, err = run_main(["export", str(run_dir), "--html", str(tmp_path / "site"),
                               "--prices", str(prices_file)])
    assert code == 0, err
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "USD/ inst" in page and f"{CALL_COST:.3f}" in page and "read 2026-12-01" in page


def test_a_bad_price_file_is_one_line_for_the_views(run_main, run_dir, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[price]]\npattern = 3\n", encoding="utf-8")
    for argv in (["compare", str(run_dir)], ["show", str(run_dir)],
                 ["export", str(run_dir), "--html", str(tmp_path / "s")]):
        code, out, err = run_main([*argv, "--prices", str(bad)])
        assert code == 2 and "Traceback" not in err, argv
        (line,) = err.strip().splitlines()
        assert str(bad) in line


# --- the Director Task -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def study(tmp_path_factory, fake_server, director_scenes):
    fake_server.reset(Reply(json.dumps({"visible": [1, 2], "choice": 1}), **CALL))
    design = tiny_design(n=2, batches={"b": ["move", "move/novis"]})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test")
        return run_tiny_study(tmp_path_factory.mktemp("dcost"), design,
                              ["acme-vision-7b=openai:acme-vision-7b", "sim"], director_scenes,
                              cache=False, base_url=fake_server.openai_base_url)[1]


def test_director_analyze_gives_each_models_cost(run_main, study, prices_file, monkeypatch):
    code, out, err = run_main(["director", "analyze", str(study), "--format", "json",
                               "--prices", str(prices_file)])
    assert code == 0, err
    (acme,) = json.loads(out)["costs"]  # the simulator has none
    assert acme["model"] == "acme-vision-7b" and acme["replies"] == 4
    assert acme["cost_usd"] == pytest.approx(CALL_COST)
    assert acme["cost_total_usd"] == pytest.approx(4 * CALL_COST)
    assert acme["cached_input_tokens"] == 4 * 500 and acme["price"]["date"] == "2026-12-01"
    code, md, err = run_main(["director", "analyze", str(study), "--format", "md",
                              "--prices", str(prices_file)])
    assert "### cost per model" in md and f"| acme-vision-7b | 4 | {CALL_COST:.3f} |" in md
    monkeypatch.setenv("COLUMNS", "80")
    code, table, err = run_main(["director", "analyze", str(study), "--prices",
                                 str(prices_file)])
    assert "cost per model" in table and f"{4 * CALL_COST:.3f}" in table
    assert max(len(line) for line in table.splitlines()) <= 80
    code, tex, err = run_main(["director", "analyze", str(study), "--format", "latex",
                               "--prices", str(prices_file)])
    assert "USD/reply" in tex and f"{CALL_COST:.3f}" in tex
    monkeypatch.delenv("UNSEEN_PRICES", raising=False)
    code, out, err = run_main(["director", "analyze", str(study), "--format", "json"])
    (acme,) = json.loads(out)["costs"]
    assert acme["cost_usd"] is None and acme["price"] is None


def test_director_show_and_export_carry_the_cost(run_main, study, prices_file, tmp_path):
    code, out, err = run_main(["show", str(study), "--prices", str(prices_file)])
    assert code == 0, err
    assert "cost per model" in out and f"{CALL_COST:.3f}" in out
    code, out, err = run_main(["export", str(study), "--html", str(tmp_path / "site"),
                               "--prices", str(prices_file)])
    assert code == 0, err
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "USD/reply" in page and f"{4 * CALL_COST:.3f}" in page
