"""Every reader of a user's file gives one line naming the file (and line) and exit 2, never a
traceback: ``instances.jsonl``, a design TOML, a coding sheet (CSV), ``scenes.jsonl``,
``run.json``, ``study.json`` and the journal as the views open them.

First the issue's reproductions through the command line (a byte that is not UTF-8), then
hypothesis: random bytes, truncations, inserted and replaced bytes, and fields of the wrong
type. A reader passes when it returns, or raises one of the errors the command line turns
into one line (``unseen.cli._user_errors``).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from helpers import run_tiny_study, tiny_design
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unseen import cli
from unseen.api import run as api_run
from unseen.engine.journal import iter_records, latest, read_run_json
from unseen.evals.director.coding.sheets import read_sheet
from unseen.evals.director.scenes.dataset import load_scenes
from unseen.evals.director.study.design import load_design
from unseen.evals.director.study.study_file import read_study
from unseen.evals.scenefunri.data.dataset import find_instance, load_dataset

USER_ERRORS = cli._user_errors()
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DESIGN = tiny_design(
    "tiny-files", seed=3, n=3, batches={"b1": ["move", "move/novis"]},
    comparisons=[{"batch": "b1", "base": "move/novis", "variant": "move", "measure": "hidden",
                  "family": "s4"}])


def one_line(code: int, err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def no_traceback(fn, *args, **kwargs) -> None:
    """``fn`` returns, or raises a user error with a one-line message."""
    try:
        fn(*args, **kwargs)
    except USER_ERRORS as exc:
        assert str(exc).strip()


def cli_ok_or_one_line(argv: list[str]) -> None:
    """``unseen ARGV`` in-process (hypothesis cannot take pytest's capture fixtures): exit 0,
    or exit 2 with one line on stderr."""
    err, out = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["unseen", *argv]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old
    if code != 0:
        one_line(code, err.getvalue())


# --- what the fuzzing draws -------------------------------------------------------------------


def damaged(valid: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, or ``valid`` truncated, with bytes inserted, or with one byte replaced."""
    n = len(valid)
    return st.one_of(
        st.binary(max_size=600),
        st.integers(0, n).map(lambda k: valid[:k]),
        st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=6)).map(
            lambda t: valid[:t[0]] + t[1] + valid[t[0]:]),
        st.tuples(st.integers(0, max(0, n - 1)), st.integers(0, 255)).map(
            lambda t: valid[:t[0]] + bytes([t[1]]) + valid[t[0] + 1:]),
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield from _paths(v, (*prefix, i))


def _replace(obj, path, value):
    if not path:
        return value
    out = dict(obj) if isinstance(obj, dict) else list(obj)
    out[path[0]] = _replace(obj[path[0]], path[1:], value)
    return out


def retyped(valid: dict) -> st.SearchStrategy:
    """``valid`` with the value at one of its paths (itself included) replaced by any JSON
    value: wrong types, missing structure, odd nesting."""
    paths = list(_paths(valid))
    return st.tuples(st.sampled_from(paths), JSON_VALUES).map(
        lambda t: _replace(valid, t[0], t[1]))


TOML_VALUES = st.one_of(
    st.integers(-5, 10**9).map(str), st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.booleans().map(lambda b: str(b).lower()), st.text(max_size=10).map(json.dumps),
    st.lists(st.integers(-3, 3), max_size=3).map(lambda v: json.dumps(v)),
    st.just("{ a = 1 }"), st.just('["move", 3]'), st.just("[]"))


# --- shared inputs --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory, sample_data) -> Path:
    """A finished SceneFunRI run of two instances."""
    run_dir = tmp_path_factory.mktemp("files") / "run"
    api_run(sample_data, ["direct"], ["sim"], limit=2, out=run_dir, cache=False,
            progress=False)
    return run_dir


@pytest.fixture(scope="module")
def study(tmp_path_factory, director_scenes) -> Path:
    _, run_dir = run_tiny_study(tmp_path_factory.mktemp("files-study"), DESIGN,
                                ["sim:director-strong,dir_answer_rate=1.0"], director_scenes,
                                cache=False)
    return run_dir


def copy_run(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("run.lock"))
    return dst


# --- the reproductions: one byte that is not UTF-8 -------------------------------------


def test_a_non_utf8_byte_in_instances_jsonl(tmp_path, sample_data, run_main):
    data = tmp_path / "d"
    shutil.copytree(sample_data, data)
    lines = (data / "instances.jsonl").read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"Open", b"Op\xe9n", 1).replace(b"Turn", b"T\xffrn", 1)
    lines[2] = lines[2][:30] + b"\xff" + lines[2][30:]
    (data / "instances.jsonl").write_bytes(b"".join(lines))
    code, _, err = run_main(["run", "--data", str(data), "--out", str(tmp_path / "r"), "-q"])
    one_line(code, err, "instances.jsonl:3:", "not UTF-8", "column 31")
    assert not (tmp_path / "r").exists()


def test_a_non_utf8_byte_in_a_design_toml(tmp_path, run_main):
    design = tmp_path / "d.toml"
    # the batch's name, line 8 of tiny_design's text: a line past the first, so a reader that
    # always said line 1 would fail
    assert DESIGN.splitlines()[7] == 'name = "b1"'
    design.write_bytes(DESIGN.encode().replace(b'name = "b1"', b'name = "b\xe9"'))
    code, _, err = run_main(["director", "run", str(design), "--out", str(tmp_path / "r")])
    one_line(code, err, "d.toml:8:", "not UTF-8")
    code, _, err = run_main(["director", "power", str(design), "--reps", "10"])
    one_line(code, err, "d.toml:8:", "not UTF-8")


def test_a_non_utf8_byte_in_a_coding_sheet(tmp_path, study, run_main):
    sheet = tmp_path / "ann.csv"
    code, _, err = run_main(["director", "sheet", str(study), "--out", str(sheet)])
    assert code == 0, err
    rows = sheet.read_bytes().split(b"\n")
    rows[1] = rows[1] + b"\x81"
    sheet.write_bytes(b"\n".join(rows))
    code, _, err = run_main(["director", "agree", str(study), str(sheet)])
    one_line(code, err, "ann.csv:2:", "not UTF-8")


def test_a_non_utf8_byte_in_the_journal_or_run_json_as_the_views_open_them(tmp_path, run,
                                                                          run_main):
    bad = copy_run(run, tmp_path / "journal")
    path = bad / "trajectories.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"direct"', b'"dir\xffect"', 1))
    for argv in (["show", str(bad)], ["compare", str(bad)], ["view", str(bad)],
                 ["export", str(bad), "--html", str(tmp_path / "h")]):
        code, _, err = run_main(argv)
        one_line(code, err, "trajectories.jsonl:1:", "not UTF-8")
    bad = copy_run(run, tmp_path / "config")
    path = bad / "run.json"
    path.write_bytes(path.read_bytes().replace(b'"direct"', b'"dir\xffect"', 1))
    code, _, err = run_main(["show", str(bad)])
    one_line(code, err, "run.json:", "not UTF-8")
    code, _, err = run_main(["tui", str(bad)])
    one_line(code, err, "run.json:", "not UTF-8")
    code, _, err = run_main(["view", str(bad)])
    one_line(code, err, "run.json:", "not UTF-8")


# --- fuzzing each reader ------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_fuzz_instances_jsonl(tmp_path_factory, sample_data, data):
    folder = tmp_path_factory.getbasetemp() / "fuzz-instances"
    if not folder.exists():
        shutil.copytree(sample_data, folder)
        (folder / "valid.jsonl").write_bytes(b"".join(
            (folder / "instances.jsonl").read_bytes().splitlines(keepends=True)[:2]))
    valid = (folder / "valid.jsonl").read_bytes()
    first = json.loads(valid.splitlines()[0])
    content = data.draw(st.one_of(
        damaged(valid),
        retyped(first).map(lambda rec: (json.dumps(rec) + "\n").encode() + valid)))
    (folder / "instances.jsonl").write_bytes(content)
    no_traceback(load_dataset, folder)
    no_traceback(find_instance, folder, first["id"])


@FUZZ
@given(data=st.data())
def test_fuzz_design_toml(tmp_path_factory, data):
    path = tmp_path_factory.getbasetemp() / "fuzz-design.toml"
    lines = DESIGN.strip().splitlines()
    values = [i for i, line in enumerate(lines) if " = " in line]

    def retype(t):
        i, value = t
        key = lines[i].split(" = ")[0]
        return "\n".join([*lines[:i], f"{key} = {value}", *lines[i + 1:]]).encode()

    content = data.draw(st.one_of(
        damaged(DESIGN.encode()),
        st.tuples(st.sampled_from(values), TOML_VALUES).map(retype)))
    path.write_bytes(content)
    no_traceback(load_design, path)


SHEET = ("id,trace,reply,reading,sees,works_out\r\n"
         'it-1,"A trace, with a comma",{"block": 3},director_view,seen,true\r\n'
         "it-2,Another trace,{},own_view,unseen,no\r\n")


@FUZZ
@given(content=st.one_of(
    damaged(SHEET.encode()),
    st.lists(st.text(max_size=8), min_size=0, max_size=8).map(
        lambda cells: (SHEET + ",".join(cells) + "\r\n").encode())))
def test_fuzz_coding_sheet(tmp_path_factory, content):
    path = tmp_path_factory.getbasetemp() / "fuzz-sheet.csv"
    path.write_bytes(content)
    no_traceback(read_sheet, path, {"it-1", "it-2"})


@FUZZ
@given(data=st.data())
def test_fuzz_scenes_jsonl(tmp_path_factory, director_scenes, data):
    folder = tmp_path_factory.getbasetemp() / "fuzz-scenes"
    if not folder.exists():
        shutil.copytree(director_scenes / "main", folder)
        (folder / "valid.jsonl").write_bytes(
            (folder / "scenes.jsonl").read_bytes().splitlines(keepends=True)[0])
    valid = (folder / "valid.jsonl").read_bytes()
    content = data.draw(st.one_of(
        damaged(valid),
        retyped(json.loads(valid)).map(lambda rec: (json.dumps(rec) + "\n").encode())))
    (folder / "scenes.jsonl").write_bytes(content)
    no_traceback(load_scenes, folder)


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_fuzz_run_json_as_the_views_read_it(tmp_path_factory, run, data):
    folder = tmp_path_factory.getbasetemp() / "fuzz-runjson"
    if not folder.exists():
        copy_run(run, folder)
    valid = (run / "run.json").read_bytes()
    content = data.draw(st.one_of(
        damaged(valid), retyped(json.loads(valid)).map(lambda c: json.dumps(c).encode())))
    (folder / "run.json").write_bytes(content)
    no_traceback(read_run_json, folder)
    cli_ok_or_one_line(["show", str(folder)])


@FUZZ
@given(data=st.data())
def test_fuzz_study_json(tmp_path_factory, study, data):
    path = tmp_path_factory.getbasetemp() / "fuzz-study.json"
    valid = (study / "study.json").read_bytes()
    content = data.draw(st.one_of(
        damaged(valid), retyped(json.loads(valid)).map(lambda c: json.dumps(c).encode())))
    path.write_bytes(content)
    no_traceback(read_study, path)


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_fuzz_the_journal_as_the_views_read_it(tmp_path_factory, run, data):
    folder = tmp_path_factory.getbasetemp() / "fuzz-journal"
    if not folder.exists():
        copy_run(run, folder)
    valid = (run / "trajectories.jsonl").read_bytes()
    lines = valid.splitlines(keepends=True)
    first = json.loads(lines[0])
    content = data.draw(st.one_of(
        damaged(valid),
        retyped(first).map(lambda rec: (json.dumps(rec) + "\n").encode() + lines[1])))
    (folder / "trajectories.jsonl").write_bytes(content)
    no_traceback(lambda: list(iter_records(folder / "trajectories.jsonl")))
    no_traceback(latest, folder / "trajectories.jsonl")
    cli_ok_or_one_line(["show", str(folder)])
    cli_ok_or_one_line(["show", str(folder), first["instance_id"]])


@pytest.mark.parametrize("damage", [
    lambda rec: rec["steps"].__setitem__(0, {}),  # a step without its reply
    lambda rec: rec.pop("sample"),  # a field every record has, missing
    lambda rec: rec.__setitem__("seconds", None),  # a number that is not one
    lambda rec: rec["steps"][0]["reply"]["usage"].__setitem__("", None),  # a stray usage key
], ids=["step-without-reply", "no-sample", "seconds-null", "usage-stray-key"])
def test_records_the_fuzzing_found_are_one_line_or_shown(tmp_path, run, damage):
    """Records the randomised fuzzing above once found to end in a traceback (exit 70)."""
    folder = copy_run(run, tmp_path / "run")
    lines = (run / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    rec = json.loads(lines[0])
    damage(rec)
    (folder / "trajectories.jsonl").write_bytes((json.dumps(rec) + "\n").encode() + lines[1])
    cli_ok_or_one_line(["show", str(folder)])
    cli_ok_or_one_line(["show", str(folder), rec["instance_id"]])


def test_the_fuzzing_reaches_the_readers(tmp_path):
    """The strategies above make files the readers refuse for several reasons, not one."""
    path = tmp_path / "instances.jsonl"
    reasons = set()
    for content in (b"\xff\n", b"{\n", b"[1]\n", b'{"id": 1}\n'):
        path.write_bytes(content)
        with pytest.raises(USER_ERRORS) as info:
            load_dataset(tmp_path)
        reasons.add(re.sub(r".*:\d+: ", "", str(info.value)).split(" ")[0])
    assert len(reasons) == 4, reasons
