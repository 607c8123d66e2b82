"""Coding a study's reasoning traces: items, batches, the coder run, the report, analysis."""

import json
from pathlib import Path

import pytest
from helpers import run_tiny_study, tiny_design

from unseen.commands.director_code import run_coding
from unseen.engine.journal import JOURNAL, iter_records
from unseen.evals.director.analysis.analyze import analyze_run
from unseen.evals.director.coding.items import (
    ITEMS_FILE,
    CodingError,
    coded_items,
    pass_dir,
    select,
)
from unseen.evals.director.coding.report import render, summarize
from unseen.evals.director.sim.traces import read_trace

DESIGN = tiny_design(
    "tiny-traces", samples=2, seed=5, n=6, batches={"b1": ["mean", "move", "move/novis"]},
    comparisons=[{"batch": "b1", "base": "move/novis", "variant": "move",
                  "measure": "own_view", "family": "s5"},
                 {"batch": "b1", "base": "move/novis", "variant": "move", "measure": "hidden",
                  "family": "s4"}])

RESPONDENT = "sim:director-strong,dir_answer_rate=1.0"


@pytest.fixture(scope="module")
def study(tmp_path_factory, director_scenes) -> Path:
    folder = tmp_path_factory.mktemp("coding")
    _, run_dir = run_tiny_study(folder, DESIGN, [RESPONDENT], director_scenes, cache=False)
    return run_dir


@pytest.fixture(scope="module")
def coded(study) -> Path:
    run_coding(study, "sim:default,dir_coder_error=0", batch_size=7, tests=10, repeats=5,
               cache=False, progress=False)
    return study


def test_items_are_every_traced_reply_and_the_coder_sees_no_model_condition_or_scene(study):
    items, untraced = select(study)
    assert len(items) == 6 * 3 * 2 and untraced == 0  # every answered sim reply has a trace
    assert len({it["id"] for it in items}) == len(items)
    for it in items:
        assert it["id"].startswith("item-") and it["scene"] not in it["id"]
    second, _ = select(study, pass_="second")
    assert second and all(it["role"] == "hidden" for it in second)
    assert {it["id"] for it in second}.isdisjoint({it["id"] for it in items})  # new ids
    only, _ = select(study, conditions=["move"])
    assert {it["condition"] for it in only} == {"move"}


def test_a_coding_pass_codes_every_item_and_the_sim_coder_gives_the_written_codes(coded):
    items = coded_items(coded)
    assert len(items) == 36 + 10 + 5  # real items, test traces, real items again
    assert all(it["codes"] is not None for it in items)
    journal = {json.loads(line)["key"] for line in (pass_dir(coded, "main") / JOURNAL).open()}
    assert len(journal) == -(-51 // 7)  # one trajectory per batch
    again = [it for it in items if it.get("repeat_of")]
    first_ids = {it["id"] for it in items if not it["test"] and not it.get("repeat_of")}
    assert len(again) == 5 and all(it["repeat_of"] in first_ids for it in again)
    assert {it["id"] for it in again}.isdisjoint(first_ids)  # new neutral ids
    for it in items:
        if not it["test"]:
            written = read_trace(it["trace"])
            assert it["codes"]["reading"] == written.reading
    s = summarize(coded)
    assert s["tests"]["main"] == {"n": 10, "coded": 10, "reading_and_sees": 10, "reading": 10,
                                  "sees": 10, "works_out": 10}
    assert sum(r["coded"] for r in s["readings"]) == 36  # the repeats are not counted twice
    # Appendix E: "The real items, coded a second time in the main run, received the same two
    # codes on all 30" -- here 5, by a coder that reads the simulator's traces exactly
    assert s["repeats"] == {"n": 5, "coded_both": 5, "same_two_codes": 5, "reading": 5,
                            "sees": 5, "works_out": 5}
    assert "coded a second time" in render(s, "table")
    firsts = s["examples"]
    assert firsts and all(e["quote"] for e in firsts)
    assert len({(e["model"], e["reading"]) for e in firsts}) == len(firsts)
    scenes = sorted(it["scene"] for it in items if not it["test"])
    assert min(e["scene"] for e in firsts) == scenes[0]


def test_rerunning_resumes_and_other_items_are_refused(coded):
    done = run_coding(coded, "sim:default,dir_coder_error=0", batch_size=7, tests=10,
                      repeats=5, cache=False, progress=False)
    assert done.run.done == 0 and done.run.skipped == done.run.total and done.items == 36
    with pytest.raises(CodingError, match="batches of 7"):
        run_coding(coded, "sim:default,dir_coder_error=0", batch_size=8, tests=10, repeats=5,
                   cache=False, progress=False)
    with pytest.raises(CodingError, match="was coded by"):
        run_coding(coded, "sim:strong", batch_size=7, tests=10, repeats=5, cache=False,
                   progress=False)
    with pytest.raises(CodingError, match="other items"):
        run_coding(coded, "sim:default,dir_coder_error=0", batch_size=7, tests=5, repeats=5,
                   cache=False, progress=False)
    with pytest.raises(CodingError, match="other items"):
        run_coding(coded, "sim:default,dir_coder_error=0", batch_size=7, tests=10, repeats=6,
                   cache=False, progress=False)


def test_the_sim_coder_follows_the_report_where_the_trace_states_nothing():
    import random

    from unseen.evals.director.coding.coder import sim_code

    trace = "The director sits across the table from me. I will go with block 7."
    items = [{"id": "a", "trace": trace, "reply": '{"visible": [2, 5], "block": 7}', "block": 7},
             {"id": "b", "trace": trace, "reply": '{"visible": [2, 7], "block": 7}', "block": 7},
             {"id": "c", "trace": trace, "reply": '{"block": 7}', "block": 7}]
    first = {c["id"]: c for c in json.loads(sim_code(items, False, 0.0, random.Random(0)))["codes"]}
    assert [first[i]["sees"] for i in "abc"] == ["unseen", "seen", "not_stated"]
    assert first["a"]["reading"] == "none" and first["a"]["reading_quote"] == "I will go with block 7."
    # every code comes with a quote: where the trace states nothing for one, the choice's words
    assert first["c"]["sees_quote"] == first["c"]["works_out_quote"] == "I will go with block 7."
    second = json.loads(sim_code(items, True, 0.0, random.Random(0)))["codes"]
    assert [c["sees"] for c in second] == ["not_stated"] * 3  # no report to follow


def test_second_pass_codes_hidden_choices_again_and_reports_kappa(coded):
    run_coding(coded, "sim:default,dir_coder_error=0", second_pass=True, batch_size=10,
               tests=4, cache=False, progress=False)
    s = summarize(coded)
    assert s["tests"]["second"]["reading_and_sees"] == 4
    rows = s["second_pass"]
    assert rows and all(r["n"] > 0 and r["same"] <= r["n"] for r in rows)
    for r in rows:
        assert r["kappa_lo"] <= r["kappa"] <= r["kappa_hi"]
    text = render(s, "table")
    assert "Second pass" in text and "Readings" in text
    assert json.loads(render(s, "json"))["run"] == str(coded)
    # a simulated respondent and a simulated coder: every format says so first
    (name,) = {r["model"] for r in s["readings"]}  # the one model, a simulated respondent
    assert name.startswith("sim-director-strong")
    md = render(s, "md")
    assert md.startswith(f"**SIMULATED: the replies and traces of {name} ")
    assert "**SIMULATED coder: the codes of the main pass (sim:default,dir_coder_error=0)" in md
    assert "### Readings" in md and f"| {name} (sim) |" in md
    assert text.startswith("SIMULATED: the replies") and f"{name} (sim)" in text
    j = json.loads(render(s, "json"))
    assert j["simulated"] == [name] and j["coders"]["main"]["simulated"]
    assert j["notices"][0].startswith("SIMULATED")
    assert "<p class=banner><b>SIMULATED" in render(s, "html")


def test_analysis_fits_comparisons_on_coded_traces(coded, study):
    changes = {c.comparison.measure: c for c in analyze_run(coded, n_boot=200).changes}
    own = changes["own_view"]
    assert own.ok and own.n == 24  # the coded replies of move and move/novis
    assert changes["hidden"].ok


def test_comparisons_on_traces_say_not_coded_before_coding(tmp_path, director_scenes):
    _, run_dir = run_tiny_study(tmp_path, DESIGN.replace("samples = 2", "samples = 1"),
                                [RESPONDENT], director_scenes, cache=False)
    changes = {c.comparison.measure: c for c in analyze_run(run_dir, n_boot=200).changes}
    assert changes["own_view"].status == "not coded"
    assert "unseen director code" in changes["own_view"].note
    with pytest.raises(CodingError, match="no coded traces"):
        summarize(run_dir)


def test_replies_without_traces_are_counted_and_nothing_to_code_is_an_error(tmp_path, director_scenes):
    _, run_dir = run_tiny_study(tmp_path, DESIGN.replace("samples = 2", "samples = 1"),
                                ["sim:director-strong,dir_traces=0"], director_scenes, cache=False)
    items, untraced = select(run_dir)
    assert items == [] and untraced > 0
    with pytest.raises(CodingError, match="no reasoning traces"):
        run_coding(run_dir, "sim", cache=False, progress=False)
    assert not (run_dir / "coding" / "main" / ITEMS_FILE).exists()


def test_a_coder_reply_that_cannot_be_read_leaves_the_batch_unanswered(study, tmp_path, monkeypatch):
    import shutil

    from unseen.backends import sim

    run_dir = tmp_path / "copy"
    shutil.copytree(study, run_dir, ignore=shutil.ignore_patterns("coding"))
    monkeypatch.setitem(sim.TASKS, "director-code", lambda s, truth, rng: "I cannot code these.")
    result = run_coding(run_dir, "sim", batch_size=50, tests=0, repeats=0, cache=False,
                        progress=False).run
    assert result.answered == 0 and result.by_error == {"parse": 1}
    recs = list(iter_records(pass_dir(run_dir, "main") / JOURNAL))
    assert recs[0]["error"]["kind"] == "parse"
    s = summarize(run_dir)
    assert s["uncoded"]["main"] == 36 and all(r["coded"] == 0 for r in s["readings"])


def test_a_real_sdk_coder_gets_the_schema_and_only_neutral_items(study, tmp_path, fp, monkeypatch):
    import shutil

    from fake_providers import Reply

    run_dir = tmp_path / "copy"
    shutil.copytree(study, run_dir, ignore=shutil.ignore_patterns("coding"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def coder(rec):
        content = rec.body["messages"][0]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        shown = json.loads(text.split("Items:\n", 1)[1].rsplit("\n\nAnswer with", 1)[0])
        codes = []
        for it in shown:
            quote = " ".join(it["trace"].split()[:6])
            codes.append({"id": it["id"], "reading": "none", "reading_quote": quote,
                          "sees": "not_stated", "sees_quote": quote, "works_out": False,
                          "works_out_quote": quote})
        return Reply(json.dumps({"codes": codes}))

    fp.reset(coder)
    done = run_coding(run_dir, "openai:gpt-6-astra", base_url=fp.openai_base_url,
                      batch_size=25, tests=4, cache=False, progress=False, max_attempts=1)
    result, n = done.run, done.items
    # 36 real items, 4 tests and by default 30 real items again: three batches
    assert result.answered == result.total == 3 and n == 36 and done.repeats == 30
    body = fp.requests[0].body
    assert body["model"] == "gpt-6-astra"
    assert body["response_format"]["type"] == "json_schema"
    # Appendix E: the coder ran "at maximum reasoning effort": the default is the highest
    # value the OpenAI SDK names (openai/types/shared/reasoning_effort.py, ReasoningEffort)
    from typing import get_args

    from openai.types.shared import ReasoningEffort

    levels = [a for arg in get_args(ReasoningEffort) for a in get_args(arg)]
    assert body["reasoning_effort"] == levels[-1] == "max"
    sent = json.dumps(body)
    assert "main-00" not in sent and "director-strong" not in sent
    # no condition either (the codebook quotes the requests, so "move" itself may appear)
    assert '"condition' not in sent and "move/novis" not in sent and '"b1"' not in sent
    assert all(it["codes"] is not None for it in coded_items(run_dir))
    assert "sk-test" not in (pass_dir(run_dir, "main") / "run.json").read_text()


def _fill(sheet: Path, out: Path, wrong: frozenset = frozenset()) -> None:
    """A person's sheet: the written codes (the report where the trace states nothing), with
    the readings of the ids in ``wrong`` changed."""
    import csv

    from unseen.evals.director.task.parse import parse_reply

    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            c = read_trace(r["trace"])
            sees = c.sees
            report = parse_reply(r["reply"], {"visible": "ints", "block": "int"})
            if sees == "not_stated" and report is not None:
                sees = "seen" if report["block"] in report["visible"] else "unseen"
            reading = c.reading
            if r["id"] in wrong:
                reading = "none" if reading != "none" else "own_view"
            w.writerow({**r, "reading": reading.replace("_", " "), "sees": sees,
                        "works_out": "yes" if c.works_out else "no"})


def test_answer_sheets_draw_by_stratum_and_agreement_counts_each_pair(coded, tmp_path, run_main):
    from unseen.evals.director.coding.sheets import draw, sheet_key_path

    items = draw(coded, per_stratum=2, tests=3)
    real = [it for it in items if not it["test"]]
    assert sum(it["test"] for it in items) == 3
    per = {}
    for it in real:
        per[it["stratum"]] = per.get(it["stratum"], 0) + 1
    assert max(per.values()) <= 2 and len(per) >= 4
    assert len({(it["model"], it["scene"]) for it in real}) == len(real)  # no scene twice

    sheet = tmp_path / "sheet.csv"
    code, out, err = run_main(["director", "sheet", str(coded), "--out", str(sheet),
                               "--per-stratum", "2", "--tests", "3"])
    assert code == 0, err
    text = sheet.read_text(encoding="utf-8")
    assert "director-strong" not in text and "main-00" not in text and "move/novis" not in text
    key = [json.loads(line) for line in sheet_key_path(coded).read_text().splitlines()]
    one_real = next(it["id"] for it in key if not it["test"])
    _fill(sheet, tmp_path / "ann.csv")
    _fill(sheet, tmp_path / "ben.csv", wrong=frozenset({one_real}))
    code, out, err = run_main(["director", "agree", str(coded), str(tmp_path / "ann.csv"),
                               str(tmp_path / "ben.csv"), "--format", "json"])
    assert code == 0, err
    res = json.loads(out)
    n = res["items"]
    assert n == len(real) and res["test_right"] == {"ann": 3, "ben": 3}
    pairs = {(p["a"], p["b"]): p for p in res["pairs"]}
    assert pairs[("automatic", "ann")]["reading"]["same"] == n
    assert pairs[("automatic", "ann")]["reading"]["kappa"] == 1.0
    assert pairs[("ann", "ben")]["reading"]["same"] == n - 1
    assert pairs[("ann", "ben")]["reading"]["kappa"] < 1.0
    assert pairs[("ann", "ben")]["sees"]["same"] == n


def test_a_sheet_with_a_bad_row_is_refused_with_its_row(coded, tmp_path, run_main):
    sheet = tmp_path / "sheet.csv"
    assert run_main(["director", "sheet", str(coded), "--out", str(sheet), "--seed", "3"])[0] == 0
    _fill(sheet, tmp_path / "ann.csv")
    lines = (tmp_path / "ann.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "bad.csv"
    bad.write_text(lines[0] + lines[1].rstrip("\r\n").rsplit(",", 1)[0] + ",maybe\n"
                   + "".join(lines[2:]), encoding="utf-8")
    code, _, err = run_main(["director", "agree", str(coded), str(bad), "--seed", "3"])
    assert code == 2 and "bad.csv:2" in err and "works_out" in err
    short = tmp_path / "short.csv"
    short.write_text("".join(lines[:-1]), encoding="utf-8")
    code, _, err = run_main(["director", "agree", str(coded), str(short), "--seed", "3"])
    assert code == 2 and "not coded" in err
    code, _, err = run_main(["director", "agree", str(coded), str(tmp_path / "ann.csv"), "--seed", "9"])
    assert code == 2 and "no sheet key" in err


def test_show_prints_a_coded_trace_codes_and_quote(coded, run_main):
    from unseen.evals.director.coding.items import codes_by_key

    by_key = codes_by_key(coded)
    rec = next(r for r in iter_records(coded / JOURNAL)
               if r["key"] in by_key and by_key[r["key"]].reading == "own_view")
    code, out, err = run_main(["show", str(coded), rec["instance_id"], "--strategy",
                               rec["params"]["condition"], "--no-images", "--sample",
                               str(rec["sample"])])
    assert code == 0, err
    assert "trace codes" in out and "reading own view" in out
    assert by_key[rec["key"]].reading_quote.split()[0] in out


def test_the_html_export_has_the_trace_tables_once_coded(coded, tmp_path, run_main):
    code, _, err = run_main(["export", str(coded), "--html", str(tmp_path / "site"),
                             "--max-strips", "0"])
    assert code == 0, err
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert 'id="traces"' in html and "Coder checks" in html and "own view" in html


def test_views_of_the_coding_folder_point_to_the_study(coded, run_main):
    code, _, err = run_main(["show", str(pass_dir(coded, "main"))])
    assert code == 2 and "unseen director codes" in err


def test_items_left_uncoded_are_asked_again_in_a_retry_round(study, tmp_path, monkeypatch):
    import shutil

    from unseen.backends import sim
    from unseen.evals.director.coding.items import RETRIES_FILE

    run_dir = tmp_path / "copy"
    shutil.copytree(study, run_dir, ignore=shutil.ignore_patterns("coding"))
    real = sim.TASKS["director-code"]

    def half(s, truth, rng):  # a coder that leaves out the second half of every batch
        items = truth.items
        return real(s, truth.model_copy(update={"items": items[: len(items) // 2]}), rng)

    monkeypatch.setitem(sim.TASKS, "director-code", half)
    kw = {"batch_size": 8, "tests": 4, "cache": False, "progress": False}
    first = run_coding(run_dir, "sim", **kw)
    left = sum(1 for it in coded_items(run_dir) if not it["codes"])  # tests included
    assert first.run.answered == first.run.total and left > 0
    monkeypatch.setitem(sim.TASKS, "director-code", real)
    again = run_coding(run_dir, "sim", retry_uncoded=True, **kw)
    assert again.retried == left
    assert again.run.skipped == first.run.total and again.run.done > 0
    assert summarize(run_dir)["uncoded"]["main"] == 0
    assert all(it["codes"] for it in coded_items(run_dir))
    resumed = run_coding(run_dir, "sim", **kw)  # the round is remembered: nothing to redo
    assert resumed.run.done == 0 and resumed.run.total == again.run.total
    assert run_coding(run_dir, "sim", retry_uncoded=True, **kw).retried == 0
    assert len((pass_dir(run_dir, "main") / RETRIES_FILE).read_text().splitlines()) == 1


def test_a_retry_round_waits_for_the_pass_to_finish(study, tmp_path, monkeypatch):
    import shutil

    from unseen.evals.director.coding.items import add_retry_round, load_items

    run_dir = tmp_path / "copy"
    shutil.copytree(study, run_dir, ignore=shutil.ignore_patterns("coding"))
    run_coding(run_dir, "sim", batch_size=8, tests=0, cache=False, progress=False)
    folder = pass_dir(run_dir, "main")
    with pytest.raises(CodingError, match="have not run yet"):
        add_retry_round(folder, load_items(folder), finished={"main-0000"},
                        batch_ids=["main-0000", "main-0001"])


def test_repeats_count_the_same_two_codes_on_hand_made_items():
    from unseen.evals.director.coding.report import _repeats

    def item(id_, reading, sees, works_out=True, repeat_of=None, codes=True):
        return {"id": id_, "test": False, "repeat_of": repeat_of,
                "codes": {"reading": reading, "sees": sees, "works_out": works_out} if codes else None}

    main = [item("a", "own_view", "unseen"), item("b", "director_view", "seen"),
            item("c", "none", "not_stated"), item("d", "own_view", "seen"),
            item("a2", "own_view", "unseen", repeat_of="a"),           # same two codes
            item("b2", "director_view", "unseen", repeat_of="b"),      # sees differs
            item("c2", "largest_digit", "not_stated", False, repeat_of="c"),  # reading, works-out
            item("d2", "own_view", "seen", repeat_of="d", codes=False)]  # left uncoded
    assert _repeats(main) == {"n": 4, "coded_both": 3, "same_two_codes": 1, "reading": 2,
                              "sees": 2, "works_out": 2}


def test_a_sheet_coding_one_id_twice(tmp_path):
    """The same codes on two rows count once; other codes on the second row are one line
    naming it and the first (no last-row-wins)."""
    from unseen.evals.director.coding.items import CodingError
    from unseen.evals.director.coding.sheets import read_sheet

    sheet = tmp_path / "ann.csv"
    head = "id,reading,sees,works_out\n"
    sheet.write_text(head + "a,own view,seen,yes\nb,none,unseen,no\na,own_view,seen,true\n")
    assert read_sheet(sheet, {"a", "b"})["a"] == {"reading": "own_view", "sees": "seen",
                                                  "works_out": True}
    sheet.write_text(head + "a,own view,seen,yes\nb,none,unseen,no\na,none,seen,yes\n")
    with pytest.raises(CodingError, match=r"ann\.csv:4: id 'a' is coded again, otherwise than "
                                          r"on row 2"):
        read_sheet(sheet, {"a", "b"})
