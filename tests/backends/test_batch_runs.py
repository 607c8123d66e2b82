"""``--batch``: calls through the providers' batch APIs (issue 24, section 2), against the
fake batch servers of tests/fake_batches.py, which the real SDKs drive as they drive
OpenAI's Files + Batches and Gemini's batch jobs.

Strategies stay graphs: every live trajectory's call waits on the collector, so SPoE's step
t of every trajectory goes in one batch, a two-turn Director condition in two; the replies
match a run without --batch; a killed run resumes the batches it had sent, never sending a
request twice; an expired batch's unrun lines and a partial error file are retried in a
later batch.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from batch_helpers import FAST, answer, batches_made, ledger, sent, stable
from fake_providers import Error
from helpers import read_journal, run_tiny_study, tiny_design

import unseen
from unseen.api import run_async


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-batch")


def text_of(body: dict) -> str:
    return json.dumps(body)


async def submitted(run_dir, n: int = 1) -> None:
    """Until the run's ledger records ``n`` batches sent (bounded: 25 s)."""
    for _ in range(1250):
        if sent(run_dir) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {n} batches in the ledger: {ledger(run_dir)}")


@pytest.mark.parametrize("backend", ["openai:gpt-4o", "openai-responses:gpt-4o"])
def test_direct_and_spoe_through_openais_batch_api_match_a_run_without(fp, sample_data,
                                                                       tmp_path, backend):
    fp.default = answer
    fp.batch_polls = 1
    kw = dict(base_url=fp.openai_base_url, limit=4, **FAST)
    res = unseen.run(sample_data, ["direct", "spoe:T=3"], [backend], out=tmp_path / "b",
                     batch=True, **kw)
    assert res.answered == 8 and res.errors == 0
    # step t of every trajectory in one batch: direct with spoe's first step, then two
    assert len(batches_made(fp)) == 3
    assert all(r.batch_id for r in fp.requests)
    batched = stable(read_journal(tmp_path / "b"))
    fp.reset(answer)
    unseen.run(sample_data, ["direct", "spoe:T=3"], [backend], out=tmp_path / "s", **kw)
    assert fp.batch_calls == [] and stable(read_journal(tmp_path / "s")) == batched
    desc = json.loads((tmp_path / "b" / "run.json").read_text())["backends"][0]
    assert desc["batch"]["api"] == "openai" and desc["batch"]["batches"] == 3


def test_gemini_batch_jobs(fp, sample_data, tmp_path):
    fp.default = answer
    fp.batch_polls = 1
    res = unseen.run(sample_data, ["direct", "spoe:T=2"], ["gemini:gemini-2.5-flash"],
                     base_url=fp.gemini_base_url, out=tmp_path / "g", limit=3, batch=True,
                     **FAST)
    assert res.answered == 6 and res.errors == 0
    assert len(batches_made(fp)) == 2
    rec = next(r for r in read_journal(tmp_path / "g") if r["strategy"] == "direct")
    assert rec["prediction"] == pytest.approx([128.0, 48.0, 256.0, 144.0])  # y first


def test_a_two_turn_director_condition_goes_in_two_batches(fp, tmp_path, director_scenes):
    fp.default = answer
    fp.batch_polls = 0
    design = tiny_design("two-turn", batches={"b1": ["mean/twoturn"]}, seed=5)
    _, run_dir = run_tiny_study(tmp_path, design, [f"openai:gpt-5.5@{fp.openai_base_url}"],
                                director_scenes, batch=True, batch_window_s=0.2,
                                batch_poll_s=0.02, cache=False)
    rows = read_journal(run_dir)
    assert len(rows) == 2 and all(r["status"] == "answered" for r in rows)
    assert len(batches_made(fp)) == 2  # every dialogue's first turn, then every second


def test_a_killed_run_resumes_its_batches_and_sends_nothing_twice(fp, sample_data, tmp_path):
    fp.default = answer
    fp.batch_polls = 10_000  # still running when the run is killed
    out = tmp_path / "r"

    async def killed() -> None:
        task = asyncio.ensure_future(run_async(
            sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url, out=out,
            limit=4, batch=True, **FAST))
        await submitted(out)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(killed())
    assert len(batches_made(fp)) == 1 and not read_journal(out)
    for stored in fp._batches.values():  # the batch has finished meanwhile
        stored.in_progress_polls = stored.polls
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=out, limit=4, batch=True, **FAST)
    assert res.answered == 4
    assert len(batches_made(fp)) == 1  # followed, never sent again
    assert [e["event"] for e in ledger(out)] == ["intent", "submitted", "ended"]


def test_an_expired_batch_and_a_partial_error_file_are_retried_in_a_later_batch(
        fp, sample_data, tmp_path):
    fails = {"left": 1}

    def flaky(rec):
        if fails["left"] and "LESS" not in text_of(rec.body):
            fails["left"] -= 1
            return Error(500)
        return answer(rec)

    fp.default = flaky
    fp.batch_polls = 0
    fp.expire_next_batch(done=2)  # of four lines, two run; one of them fails
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=4, batch=True, **FAST)
    assert res.answered == 4 and res.errors == 0
    made = batches_made(fp)
    assert len(made) == 2  # the retries together, in one later batch
    ids = [r.custom_id for r in fp.requests]
    assert len(ids) == 5 and len(set(ids)) == 4  # the failed line once more, nothing else


def test_a_failed_batch_fails_its_calls_and_a_rerun_sends_them_again(fp, sample_data,
                                                                     tmp_path):
    fp.default = answer
    fp.batch_polls = 0
    fp.fail_next_batch()
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=2, batch=True, **FAST)
    assert res.by_error == {"client": 2} and "failed" in res.examples["client"]
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=2, batch=True, **FAST)
    assert res.answered == 2 and len(batches_made(fp)) == 2


def test_batch_is_refused_where_there_is_no_batch_api(fp, sample_data, tmp_path, run_main):
    fp.serve("Qwen/Qwen3-VL-8B")
    code, out, err = run_main(["run", "--data", str(sample_data), "-b",
                               f"vllm:Qwen/Qwen3-VL-8B@{fp.url}", "--batch", "--out",
                               str(tmp_path / "r")])
    assert code == 2 and "--batch is for the openai" in err and fp.requests == []


def test_a_batch_run_costs_the_batch_price(fp, sample_data, tmp_path, run_main):
    """OpenAI's batch API bills half (prices.toml: batch_discount 0.5): the table, and
    --max-cost's count, price a batch run's tokens at the discount."""
    prices = tmp_path / "prices.toml"
    prices.write_text('[[price]]\npattern = "gpt-4o"\ninput = 2.5\ncached_input = 1.25\n'
                      'output = 10.0\nbatch_discount = 0.5\ndate = "2026-12-02"\n'
                      'source = "test"\n', encoding="utf-8")
    fp.default = answer
    fp.batch_polls = 0
    kw = dict(base_url=fp.openai_base_url, limit=3, **FAST)
    unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "b", batch=True,
               **kw)
    unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], out=tmp_path / "s", **kw)

    def total(run: str) -> float:
        code, out, err = run_main(["compare", str(tmp_path / run), "--format", "json",
                                   "--prices", str(prices)])
        assert code == 0, err
        return json.loads(out)[0]["cost_total_usd"]

    assert total("b") == pytest.approx(total("s") / 2)
