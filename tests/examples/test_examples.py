"""The example plug-in packages under examples/, installed as pip leaves a package (their
modules on the path, a ``.dist-info`` with the entry points their own pyproject.toml
declares), then run offline from the command line in a fresh process: nothing in unseen/
knows them (issue 17's proof of plug-ins)."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # each test starts the CLI in fresh processes: `-m 'not slow'` skips

ROOT = Path(__file__).resolve().parents[2]  # tests/examples/ → the repository
EXAMPLES = ROOT / "examples"


def install(example: str, site: Path) -> None:
    """Copy the example's packages into ``site`` and write its entry points as pip would."""
    project = tomllib.loads((EXAMPLES / example / "pyproject.toml").read_text("utf-8"))
    meta = project["project"]
    for pkg in project["tool"]["setuptools"]["packages"]:
        shutil.copytree(EXAMPLES / example / pkg, site / pkg, dirs_exist_ok=True)
    dist = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\n"
                                   f"Version: {meta['version']}\n", encoding="utf-8")
    groups = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
                     for group, eps in meta["entry-points"].items())
    (dist / "entry_points.txt").write_text(groups, encoding="utf-8")


def python(site: Path, *args: str, cwd: Path, columns: int = 120) -> subprocess.CompletedProcess:
    """``python ARGS`` in a fresh process that sees the installed examples."""
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": str(columns),
           "UNSEEN_RUNS": str(cwd)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def unseen_cli(site: Path, *args: str, cwd: Path, columns: int = 120) -> subprocess.CompletedProcess:
    return python(site, "-m", "unseen.cli", *args, cwd=cwd, columns=columns)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    for example in sorted(p.name for p in EXAMPLES.iterdir() if (p / "pyproject.toml").is_file()):
        install(example, site)
    return site


def test_every_example_is_a_package_with_entry_points():
    names = [p.name for p in EXAMPLES.iterdir() if (p / "pyproject.toml").is_file()]
    assert "quadrant" in names
    for name in names:
        meta = tomllib.loads((EXAMPLES / name / "pyproject.toml").read_text())["project"]
        assert any(g.startswith("unseen.") for g in meta["entry-points"]), name


def test_the_quadrant_strategy_plug_in(site, tmp_path, sample_data):
    """Listed, run offline against sim, drawn per round with its own ceiling, refused with
    a rule that cannot choose, and answerable by a person (its requests say what to ask)."""
    res = unseen_cli(site, "strategies", cwd=tmp_path)
    assert res.returncode == 0 and "quadrant" in res.stdout
    res = unseen_cli(site, "run", "--data", str(sample_data), "-s", "quadrant", "-s",
                     "quadrant:T=2", "-b", "sim:strong,unparseable=0", "--out", "r", "--no-cache", "-q",
                     cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 24 and all(r["status"] == "answered" for r in rows)
    three = [r for r in rows if r["strategy"] == "quadrant"]
    assert all(len(r["steps"]) == 3 for r in three)
    # each round keeps a quarter of the region before it
    for r in three:
        areas = [(s["region"][2] - s["region"][0]) * (s["region"][3] - s["region"][1])
                 for s in r["steps"]]
        assert all(abs(b - a / 4) < 1e-6 * a for a, b in zip(areas, areas[1:], strict=False))
    res = unseen_cli(site, "curve", "r", "--ceiling", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    curve = json.loads(res.stdout)
    ceiling = {r["ceiling"] for r in curve if r["model"] == "oracle (ceiling)"}
    assert ceiling == {"quadrants"}
    mine = sorted((r["t"], r["dist"]) for r in curve if r["strategy"] == "quadrant"
                  and r["model"].startswith("sim-strong"))
    assert [t for t, _ in mine] == [0, 1, 2, 3] and mine[-1][1] < mine[0][1]
    res = unseen_cli(site, "run", "--data", str(sample_data), "-s", "quadrant", "-b",
                     "baseline:center", "--out", "no", cwd=tmp_path)
    assert res.returncode == 2 and "choice" in res.stderr and not (tmp_path / "no").exists()


def test_the_biased_backend_plug_in(site, tmp_path, sample_data):
    """Listed by `unseen backends`, it answers direct and spoe from what any backend gets:
    a box in the corner its side names, the first or last label of a choice."""
    res = unseen_cli(site, "backends", cwd=tmp_path)
    assert res.returncode == 0 and "biased" in res.stdout
    res = unseen_cli(site, "run", "--data", str(sample_data), "-s", "direct", "-s", "spoe:T=2",
                     "-b", "biased:first", "-b", "biased:last", "--out", "r", "--limit", "3",
                     "-q", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 2 * 3 and all(r["status"] == "answered" for r in rows)
    insts = {i.id: i for i in __import__("unseen").load_dataset(sample_data).instances}
    for r in rows:
        w, h = insts[r["instance_id"]].width, insts[r["instance_id"]].height
        first = r["model"] == "biased-first"
        if r["strategy"] == "direct":
            want = [0, 0, w / 2, h / 2] if first else [w / 2, h / 2, w, h]
            assert r["prediction"] == pytest.approx(want, abs=0.1)
        else:  # eliminating A (left, then top) keeps the bottom right; eliminating B the top left
            assert [s["parsed"]["choice"] for s in r["steps"]] == (["A", "A"] if first
                                                                    else ["B", "B"])
            want = [w / 2, h / 2, w, h] if first else [0, 0, w / 2, h / 2]
            assert r["prediction"] == pytest.approx(want, abs=1.0)
    res = unseen_cli(site, "compare", "r", "-f", "json", cwd=tmp_path)
    assert res.returncode == 0 and {r["model"] for r in json.loads(res.stdout)} == {
        "biased-first", "biased-last"}


# --- the pointing benchmark (examples/pointing, docs/writing-a-benchmark.md) ----------------

GUIDE = ROOT / "docs" / "writing-a-benchmark.md"


@pytest.fixture
def pointing(site, monkeypatch):
    """The package's modules, imported in this process (no entry point is read)."""
    monkeypatch.syspath_prepend(str(site))
    return importlib.import_module("unseen_pointing.benchmark")


def records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]


def one_line_error(res: subprocess.CompletedProcess, *words: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    for w in words:
        assert w in res.stderr, res.stderr


@pytest.fixture(scope="module")
def pointing_run(site, tmp_path_factory) -> Path:
    """Six pictures (seed 0), spoe and direct, answered by sim:oracle and sim."""
    tmp = tmp_path_factory.mktemp("pointing")
    assert python(site, "-m", "unseen_pointing", "data", "--n", "6", cwd=tmp).returncode == 0
    res = unseen_cli(site, "run", "--benchmark", "pointing", "--data", "data", "-s", "spoe:T=3",
                     "-s", "direct", "-b", "sim:oracle", "-b", "sim", "--out", "r", "-q",
                     cwd=tmp)
    assert res.returncode == 0, res.stderr
    return tmp / "r"


def test_the_pointing_pictures_are_seeded_and_hide_the_block(site, tmp_path, pointing):
    """The same seed draws the same data set byte for byte; of the named block's colour only
    the strip under its screen shows, and it shows."""
    from PIL import Image

    scenes = importlib.import_module("unseen_pointing.scenes")
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        res = python(site, "-m", "unseen_pointing", name, "--n", "5", "--seed", seed, cwd=tmp_path)
        assert res.returncode == 0 and "wrote 5 instances" in res.stdout, res.stderr
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.*"))
    assert len(files) == 6
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
               for f in files)
    assert (tmp_path / "a" / "pointing.jsonl").read_text() != \
        (tmp_path / "c" / "pointing.jsonl").read_text()
    for line in (tmp_path / "a" / "pointing.jsonl").read_text().splitlines():
        inst = json.loads(line)
        colour, (x1, y1, x2, y2) = inst["meta"]["colour"], inst["box"]
        assert f"A {colour} block is hidden" in inst["instruction"]
        sx1, sy1, sx2, sy2 = inst["meta"]["screen"]
        assert sx1 < x1 < x2 < sx2 and sy1 < y1 and y2 == scenes.FLOOR  # behind its screen
        im = Image.open(tmp_path / "a" / inst["image"]).convert("RGB")
        rgb = scenes.COLOURS[colour]
        shown = [(x, y) for x in range(im.width) for y in range(im.height)
                 if im.getpixel((x, y)) == rgb]
        assert shown, inst["id"]  # the strip under the screen
        assert all(x1 <= x < x2 and scenes.FLOOR - scenes.GAP <= y < scenes.FLOOR
                   for x, y in shown), inst["id"]


def test_the_pointing_score_worked_by_hand(pointing):
    """hit: the box's centre inside the block; dist: the centres' distance over the image's
    diagonal. A 320 x 240 image has a diagonal of 400."""
    from unseen.engine.types import Instance

    inst = Instance(id="x", image="x.png", width=320, height=240, truth={"box": [200, 150, 240, 180]})
    # the centred box (160, 120) against the block's centre (220, 165): 60, 45 → 75 px
    assert pointing.score(inst, [80, 60, 240, 180]) == {"hit": 0.0, "dist": 0.1875}
    # a small box centred at (228, 171): 8, 6 → 10 px, inside the block
    assert pointing.score(inst, [226, 169, 230, 173]) == {"hit": 1.0, "dist": 0.025}
    # a centre on the block's edge (240, 165) is a hit; 20 px off
    assert pointing.score(inst, [230, 160, 250, 170]) == {"hit": 1.0, "dist": 0.05}
    assert pointing.score(inst, None) == {"hit": 0.0}  # unanswered: no dist


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.binary(max_size=12),
    st.dictionaries(st.sampled_from(["id", "image", "instruction", "box", "meta", "x"]),
                    st.one_of(st.text(max_size=6), st.integers(-5, 400), st.none(),
                              st.sampled_from(["pic.png", "../pic.png", "gone.png"]),
                              st.lists(st.one_of(st.floats(-10, 400), st.just(float("nan"))),
                                       max_size=5)),
                    max_size=6).map(lambda d: json.dumps(d).encode())), min_size=1, max_size=3))
def test_the_pointing_reader_names_the_bad_line(pointing, tmp_path, lines):
    """Whatever a pointing.jsonl holds, reading it gives instances or one UnseenError."""
    from PIL import Image

    from unseen.engine.errors import UnseenError

    data = importlib.import_module("unseen_pointing.data")
    Image.new("RGB", (320, 240)).save(tmp_path / "pic.png")
    (tmp_path / "pointing.jsonl").write_bytes(b"\n".join(lines))
    try:
        instances, _ = data.load(tmp_path)
    except UnseenError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(i.truth["box"] and i.width == 320 for i in instances)


def test_pointing_is_listed_with_the_strategies_it_accepts(site, tmp_path):
    res = unseen_cli(site, "benchmarks", cwd=tmp_path, columns=250)
    assert res.returncode == 0, res.stderr
    row = next(x for x in res.stdout.splitlines() if x.startswith("│ pointing "))
    assert "point at a block hidden behind one of two or three screens" in row
    for name in ("direct", "spoe", "cot", "quadrant"):  # SceneFunRI's and a plug-in's
        assert name in row


def test_a_known_answer_scored_by_hand_through_the_cli(site, tmp_path):
    """Two blank 320 x 240 pictures; baseline:center answers [80, 60, 240, 180] (centre 160,
    120) for both. No --benchmark: the folder's pointing.jsonl names it."""
    from PIL import Image

    (tmp_path / "d").mkdir()
    for i, box in enumerate(([200, 150, 240, 180], [136, 88, 200, 164])):
        Image.new("RGB", (320, 240), "white").save(tmp_path / "d" / f"{i}.png")
        with (tmp_path / "d" / "pointing.jsonl").open("a") as f:
            f.write(json.dumps({"id": f"h{i}", "image": f"{i}.png", "box": box,
                                "instruction": "Where is the red block?"}) + "\n")
    res = unseen_cli(site, "run", "--data", "d", "-s", "direct", "-b", "baseline:center",
                     "--out", "r", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    # the run ends with its table as the benchmark's views draw it (hit, dist: the means)
    row = next(line for line in res.stdout.splitlines() if "center (rule)" in line)
    assert row.split()[-2:] == ["0.5", "0.106"], res.stdout
    got = {r["instance_id"]: r["metrics"] for r in records(tmp_path / "r")}
    # h0: (220, 165) is 60, 45 → 75 px off, a miss; h1: (168, 126) is 8, 6 → 10 px, a hit
    assert got == {"h0": {"hit": 0.0, "dist": 0.1875}, "h1": {"hit": 1.0, "dist": 0.025}}
    config = json.loads((tmp_path / "r" / "run.json").read_text())
    assert config["benchmark"] == "pointing" and config["scoring"]["hit"]
    res = unseen_cli(site, "compare", "r", "-f", "json", cwd=tmp_path)
    (row,) = json.loads(res.stdout)
    assert (row["model"], row["hit"], row["dist"]) == ("baseline-center", 0.5, 0.10625)


def test_a_pointing_run_in_show_compare_and_export(site, pointing_run, tmp_path):
    rows = records(pointing_run)
    assert len(rows) == 6 * 2 * 2 and {r["strategy"] for r in rows} == {"spoe:T=3", "direct"}
    oracle = [r for r in rows if r["model"] == "sim-oracle" and r["strategy"] == "direct"]
    assert all(r["metrics"]["hit"] == 1 and r["metrics"]["dist"] < 0.01 for r in oracle)
    res = unseen_cli(site, "show", str(pointing_run), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Pointing run r · 24 trajectories" in res.stdout
    assert "sim-oracle (sim)" in res.stdout and "sim-default (sim)" in res.stdout
    misses = sorted((r for r in rows if r["status"] == "answered" and not r["metrics"]["hit"]),
                    key=lambda r: -r["metrics"]["dist"])
    table = res.stdout[res.stdout.index("misses, farthest first"):]
    assert f"({len(misses)} of {len(misses)})" in table
    first = next(x for x in table.splitlines() if x.strip().startswith("pt-"))
    assert first.split()[0] == misses[0]["instance_id"]
    assert first.split()[-1] == f"{misses[0]['metrics']['dist']:.3f}"
    res = unseen_cli(site, "show", str(pointing_run), "pt-001", "--strategy", "direct",
                     "--model", "sim-oracle", "--no-images", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    instruction = json.loads((pointing_run.parent / "data" / "pointing.jsonl").read_text()
                             .splitlines()[1])["instruction"]
    assert instruction.split(".")[0] in " ".join(res.stdout.replace("│", " ").split())
    assert "metrics    hit 1" in res.stdout and "(SIMULATED)" in res.stdout
    res = unseen_cli(site, "compare", str(pointing_run), "-f", "json", cwd=tmp_path)
    for row in json.loads(res.stdout):
        mine = [r for r in rows if (r["model"], r["strategy"]) == (row["model"], row["strategy"])]
        assert row["hit"] == pytest.approx(sum(r["metrics"]["hit"] for r in mine) / len(mine))
    res = unseen_cli(site, "export", str(pointing_run), "--html", "site", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<h1>Pointing report</h1>" in html and "SIMULATED" in html and ">hit</th>" in html
    assert all(f"pt-{i:03d}" in html for i in range(6))
    srcs = re.findall(r'src="(img/[^"]+)"', html)
    assert srcs and all((tmp_path / "site" / s).is_file() for s in srcs)


TUI_PILOT = """
import asyncio, json, sys
from textual.widgets import Static, Tree
from unseen.views.tui import TuiApp

async def main():
    app = TuiApp([sys.argv[1]])
    async with app.run_test(size=(120, 40)) as pilot:
        rows = [[e.outcome, e.status, e.metrics.get("hit")] for e in app.shown()]
        await pilot.press("home")
        about = str(app.query_one("#detail", Static).content)
        await pilot.press("down", "space", "down")
        label = str(app.query_one("#tree", Tree).cursor_node.label)
        detail = str(app.query_one("#detail", Static).content)
        await pilot.press("space", "down")
        step = str(app.query_one("#detail", Static).content)
    print(json.dumps({"rows": rows, "about": about, "label": label, "detail": detail,
                      "step": step, "image": app.image_rendered}))

asyncio.run(main())
"""


def test_a_pointing_run_in_the_tui(site, pointing_run, tmp_path):
    """`unseen tui`, driven headless by textual's pilot in a process that sees the package."""
    res = python(site, "-c", TUI_PILOT, str(pointing_run), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert len(got["rows"]) == 24
    for outcome, status, hit in got["rows"]:  # the verdict: the scorer's hit
        assert outcome == ("unanswered" if status != "answered" else
                           "correct" if hit == 1 else "wrong")
    assert got["about"].startswith("Pointing run r")  # the run's node, titled by its views
    assert re.match(r"[✓✗∅] pt-00\d", got["label"])
    assert "metrics hit" in got["detail"] and "prediction" in got["detail"]
    assert "prompt" in got["step"] and "Where is the" in got["step"] and got["image"]


def test_a_pointing_rerun_goes_on_only_on_the_same_data_and_scoring(site, pointing_run,
                                                                     tmp_path):
    shutil.copytree(pointing_run, tmp_path / "r")
    shutil.copytree(pointing_run.parent / "data", tmp_path / "data")
    before = (tmp_path / "r" / "trajectories.jsonl").read_bytes()
    res = unseen_cli(site, "run", "--data", "data", "-s", "direct", "-s", "cot", "-b",
                     "sim:oracle", "--out", "r", "-q", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    after = (tmp_path / "r" / "trajectories.jsonl").read_bytes()
    assert after.startswith(before)  # direct × sim:oracle was done: only cot is new
    assert [r["strategy"] for r in records(tmp_path / "r")[24:]] == ["cot"] * 6
    config = json.loads((tmp_path / "r" / "run.json").read_text())
    assert [s["label"] for s in config["strategies"]] == ["spoe:T=3", "direct", "cot"]
    assert [b["spec"] for b in config["backends"]] == ["sim:oracle", "sim"]
    assert python(site, "-m", "unseen_pointing", "other", "--n", "6", "--seed", "1",
                  cwd=tmp_path).returncode == 0
    res = unseen_cli(site, "run", "--data", "other", "-s", "direct", "-b", "sim", "--out", "r",
                     cwd=tmp_path)
    one_line_error(res, "holds a run on other data", "choose another --out")
    config["scoring"] = {"hit": "some other rule"}
    (tmp_path / "r" / "run.json").write_text(json.dumps(config))
    res = unseen_cli(site, "run", "--data", "data", "-s", "direct", "-b", "sim", "--out", "r",
                     cwd=tmp_path)
    one_line_error(res, "was scored by another rule")
    assert (tmp_path / "r" / "trajectories.jsonl").read_bytes() == after


def test_bad_pointing_data_names_its_line(pointing, tmp_path):
    from PIL import Image

    from unseen.engine.errors import UnseenError

    data = importlib.import_module("unseen_pointing.data")
    good = {"id": "a", "image": "a.png", "instruction": "Where?", "box": [10, 10, 20, 20]}
    cases = {"box": ({"box": [300, 10, 330, 20]}, "pointing.jsonl:2: box [300.0, 10.0, 330.0, "
                     "20.0] lies outside the 320x240 image"),
             "image": ({"image": "gone.png"}, "pointing.jsonl:2: image not found: gone.png"),
             "outside": ({"image": "../a.png"}, "pointing.jsonl:2: image ../a.png lies outside"),
             "dup": ({}, "pointing.jsonl:2: duplicate id 'a'"),
             "field": ({"colour": "red"}, "pointing.jsonl:2: colour: Extra inputs")}
    for name, (change, words) in cases.items():
        (tmp_path / name).mkdir()
        Image.new("RGB", (320, 240)).save(tmp_path / name / "a.png")
        (tmp_path / name / "pointing.jsonl").write_text(
            json.dumps(good) + "\n" + json.dumps({**good, **change}))
        with pytest.raises(UnseenError) as err:
            data.load(tmp_path / name)
        assert words in str(err.value), name


def test_bad_pointing_data_is_one_line_and_exit_2(site, tmp_path, sample_data):
    from PIL import Image

    (tmp_path / "d").mkdir()
    Image.new("RGB", (320, 240)).save(tmp_path / "d" / "a.png")
    (tmp_path / "d" / "pointing.jsonl").write_text(json.dumps(
        {"id": "a", "image": "a.png", "instruction": "Where?", "box": [300, 10, 330, 20]}))
    res = unseen_cli(site, "run", "--data", "d", "-s", "direct", "-b", "sim", "--out", "r",
                     cwd=tmp_path)
    one_line_error(res, "pointing.jsonl:1: box", "outside the 320x240 image")
    res = unseen_cli(site, "run", "--benchmark", "pointing", "--data", str(sample_data), "-s",
                     "direct", "--out", "r", cwd=tmp_path)  # a SceneFunRI folder
    one_line_error(res, "pointing.jsonl: not found")
    res = unseen_cli(site, "run", "--data", "d", "-s", "director:condition=move", "-b", "sim",
                     "--out", "r", cwd=tmp_path)
    one_line_error(res, "reads director instances", "pointing data")
    one_line_error(python(site, "-m", "unseen_pointing", "new", "--n", "0", cwd=tmp_path),
                   "--n must be from 1 to 1000")
    one_line_error(python(site, "-m", "unseen_pointing", "d", cwd=tmp_path),
                   "already holds a data set")
    assert not (tmp_path / "r").exists() and not (tmp_path / "new").exists()


def guide_commands() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## Try it"):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1).strip().splitlines()


def test_the_guide_commands_run_as_written(site, tmp_path):
    """docs/writing-a-benchmark.md, "Try it": each command, in order (pip install is the
    site's install; `unseen tui` is interactive, driven above by the pilot)."""
    commands = guide_commands()
    assert commands[0] == "pip install -e examples/pointing"
    assert commands[-1] == "unseen tui runs/pointing"
    assert ("unseen run --benchmark pointing --data pointing-data -s spoe -s direct -b sim "
            "--out runs/pointing") in commands
    for line in commands[1:-1]:
        program, *args = shlex.split(line)
        res = (unseen_cli(site, *args, cwd=tmp_path) if program == "unseen"
               else python(site, *args, cwd=tmp_path))
        assert res.returncode == 0, f"{line}: {res.stderr}"
    # what the guide says of them: the second run adds sim:oracle's direct, every hit
    res = unseen_cli(site, "compare", "runs/pointing", "-f", "json", cwd=tmp_path)
    rows = {(r["model"], r["strategy"]): r for r in json.loads(res.stdout)}
    assert set(rows) == {("sim-default", "spoe"), ("sim-default", "direct"),
                         ("sim-oracle", "direct")}
    assert rows[("sim-oracle", "direct")]["hit"] == 1.0 and rows[("sim-oracle", "direct")]["n"] == 12
    assert (tmp_path / "pointing-report" / "index.html").is_file()


def test_the_guide_excerpts_are_the_package_code():
    """Each Python and TOML block of the guide's walk-through is the example's own text."""
    text = GUIDE.read_text(encoding="utf-8")
    source = "\n".join(p.read_text(encoding="utf-8")
                       for p in sorted((EXAMPLES / "pointing").rglob("*.py")))
    toml = (EXAMPLES / "pointing" / "pyproject.toml").read_text(encoding="utf-8")
    blocks = re.findall(r"```(python|toml)\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    for kind, block in blocks:
        assert block in (source if kind == "python" else toml), block[:80]
