"""Secrets: a provider that echoes the key in its error body leaves no trace of it in the
journal, run.json, the cache, an error line or a view (``engine/redact.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_providers import Reply, echo_key

from unseen.engine import redact
from unseen.engine.redact import REDACTED, remember_url, scrub, scrub_bytes, scrubber

OPENAI_KEY = "sk-proj-" + "Zx9Qw" * 10  # the shape of an OpenAI project key
GOOGLE_KEY = "AIza" + "SyD3x" * 7  # a Google API key: AIza and 35 characters


def every_file_lacks(text: str, *folders: Path) -> None:
    files = [p for d in folders for p in d.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert text.encode() not in p.read_bytes(), p


@pytest.mark.parametrize("text, kept", [
    (f"Incorrect API key provided: {OPENAI_KEY}.", "Incorrect API key provided: "),
    (f"key={GOOGLE_KEY}&alt=json", "key="),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123def456", "Authorization: Bearer "),
])
def test_key_shaped_strings_are_scrubbed(text, kept):
    out = scrub(text)
    assert kept in out and REDACTED in out
    assert not any(k in out for k in (OPENAI_KEY, GOOGLE_KEY, "eyJhbGciOiJIUzI1NiJ9"))
    assert scrub_bytes(text.encode()) == out.encode()


@pytest.mark.parametrize("text", [
    "Ask the risk-assessment-department-today", "the bearer of bad news, the bearer information",
    "task-1234567890abcdef and desk-abcdefghijklmnop", "AIza is a prefix, AIzaShort",
])
def test_ordinary_text_is_left_alone(text):
    assert scrub(text) == text


def test_the_keys_in_use_are_scrubbed_whatever_their_shape(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "plain-looking-token-42")
    monkeypatch.setenv("GEMINI_API_KEY", "short")  # under MIN_SECRET: would match words
    remembered = 'given"in code\\value'
    redact.remember(remembered)
    text = f'a plain-looking-token-42 b {remembered} c {json.dumps(remembered)} short'
    out = scrub(text)
    assert "plain-looking-token-42" not in out and remembered not in out
    assert json.dumps(remembered)[1:-1] not in out and out.endswith(" short")


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_an_echoed_key_is_in_no_file_and_no_output(provider, tmp_path, fp, sample_data,
                                                   run_main, monkeypatch):
    """The issue: the key a 401 body echoed went to the journal and `show` printed it."""
    env, key = ("OPENAI_API_KEY", OPENAI_KEY) if provider == "openai" else \
        ("GEMINI_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv(env, key)
    fp.reset(echo_key(401))
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    base = fp.openai_base_url if provider == "openai" else fp.gemini_base_url
    _, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                            f"{provider}:fake-model,box_format=norm1000", "--base-url", base, "--limit", "2",
                            "--out", str(run_dir), "--cache-dir", str(cache)])
    sent = fp.requests[0].headers
    assert key in sent.get("authorization", "") + sent.get("x-goog-api-key", "")  # it was sent
    rec = json.loads((run_dir / "trajectories.jsonl").read_text().splitlines()[0])
    assert "Incorrect API key provided: [redacted]" in rec["error"]["message"]
    assert key not in out + err
    every_file_lacks(key, run_dir, cache)
    shown = [run_main(["show", str(run_dir)]), run_main(["show", str(run_dir), rec["instance_id"]]),
             run_main(["export", str(run_dir), "--html", str(tmp_path / "html")])]
    for code, out, err in shown:
        assert code == 0 and key not in out + err, err
    every_file_lacks(key, tmp_path / "html")


def test_a_journal_written_before_the_scrubber_shows_no_key(tmp_path, fp, sample_data, run_main,
                                                            monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    fp.reset(Reply('{"box": [1, 2, 30, 40]}'))
    run_dir = tmp_path / "run"
    code, _, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                             "openai:fake-model,box_format=norm1000", "--base-url", fp.openai_base_url, "--limit",
                             "1", "--out", str(run_dir), "--no-cache", "-q"])
    assert code == 0, err
    path = run_dir / "trajectories.jsonl"
    rec = json.loads(path.read_text())
    rec["steps"][0]["reply"]["text"] = f"my key is {OPENAI_KEY} and AIza{'k' * 35}"
    path.write_text(json.dumps(rec) + "\n")  # as an older version would have written it
    code, out, err = run_main(["show", str(run_dir), rec["instance_id"], "--full"])
    assert code == 0, err
    assert "my key is [redacted]" in out and OPENAI_KEY not in out and "AIza" not in out


@pytest.mark.parametrize("text, expected", [
    ("at http://user:PW-1@host:8/v1 now", "at http://[redacted]@host:8/v1 now"),
    ('{"base_url": "https://TOKEN@h/v1"}', '{"base_url": "https://[redacted]@h/v1"}'),
    ("https://h/v1?api_key=A&x=1&token=B#f", "https://h/v1?api_key=[redacted]&x=1&token=[redacted]#f"),
    ("GET /v1?API_KEY=A) failed", "GET /v1?API_KEY=[redacted]) failed"),  # a path echoed alone
    ("https://s3/o?X-Amz-Signature=abc&keyword=kept", "https://s3/o?X-Amz-Signature=[redacted]&keyword=kept"),
    ("http://h/v1/chat/completions?stream=true", "http://h/v1/chat/completions?stream=true"),
    ("a = b, 2 + 2 = 4", "a = b, 2 + 2 = 4"),
])
def test_a_url_loses_its_user_information_and_secret_query_values(text, expected):
    assert scrub(text) == expected
    assert scrubber()(text) == expected


def test_a_server_url_s_secrets_are_scrubbed_alone_too():
    """A server that echoes the password or key without the URL around it (``remember_url``)."""
    remember_url("http://me:pass-word-42@h/v1?api_key=query-key-42&model=m")
    assert scrub("denied: pass-word-42, query-key-42; model=m") == (
        "denied: [redacted], [redacted]; model=m")
    remember_url("http://[::1")  # malformed: refused elsewhere, nothing taken here
