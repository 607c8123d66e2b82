"""Provider keys from ``./.env`` (``engine/envfile.py``): the environment wins, and a key from
the file is scrubbed like one from the environment."""

from __future__ import annotations

import json
import os

import pytest
from fake_providers import echo_key
from test_redact import OPENAI_KEY, every_file_lacks

from unseen.engine.envfile import PROVIDER_VARS, load_env_file
from unseen.engine.redact import REDACTED, scrub

FILE_KEY = "sk-file-" + "Qx7Lm" * 8
ENV_KEY = "sk-envr-" + "Wp3Rt" * 8


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    """No provider variable in the environment, restored afterwards whatever the test set;
    the working directory is an empty temporary folder."""
    for name in PROVIDER_VARS:
        monkeypatch.setenv(name, "x")  # recorded, so teardown removes what a load sets
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_keys_come_from_the_file_when_the_environment_lacks_them(no_keys, monkeypatch):
    (no_keys / ".env").write_text(
        f'# keys\nOPENAI_API_KEY="{FILE_KEY}"\nexport GEMINI_API_KEY=AIza{"k" * 35}\n'
        "OPENAI_BASE_URL=http://127.0.0.1:9/v1\nUNRELATED=value\nPLUGIN_API_KEY=pk-12345678\n",
        encoding="utf-8")
    monkeypatch.setenv("PLUGIN_API_KEY", "x")
    monkeypatch.delenv("PLUGIN_API_KEY")  # a plug-in backend's key: taken too
    taken = load_env_file()
    assert sorted(taken) == ["GEMINI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                             "PLUGIN_API_KEY"]
    assert os.environ["OPENAI_API_KEY"] == FILE_KEY
    assert os.environ["GEMINI_API_KEY"] == "AIza" + "k" * 35
    assert "UNRELATED" not in os.environ  # only the variables the backends read


def test_the_environment_wins_and_the_files_key_is_still_scrubbed(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("VLLM_API_KEY", "")  # set but empty: the file fills it
    (no_keys / ".env").write_text(f"OPENAI_API_KEY={FILE_KEY}\nVLLM_API_KEY=plain-vllm-token\n"
                                  "HF_TOKEN=hf-not-ours-but-secret\n", encoding="utf-8")
    assert load_env_file() == ["VLLM_API_KEY"]
    assert os.environ["OPENAI_API_KEY"] == ENV_KEY
    # neither the overridden key nor another secret of the file survives the scrubber
    text = f"a {FILE_KEY} b {ENV_KEY} c plain-vllm-token d hf-not-ours-but-secret"
    assert scrub(text) == f"a {REDACTED} b {REDACTED} c {REDACTED} d {REDACTED}"


def test_no_file_changes_nothing(no_keys):
    assert load_env_file() == [] and not any(n in os.environ for n in PROVIDER_VARS)


def test_a_file_that_is_not_text_is_one_line_and_exit_2(no_keys, run_main):
    (no_keys / ".env").write_bytes(b"OPENAI_API_KEY=\xff\xfe\n")
    code, _, err = run_main(["backends"])
    assert code == 2 and err.count("\n") == 1 and ".env" in err


def test_a_run_with_the_key_from_the_file_stores_it_nowhere(no_keys, fp, sample_data, run_main):
    """End to end: the key reaches the provider from .env, the provider echoes it in a 401,
    and it is in no file and no output (as test_redact's test with an environment key)."""
    key = OPENAI_KEY
    (no_keys / ".env").write_text(f"OPENAI_API_KEY={key}\n", encoding="utf-8")
    fp.reset(echo_key(401))
    run_dir, cache = no_keys / "run", no_keys / "cache"
    _, out, err = run_main(["run", "--data", str(sample_data), "-s", "direct", "-b",
                            "openai:fake-model,box_format=norm1000", "--base-url", fp.openai_base_url, "--limit", "2",
                            "--out", str(run_dir), "--cache-dir", str(cache)])
    assert key in fp.requests[0].headers.get("authorization", "")  # the file's key was sent
    rec = json.loads((run_dir / "trajectories.jsonl").read_text().splitlines()[0])
    assert "Incorrect API key provided: [redacted]" in rec["error"]["message"]
    assert key not in out + err
    every_file_lacks(key, run_dir, cache)


def test_only_the_first_mib_is_read_and_said_once(no_keys, capsys):
    """A file past MAX_BYTES: its lines up to the last whole one inside the limit are read,
    the rest not; the CLI and the backends both load it, the warning comes once."""
    from unseen.engine.envfile import MAX_BYTES

    pad = b"# " + b"p" * 97 + b"\n"
    (no_keys / ".env").write_bytes(b"OPENAI_API_KEY=sk-first-" + b"a" * 20 + b"\n"
                                   + pad * (MAX_BYTES // len(pad))
                                   + b"GEMINI_API_KEY=AIza" + b"k" * 35 + b"\n")
    assert load_env_file() == ["OPENAI_API_KEY"]
    assert load_env_file() == []  # set now; read again from the cache
    assert capsys.readouterr().err.count("larger than 1 MiB") == 1
    assert "GEMINI_API_KEY" not in os.environ


def test_a_line_is_read_alone_so_an_unclosed_quote_swallows_nothing(no_keys):
    """python-dotenv over the whole file reads ``A="x`` up to the next quote, dropping the
    keys between; here each provider line is its own statement (dotenv.parser.parse_stream)."""
    from unseen.engine.envfile import EnvFileError

    (no_keys / ".env").write_text('NOTES="an open quote\nVLLM_API_KEY=vllm-token-123\n'
                                  "PLAIN junk\nexport GEMINI_BASE_URL = 'http://h:1/v1'\n")
    assert sorted(load_env_file()) == ["GEMINI_BASE_URL", "VLLM_API_KEY"]
    assert os.environ["GEMINI_BASE_URL"] == "http://h:1/v1"
    (no_keys / ".env").write_text('X=1\nOPENAI_API_KEY="sk-unclosed-0123456789\nY=2\n')
    with pytest.raises(EnvFileError, match=r"\.env:2: OPENAI_API_KEY: not NAME=VALUE"):
        load_env_file()
