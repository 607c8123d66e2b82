"""``--batch``: what a batch could not answer (issue 24, section 2), against the fake batch
servers of tests/fake_batches.py.

A line of a finished batch that failed with a retryable error (a 429, a 5xx, a line the
batch lost) goes in a later batch, up to the retry policy's tries; a line the error file
gives a non-retryable error is that typed error, asked once; a resume sends again what has
no usable result. A batch sent but not yet in the ledger when the process dies is found
again by its intent, not sent twice. Batches are split at the provider's size in bytes.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from batch_helpers import FAST, batches_made, finish_all
from fake_batches import Dropped, LineError
from fake_providers import Error, Reply
from helpers import read_journal

import unseen
from unseen.api import run_async
from unseen.backends.batch_gemini import GeminiBatches
from unseen.backends.batch_openai import OpenAIBatches

BOX = {"openai": '{"box": [100, 200, 300, 400]}', "gemini": '{"box_2d": [100, 200, 300, 400]}'}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-batch")


def spec_and_url(fp, provider: str) -> tuple[str, str]:
    if provider == "gemini":
        return "gemini:gemini-2.5-flash", fp.gemini_base_url
    return "openai:gpt-4o", fp.openai_base_url


def once(provider: str, behaviour, *, lines: int = 1):
    """Answers a box, except ``behaviour`` for the first ``lines`` lines the fake runs."""
    left = {"n": lines}

    def answer(rec):
        if left["n"]:
            left["n"] -= 1
            return behaviour
        return Reply(BOX[provider])
    return answer


def asked(fp) -> list[str]:
    return [r.custom_id or json.dumps(r.body, sort_keys=True) for r in fp.requests]


@pytest.mark.parametrize("provider, behaviour", [
    ("openai", Error(500)), ("openai", Error(429)), ("openai", Dropped()),
    ("openai", LineError("server_error", "the server had an error")),
    ("gemini", Error(500)), ("gemini", Error(429)), ("gemini", Error(503)),
], ids=["openai-500", "openai-429", "openai-lost", "openai-server_error", "gemini-500",
        "gemini-429", "gemini-503"])
def test_a_retryable_line_of_a_completed_batch_goes_in_a_later_batch(fp, sample_data, tmp_path,
                                                                     provider, behaviour):
    fp.default = once(provider, behaviour)
    fp.batch_polls = 0
    spec, url = spec_and_url(fp, provider)
    res = unseen.run(sample_data, ["direct"], [spec], base_url=url, out=tmp_path / "r",
                     limit=4, batch=True, **FAST)
    assert res.answered == 4 and res.errors == 0, res.examples
    assert len(batches_made(fp)) == 2  # the failed line alone, in a second batch
    ids = asked(fp)
    assert len(ids) == 5 and len(set(ids)) == 4  # that line once more, nothing else
    events = [json.loads(line) for line in (tmp_path / "r" / "batches.jsonl").read_text()
              .splitlines()]
    ended = [e for e in events if e["event"] == "ended"]
    assert [len(e["unusable"]) for e in ended] == [1, 0]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_retryable_line_is_tried_as_often_as_the_retry_policy_says(fp, sample_data, tmp_path,
                                                                     provider):
    fp.default = once(provider, Error(500), lines=10)  # never answered within three tries
    fp.batch_polls = 0
    spec, url = spec_and_url(fp, provider)
    res = unseen.run(sample_data, ["direct"], [spec], base_url=url, out=tmp_path / "r",
                     limit=1, batch=True, max_attempts=3, **FAST)
    assert res.by_error == {"server": 1}
    assert len(batches_made(fp)) == 3 and len(fp.requests) == 3
    rec = read_journal(tmp_path / "r")[0]
    assert rec["error"]["attempts"] == 3


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_resume_sends_again_a_line_without_a_usable_result(fp, sample_data, tmp_path,
                                                             provider):
    fp.default = once(provider, Error(500))
    fp.batch_polls = 0
    spec, url = spec_and_url(fp, provider)
    kw = dict(base_url=url, out=tmp_path / "r", limit=3, batch=True, max_attempts=1, **FAST)
    res = unseen.run(sample_data, ["direct"], [spec], **kw)
    assert res.by_error == {"server": 1} and len(batches_made(fp)) == 1
    failed = next(r for r in read_journal(tmp_path / "r") if r["status"] != "answered")
    res = unseen.run(sample_data, ["direct"], [spec], **kw)
    assert res.answered == 1 and res.errors == 0 and res.skipped == 2
    assert len(batches_made(fp)) == 2  # a new batch, not the finished one read again
    ids = asked(fp)
    assert len(ids) == 4 and len(set(ids)) == 3
    again = [r for r in read_journal(tmp_path / "r") if r["key"] == failed["key"]]
    assert [r["status"] for r in again] == ["unanswered", "answered"]


@pytest.mark.parametrize("behaviour, says", [
    (Error(400), "HTTP 400"),
    (LineError("invalid_request", "the image is not valid"), "invalid_request"),
], ids=["status-400", "error-object"])
def test_a_non_retryable_line_of_the_error_file_is_its_typed_error(fp, sample_data, tmp_path,
                                                                   behaviour, says):
    fp.default = once("openai", behaviour)
    fp.batch_polls = 0
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=3, batch=True, **FAST)
    assert res.answered == 2 and res.by_error == {"client": 1}
    assert says in res.examples["client"]
    assert len(batches_made(fp)) == 1 and len(fp.requests) == 3  # asked once, not retried
    (batch,) = fp._batches.values()
    assert batch.error_file_id is not None  # it came from the error file


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_batch_sent_but_not_in_the_ledger_is_found_again_not_sent_twice(
        fp, sample_data, tmp_path, monkeypatch, provider):
    """The process dies after the provider accepted the batch and before its id was written:
    the resume finds it by the intent written before it was sent."""
    fp.default = once(provider, Reply(BOX[provider]), lines=0)
    fp.batch_polls = 10_000  # still running when the run dies
    spec, url = spec_and_url(fp, provider)
    driver = GeminiBatches if provider == "gemini" else OpenAIBatches
    real = driver.submit
    out = tmp_path / "r"

    async def dies() -> None:
        sent = asyncio.Event()

        async def submit(self, *args):
            await real(self, *args)
            sent.set()
            await asyncio.Event().wait()  # the process is gone before the id is written

        monkeypatch.setattr(driver, "submit", submit)
        task = asyncio.ensure_future(run_async(sample_data, ["direct"], [spec], base_url=url,
                                               out=out, limit=3, batch=True, **FAST))
        await asyncio.wait_for(sent.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(dies())
    monkeypatch.setattr(driver, "submit", real)
    assert len(batches_made(fp)) == 1 and not read_journal(out)
    finish_all(fp)  # it finishes meanwhile
    res = unseen.run(sample_data, ["direct"], [spec], base_url=url, out=out, limit=3,
                     batch=True, **FAST)
    assert res.answered == 3
    assert len(batches_made(fp)) == 1  # found by its intent and followed
    ids = asked(fp)
    assert len(ids) == 3 and len(set(ids)) == 3
    events = [json.loads(line) for line in (out / "batches.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["intent", "submitted", "ended"]
    assert events[1]["recovered"] is True and events[1]["intent"] == events[0]["intent"]


def test_an_intent_the_provider_never_got_is_sent_on_resume(fp, sample_data, tmp_path,
                                                            monkeypatch):
    """The process dies after writing the intent and before the provider has the batch: the
    resume looks, finds none, and sends the lines."""
    fp.default = Reply(BOX["openai"])
    fp.batch_polls = 0
    out = tmp_path / "r"

    async def dies() -> None:
        about = asyncio.Event()

        async def submit(self, *args):
            about.set()
            await asyncio.Event().wait()

        monkeypatch.setattr(OpenAIBatches, "submit", submit)
        task = asyncio.ensure_future(run_async(sample_data, ["direct"], ["openai:gpt-4o"],
                                               base_url=fp.openai_base_url, out=out, limit=2,
                                               batch=True, **FAST))
        await asyncio.wait_for(about.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    real = OpenAIBatches.submit
    asyncio.run(dies())
    monkeypatch.setattr(OpenAIBatches, "submit", real)
    assert batches_made(fp) == []
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=out, limit=2, batch=True, **FAST)
    assert res.answered == 2 and len(batches_made(fp)) == 1
    events = [json.loads(line)["event"] for line in (out / "batches.jsonl").read_text()
              .splitlines()]
    assert events == ["intent", "abandoned", "intent", "submitted", "ended"]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_batch_is_split_before_it_passes_the_providers_size_in_bytes(
        fp, sample_data, tmp_path, monkeypatch, provider):
    fp.default = once(provider, Reply(BOX[provider]), lines=0)
    fp.batch_polls = 0
    spec, url = spec_and_url(fp, provider)
    driver = GeminiBatches if provider == "gemini" else OpenAIBatches
    sizes: list[int] = []
    real_encode = driver.encode

    def encode(self, cid, body):
        line, size = real_encode(self, cid, body)
        sizes.append(size)
        return line, size

    monkeypatch.setattr(driver, "encode", encode)
    # the limit from the lines' own sizes, measured in a first run: two of the largest lines
    # fit in it, three of the smallest do not
    unseen.run(sample_data, ["direct"], [spec], base_url=url, out=tmp_path / "m", limit=6,
               batch=True, **FAST)
    assert len(batches_made(fp)) == 1 and len(sizes) == 6
    limit = 2 * max(sizes)
    assert 3 * min(sizes) > limit
    monkeypatch.setattr(driver, "max_bytes", limit)
    fp.reset(fp.default)
    fp.batch_polls = 0
    res = unseen.run(sample_data, ["direct"], [spec], base_url=url, out=tmp_path / "r",
                     limit=6, batch=True, **FAST)
    assert res.answered == 6
    made = [b for b in fp._batches.values()]
    assert len(made) == 3 and all(len(b.lines) == 2 for b in made)
    for b in made:
        if provider == "openai":
            assert len(fp.batch_files[b.input_file_id]) <= limit


def test_a_request_larger_than_a_batch_may_hold_is_refused_alone(fp, sample_data, tmp_path,
                                                                 monkeypatch):
    fp.default = Reply(BOX["openai"])
    fp.batch_polls = 0
    monkeypatch.setattr(OpenAIBatches, "max_bytes", 1000)
    res = unseen.run(sample_data, ["direct"], ["openai:gpt-4o"], base_url=fp.openai_base_url,
                     out=tmp_path / "r", limit=2, batch=True, **FAST)
    assert res.by_error == {"client": 2} and batches_made(fp) == []
    assert "more than a openai batch may hold (1000 bytes)" in res.examples["client"]


def test_a_resume_that_cannot_list_the_batches_sends_nothing(fp, sample_data, tmp_path,
                                                              monkeypatch, run_main):
    """An intent without its batch id, and the provider's list of batches unreadable: the
    resume cannot tell whether the batch arrived, so it stops with one line (exit 2) rather
    than risk paying twice."""
    from unseen.engine.backend import ProviderError

    fp.default = Reply(BOX["openai"])
    fp.batch_polls = 0
    out = tmp_path / "r"
    out.mkdir()
    (out / "batches.jsonl").write_text(json.dumps(
        {"driver": "openai", "event": "intent", "intent": "abc", "custom_ids": ["x"],
         "at": 1.0}) + "\n")

    async def cannot(self, intent, since):
        raise ProviderError("server", "HTTP 503 from the batches list")

    monkeypatch.setattr(OpenAIBatches, "find", cannot)
    code, stdout, err = run_main(["run", "--data", str(sample_data), "-b", "openai:gpt-4o",
                                  "--base-url", fp.openai_base_url, "--batch", "--limit", "2",
                                  "--no-cache", "--out", str(out)])
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "could not be read (HTTP 503 from the batches list)" in line
    assert batches_made(fp) == [] and fp.requests == []
