"""The ``unseen`` command line: the default run, one-line user errors, compare, show, listings,
data and cache commands.

Error exits go through ``unseen.cli.main`` (the wrapper that turns user errors into one line
and exit status 2): in a subprocess, or in-process with ``sys.argv`` patched (the ``run_main``
fixture of conftest.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from fake_providers import FakeProvider
from fake_providers import Reply as FakeReply
from typer.testing import CliRunner

from unseen import cli
from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.benchmark import BENCHMARK as SCENEFUNRI
from unseen.evals.scenefunri.data.sample import TEST_SET_SIZE, bundled_sample

N = TEST_SET_SIZE
SECRET = "sk-unseen-test-SECRET-0123456789"
KEYLIKE = re.compile(r"api[_-]?key|secret|password|passwd|authori[sz]ation|bearer|credential",
                     re.IGNORECASE)


# --- helpers ----------------------------------------------------------------------------------


def sub_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), UNSEEN_RUNS=str(tmp_path / "runs"),
               PYTHONUNBUFFERED="1", **extra)
    return env


def unseen_sub(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``unseen ARGS`` in a child process of this interpreter."""
    return subprocess.run([sys.executable, "-m", "unseen.cli", *args], cwd=tmp_path,
                          env=sub_env(tmp_path, **env), capture_output=True, text=True,
                          timeout=120)


def ok(run_main, argv: list[str]) -> str:
    """``run_main(argv)`` that must succeed: its stdout."""
    code, out, err = run_main(argv)
    assert code == 0, err
    return out


def assert_user_error(code: int, out: str, err: str, *needles: str) -> str:
    """Exit 2, exactly one non-empty stderr line starting ``error:``, no traceback."""
    assert code == 2, (code, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:"), err
    assert "Traceback" not in out + err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def keylike_fields(obj, path: str = "") -> list[str]:
    """Every dict key anywhere in ``obj`` that names a secret."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if KEYLIKE.search(str(k)):
                found.append(f"{path}.{k}")
            found += keylike_fields(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += keylike_fields(v, f"{path}[{i}]")
    return found


def latest_records(*run_dirs: Path) -> list[dict]:
    out = []
    for d in run_dirs:
        last = {}
        for line in (d / "trajectories.jsonl").read_text().splitlines():
            rec = json.loads(line)
            last[rec["key"]] = rec
        out += last.values()
    return out


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UNSEEN_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cache_dir, sample_data) -> dict[str, Path]:
    """Two run directories: sim with two strategy labels, and a baseline rule."""
    root = tmp_path_factory.mktemp("runs")
    runner = CliRunner()
    made = {}
    for name, args in {
        "sim": ["-b", "sim", "-s", "direct", "-s", "direct:temperature=0.5"],
        "rule": ["-b", "baseline:center", "-s", "direct"],
    }.items():
        made[name] = root / name
        res = runner.invoke(cli.app, ["run", "--data", str(sample_data), *args, "--out",
                                      str(made[name]), "--cache-dir", str(cache_dir), "--quiet"])
        assert res.exit_code == 0, res.output
    return made


# --- the default run --------------------------------------------------------------------------


@pytest.mark.slow
def test_default_run_subprocess(tmp_path):
    cache, run_dir = tmp_path / "C", tmp_path / "R"
    proc = unseen_sub(tmp_path, "run", "--cache-dir", str(cache), "--out", str(run_dir),
                      OPENAI_API_KEY=SECRET)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "SIMULATED" in proc.stdout or "(sim)" in proc.stdout
    assert "sim-default" in proc.stdout and "direct" in proc.stdout

    config_text = (run_dir / "run.json").read_text()
    config = json.loads(config_text)
    for field in ("dataset_fingerprint", "package_version", "strategies", "backends"):
        assert config[field], field
    assert [s["label"] for s in config["strategies"]] == list(SCENEFUNRI.defaults.strategies)
    assert [b["spec"] for b in config["backends"]] == ["sim", *SCENEFUNRI.defaults.rules]
    assert config["backends"][0]["simulated"] is True
    bundled = load_dataset(bundled_sample())
    assert config["instances"] == len(bundled) == 65
    assert keylike_fields(config) == []
    assert SECRET not in config_text
    assert load_dataset(config["data"]).fingerprint == config["dataset_fingerprint"]

    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    n_strategies = len(SCENEFUNRI.defaults.strategies)
    # every strategy with sim, and the fixed rules once each, with direct
    n_runs = n_strategies + len(SCENEFUNRI.defaults.rules)
    assert len(lines) == len(bundled) * n_runs
    recs = [json.loads(line) for line in lines]
    assert len({r["key"] for r in recs}) == len(bundled) * n_runs
    assert {r["instance_id"] for r in recs} == {i.id for i in bundled}
    # the table compares every strategy against direct, and shows what a fixed guess earns
    assert "direct:prompt=hidden" in proc.stdout and "cot-sr" in proc.stdout
    assert "center (rule)" in proc.stdout and "prior (rule)" in proc.stdout
    assert "fixed (rule)" in proc.stdout
    assert all(r["simulated"] for r in recs)
    assert Counter(r["backend"] for r in recs) == {
        "sim": len(bundled) * n_strategies, **dict.fromkeys(SCENEFUNRI.defaults.rules, len(bundled))}
    assert {r["strategy"] for r in recs if r["backend"] != "sim"} == {"direct"}


def test_real_provider_run_keeps_key_out_of_run_json_and_fills_cache(tmp_path, sample_data,
                                                                     run_main, monkeypatch):
    """openai against a local fake server: the key is sent, never saved; replies are cached."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    cache, run_dir = tmp_path / "C", tmp_path / "R"
    with FakeProvider(FakeReply('{"box": [100, 100, 300, 300]}')) as fp:
        ok(run_main, ["run", "--data", str(sample_data), "-b", "openai:gpt-4o", "-s", "direct",
                      "--base-url", fp.openai_base_url, "--limit", "2", "--cache-dir", str(cache),
                      "--out", str(run_dir), "--quiet"])
        assert len(fp.requests) == 2
        assert SECRET in fp.requests[0].headers.get("authorization", "")
    text = (run_dir / "run.json").read_text()
    assert SECRET not in text and keylike_fields(json.loads(text)) == []
    assert SECRET not in (run_dir / "trajectories.jsonl").read_text()

    stats = json.loads(ok(run_main, ["cache", "stats", "--cache-dir", str(cache), "--json"]))
    assert stats["entries"] == 2 and stats["bytes"] > 0
    assert Path(stats["path"]).parent == cache
    assert sum(r["entries"] for r in stats["by_model"]) == 2
    assert any(r["model"] == "gpt-4o" for r in stats["by_model"])

    out = ok(run_main, ["cache", "clear", "--cache-dir", str(cache), "--backend", "gemini"])
    assert "deleted 0" in out
    out = ok(run_main, ["cache", "clear", "--cache-dir", str(cache)])
    assert "deleted 2" in out
    stats = json.loads(ok(run_main, ["cache", "stats", "--cache-dir", str(cache), "--json"]))
    assert stats["entries"] == 0 and stats["by_model"] == []


# --- user errors: one line, exit 2 ------------------------------------------------------------


def test_missing_data_folder_subprocess(tmp_path):
    proc = unseen_sub(tmp_path, "run", "--data", str(tmp_path / "nope"), "--out",
                      str(tmp_path / "R"), "--cache-dir", str(tmp_path / "C"))
    assert_user_error(proc.returncode, proc.stdout, proc.stderr, "nope")
    assert not (tmp_path / "R").exists()


def _broken(sample: Path, where: Path, edit) -> Path:
    """A copy of the first three sample lines with line 2 edited, and their images (a
    link to the sample's images would lead out of the folder, which is refused)."""
    (where / "images").mkdir(parents=True)
    recs = [json.loads(line) for line in (sample / "instances.jsonl").read_text().splitlines()[:3]]
    for rec in recs:
        shutil.copyfile(sample / rec["image"], where / rec["image"])
    lines = [json.dumps(r) for r in recs]
    lines[1] = edit(recs[1])
    (where / "instances.jsonl").write_text("\n".join(lines) + "\n")
    return where


def _set(key, value):
    def edit(rec):
        return json.dumps({**rec, key: value})
    return edit


BAD_DATA = {
    "bad_json": (lambda rec: json.dumps(rec)[:40], ["instances.jsonl:2", "JSON"]),
    "box_outside": (_set("box", [600, 400, 900, 700]), ["instances.jsonl:2", "outside"]),
    "inverted_box": (_set("box", [100, 100, 50, 150]), ["instances.jsonl:2", "box"]),
    "missing_image": (_set("image", "images/not-there.png"), ["instances.jsonl:2",
                                                              "not-there.png"]),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_dataset_is_one_line_error(case, sample_data, tmp_path, run_main):
    edit, needles = BAD_DATA[case]
    data = _broken(sample_data, tmp_path / case, edit)
    code, out, err = run_main(["run", "--data", str(data), "--out", str(tmp_path / "R"),
                               "--cache-dir", str(tmp_path / "C")])
    assert_user_error(code, out, err, *needles)
    assert not (tmp_path / "R").exists()


BAD_RUN = {
    "unknown_strategy": (["-s", "no-such-strategy"], ["no-such-strategy"]),
    "unknown_backend": (["-b", "nosuchprovider:m"], ["nosuchprovider"]),
    "bad_strategy_param": (["-s", "direct:bogus=1"], ["bogus"]),
    "bad_sim_knob": (["-b", "sim:default,skill=abc"], ["skill"]),
    "unknown_sim_profile": (["-b", "sim:nosuchprofile"], ["nosuchprofile"]),
}


@pytest.mark.parametrize("case", sorted(BAD_RUN))
def test_bad_run_option_is_one_line_error(case, cache_dir, tmp_path, run_main):
    args, needles = BAD_RUN[case]
    code, out, err = run_main(["run", *args, "--out", str(tmp_path / "R"), "--cache-dir",
                               str(cache_dir)])
    assert_user_error(code, out, err, *needles)
    assert not (tmp_path / "R").exists()


def test_openai_without_key_in_process(cache_dir, tmp_path, run_main, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, out, err = run_main(["run", "-b", "openai:gpt-4o", "--out", str(tmp_path / "R"),
                               "--cache-dir", str(cache_dir)])
    assert_user_error(code, out, err, "OPENAI_API_KEY")


def test_compare_on_non_run_dir(tmp_path, run_main):
    (tmp_path / "empty").mkdir()
    code, out, err = run_main(["compare", str(tmp_path / "empty")])
    assert_user_error(code, out, err, "not a run directory")
    code, out, err = run_main(["compare", str(tmp_path / "absent")])
    assert_user_error(code, out, err, "absent")


def test_compare_unknown_format_and_baseline(runs, run_main):
    code, out, err = run_main(["compare", str(runs["sim"]), "--format", "xml"])
    assert_user_error(code, out, err, "xml")
    code, out, err = run_main(["compare", str(runs["sim"]), "--baseline", "no-such"])
    assert_user_error(code, out, err, "no-such")


# --- compare ----------------------------------------------------------------------------------


def expected_rows(*run_dirs: Path) -> dict[tuple[str, str], dict]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for rec in latest_records(*run_dirs):
        groups[(rec["model"], rec["strategy"])].append(rec)
    out = {}
    for key, recs in groups.items():
        n = len(recs)

        def mean100(m, recs=recs, n=n):
            return 100 * sum(r["metrics"][m] for r in recs) / n

        out[key] = {
            "n": n, "answered": 100 * sum(r["status"] == "answered" for r in recs) / n,
            "cacc75": mean100("cacc75"), "cacc50": mean100("cacc50"), "miou": mean100("iou"),
            "dist": mean100("dist"),
            "calls": sum(not s["reply"]["cached"] for r in recs for s in r["steps"]) / n,
        }
    return out


def test_compare_json_matches_journal(runs, run_main):
    rows = json.loads(ok(run_main, ["compare", str(runs["sim"]), str(runs["rule"]),
                                    "--format", "json"]))
    expect = expected_rows(runs["sim"], runs["rule"])
    assert {(r["model"], r["strategy"]) for r in rows} == set(expect) == {
        ("sim-default", "direct"), ("sim-default", "direct:temperature=0.5"),
        ("baseline-center", "direct"),
    }
    for r in rows:
        for key in ("model", "strategy", "n", "answered", "cacc75", "cacc50", "miou", "dist"):
            assert key in r
        e = expect[(r["model"], r["strategy"])]
        assert r["n"] == e["n"] == N
        for key in ("answered", "cacc75", "cacc50", "miou", "dist", "calls"):
            assert r[key] == pytest.approx(e[key]), key
        assert r["simulated"] is True
    # the baseline rule puts a box of a quarter of the image in its centre, every time
    rule = next(r for r in rows if r["model"] == "baseline-center")
    assert rule["answered"] == 100


def test_compare_baseline_deltas(runs, run_main):
    rows = json.loads(ok(run_main, ["compare", str(runs["sim"]), str(runs["rule"]),
                                    "--baseline", "direct", "--format", "json"]))
    by = {(r["model"], r["strategy"]): r for r in rows}
    metrics = ("cacc75", "cacc50", "miou", "dist")
    for key in (("sim-default", "direct"), ("baseline-center", "direct")):
        assert all(by[key][f"delta_{m}"] is None for m in metrics), key
    other, base = by[("sim-default", "direct:temperature=0.5")], by[("sim-default", "direct")]
    for m in metrics:
        assert other[f"delta_{m}"] == pytest.approx(other[m] - base[m])


def test_compare_text_formats(runs, run_main):
    dirs = [str(runs["sim"]), str(runs["rule"])]
    text = ok(run_main, ["compare", *dirs, "--format", "csv"])
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == 3
    assert {"model", "strategy", "n", "cacc75", "miou", "dist"} <= set(table[0])
    assert {row["model"] for row in table} == {"sim-default", "baseline-center"}

    md = ok(run_main, ["compare", *dirs, "--format", "md"]).strip().splitlines()
    assert len(md) == 2 + 3 and all(line.startswith("|") and line.endswith("|") for line in md)
    assert "CAcc@75" in md[0] and set(md[1]) <= set("|-: ")

    latex = ok(run_main, ["compare", *dirs, "--format", "latex"])
    assert r"\begin{tabular}" in latex and r"\toprule" in latex and r"\bottomrule" in latex
    assert latex.count(r"\\") == 1 + 3

    table_out = ok(run_main, ["compare", *dirs])
    assert "(sim)" in table_out and "(rule)" in table_out and "SIMULATED" in table_out


# --- show -------------------------------------------------------------------------------------


def test_show_summary_and_instance(runs, sample_data, run_main):
    run_dir = runs["sim"]
    out = ok(run_main, ["show", str(run_dir)])
    assert "sim-default" in out and "syn-0" in out

    out = ok(run_main, ["show", str(run_dir), "syn-000", "--strategy", "direct"])
    rec = next(r for r in latest_records(run_dir)
               if r["instance_id"] == "syn-000" and r["strategy"] == "direct")
    first = (sample_data / "instances.jsonl").read_text().splitlines()[0]
    instruction = json.loads(first)["instruction"]
    assert instruction in out and "prompt" in out
    assert rec["steps"][0]["prompt"].splitlines()[0] in out
    assert "SIMULATED" in out
    assert "prediction" in out
    box = "[" + ", ".join(f"{v:.0f}" for v in rec["prediction"]) + "]"
    assert box in out


def test_show_unknown_instance_is_one_line_error(runs, run_main):
    code, out, err = run_main(["show", str(runs["sim"]), "nope"])
    assert_user_error(code, out, err, "nope")


# --- listings, data, help ---------------------------------------------------------------------


def test_strategies_lists_direct_with_params():
    res = CliRunner().invoke(cli.app, ["strategies"])
    assert res.exit_code == 0, res.output
    assert "direct" in res.output
    for param in ("temperature", "seed", "max_tokens"):
        assert param in res.output


def test_backends_lists_every_provider():
    res = CliRunner().invoke(cli.app, ["backends"])
    assert res.exit_code == 0, res.output
    for name in ("openai", "gemini", "vllm", "vllm-local", "sim", "baseline"):
        assert re.search(rf"(^|\W){re.escape(name)}(\W|$)", res.output, re.M), name


def test_data_sample_writes_loadable_dataset(tmp_path, sample_data):
    out = tmp_path / "D"
    res = CliRunner().invoke(cli.app, ["data", "sample", "--out", str(out)])
    assert res.exit_code == 0, res.output
    ds = load_dataset(out)
    assert len(ds) == 65
    assert ds.fingerprint in res.output.replace("\n", "")
    assert ds.fingerprint == load_dataset(bundled_sample()).fingerprint  # a faithful copy


def test_cache_stats_and_clear_on_empty_dir(tmp_path):
    cache = tmp_path / "cache"
    runner = CliRunner()
    res = runner.invoke(cli.app, ["cache", "stats", "--cache-dir", str(cache), "--json"])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.output)
    assert stats["entries"] == 0 and stats["by_model"] == []
    assert Path(stats["path"]).parent == cache
    res = runner.invoke(cli.app, ["cache", "stats", "--cache-dir", str(cache)])
    assert res.exit_code == 0 and "entries: 0" in res.output
    res = runner.invoke(cli.app, ["cache", "clear", "--cache-dir", str(cache)])
    assert res.exit_code == 0 and "deleted 0" in res.output


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["compare", "--help"]])
def test_help(args):
    res = CliRunner().invoke(cli.app, args)
    assert res.exit_code == 0, res.output
    assert "Usage" in res.output


def _command_paths(command, path=()):
    """Every command path of the CLI, groups included (click's tree under typer)."""
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _command_paths(sub, (*path, name))


@pytest.mark.slow
def test_every_help_page_renders():
    # rich markup in a help text (e.g. "[/<question>]") once crashed `director prompts --help`
    import typer

    paths = list(_command_paths(typer.main.get_command(cli.app)))
    assert ("director", "prompts") in paths and ("cache", "clear") in paths and len(paths) > 20
    for path in paths:
        for width in ("80", "120"):
            res = CliRunner().invoke(cli.app, [*path, "--help"], env={"COLUMNS": width})
            assert res.exit_code == 0 and res.exception is None, (path, width, res.output)
            assert "Usage" in res.output, path
    res = CliRunner().invoke(cli.app, ["director", "prompts", "--help"], env={"COLUMNS": "200"})
    assert "<request>[/<question>][+<insert>]" in res.output


def test_help_through_main(run_main):
    out = ok(run_main, ["--help"])
    for command in ("run", "compare", "show", "strategies", "backends", "data", "cache"):
        assert command in out
    out = ok(run_main, ["run", "--help"])
    for option in ("--data", "--strategy", "--backend", "--out", "--cache-dir", "--quiet"):
        assert option in out


def test_console_script_is_installed():
    exe = shutil.which("unseen", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("no console script next to this interpreter")
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "run" in proc.stdout
