"""The example plug-in packages under examples/, installed as pip leaves a package (their
modules on the path, a ``.dist-info`` with the entry points their own pyproject.toml
declares), then run offline from the command line in a fresh process: nothing in unseen/
knows them (issue 17's proof of plug-ins)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def unseen_cli(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "120", "UNSEEN_RUNS": str(cwd)}
    return subprocess.run([sys.executable, "-m", "unseen.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


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
