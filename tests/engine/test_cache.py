"""The reply cache: what it keys on, what it refuses to keep, a damaged file set aside."""

import json
import sqlite3

import pytest
from PIL import Image

from unseen.engine.cache import ReplyCache, request_key
from unseen.engine.oracle import BoxTruth, Cue
from unseen.engine.types import (
    Decoding,
    ErrorInfo,
    ImagePart,
    Message,
    Reply,
    Request,
    TextPart,
)


def req(path, text="hi", sample=0, temperature=0.0, oracle=None):
    return Request(
        messages=[Message(role="user", parts=[ImagePart(path=str(path)), TextPart(text=text)])],
        decoding=Decoding(temperature=temperature), sample=sample, oracle=oracle,
    )


def test_key_covers_what_shapes_a_reply(tmp_path):
    img = tmp_path / "a.png"
    Image.new("RGB", (8, 8), (1, 2, 3)).save(img)
    base = request_key("openai", "m", req(img))
    assert request_key("openai", "m", req(img)) == base
    assert request_key("openai", "m2", req(img)) != base
    assert request_key("gemini", "m", req(img)) != base
    assert request_key("openai", "m", req(img, text="other")) != base
    assert request_key("openai", "m", req(img, sample=1)) != base
    assert request_key("openai", "m", req(img, temperature=1.0)) != base
    # the oracle is a side channel: never part of the key, whatever truth or cues it holds
    truth = BoxTruth(instance="i1", box=[1, 2, 3, 4], width=8, height=8)
    assert request_key("openai", "m", req(img, oracle=truth)) == base
    hinted = truth.model_copy(update={"cues": frozenset({Cue.HIDDEN, Cue.REASONING})})
    assert request_key("openai", "m", req(img, oracle=hinted)) == base
    assert "oracle" not in req(img, oracle=truth).model_dump_json()
    # same path, other bytes: another key (image bytes are hashed, not the path)
    Image.new("RGB", (8, 8), (9, 9, 9)).save(img)
    assert request_key("openai", "m", req(img)) != base


def test_errors_and_empty_replies_never_cached(tmp_path):
    cache = ReplyCache(tmp_path)
    assert not cache.put("k1", "openai", "m", Reply(error=ErrorInfo(kind="server", message="x")))
    assert not cache.put("k2", "openai", "m", Reply(text="   "))
    assert cache.get("k1") is None and cache.get("k2") is None
    assert cache.put("k3", "openai", "m", Reply(text='{"box": [1, 2, 3, 4]}'))
    hit = cache.get("k3")
    assert hit is not None and hit.cached and hit.text == '{"box": [1, 2, 3, 4]}'
    assert cache.stats()["entries"] == 1


def test_persists_across_instances_and_clears(tmp_path):
    c1 = ReplyCache(tmp_path)
    c1.put("a", "openai", "m1", Reply(text="x"))
    c1.put("b", "gemini", "m2", Reply(text="y"))
    c1.close()
    c2 = ReplyCache(tmp_path)
    assert c2.get("a").text == "x"
    stats = c2.stats()
    assert stats["entries"] == 2 and stats["bytes"] > 0
    assert {r["backend"] for r in stats["by_model"]} == {"openai", "gemini"}
    assert c2.clear(backend="openai") == 1
    assert c2.get("a") is None and c2.get("b") is not None
    assert c2.clear() == 1
    wal = c2._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert wal == "wal"


# --- a damaged cache file ------------------------------------------------------------------


def filled(folder, n=200):
    """A closed cache of ``n`` replies of ~1.5 kB (several hundred pages); its file."""
    cache = ReplyCache(folder)
    for i in range(n):
        cache.put(f"k{i}", "sim", "m", Reply(text="x" * 1500 + str(i)))
    cache.close()
    return folder / "replies.sqlite"


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2 + 123])


def _header(path):
    data = bytearray(path.read_bytes())
    data[:100] = b"overwritten by something else " * 3 + b"..........".ljust(10)
    path.write_bytes(bytes(data))


def _pages(path):
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid: mid + 3 * 4096] = bytes((i * 37 + 11) % 251 for i in range(3 * 4096))
    path.write_bytes(bytes(data))


DAMAGE = {"truncated": _truncate, "overwritten header": _header, "damaged pages": _pages}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_cache_is_moved_aside_with_a_warning_and_a_fresh_one_serves(tmp_path, how,
                                                                              capsys):
    path = filled(tmp_path)
    DAMAGE[how](path)
    cache = ReplyCache(tmp_path)
    moved = cache.moved
    assert len(moved) == 1 and moved[0].name.startswith("replies.sqlite.corrupt-")
    assert moved[0].is_file()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning:") and str(moved[0]) in err
    assert cache.get("k1") is None and cache.stats()["entries"] == 0
    assert cache.put("new", "sim", "m", Reply(text="y")) and cache.get("new").text == "y"
    assert [p["path"] for p in cache.stats()["set_aside"]] == [str(moved[0])]
    cache.close()
    again = ReplyCache(tmp_path)  # the fresh file is sound: no second warning
    assert again.moved == [] and again.get("new").text == "y"
    assert capsys.readouterr().err == ""
    again.close()


def test_a_database_error_on_first_use_moves_the_cache_aside_and_misses(tmp_path, capsys):
    path = filled(tmp_path, n=5)
    cache = ReplyCache(tmp_path)

    class Damaged:  # what sqlite3 raises when a page it reads is malformed
        def execute(self, *a):
            raise sqlite3.DatabaseError("database disk image is malformed")

        def close(self):
            pass

    cache._db = Damaged()
    assert cache.get("k1") is None  # a miss, not an error
    assert len(cache.moved) == 1 and not path.exists() or path.stat().st_size < 8192
    assert "database disk image is malformed" in capsys.readouterr().err
    assert cache.put("k1", "sim", "m", Reply(text="z")) and cache.get("k1").text == "z"
    cache.close()


def test_a_run_over_a_damaged_cache_answers_every_trajectory(tmp_path, sample_data, run_main):
    """The issue: every trajectory typed `internal: DatabaseError` (or a traceback) with exit
    0, again on every rerun."""
    cache_dir = tmp_path / "cache"
    _pages(filled(cache_dir, n=400))
    argv = ["run", "--data", str(sample_data), "-s", "direct", "--limit", "3",
            "--cache-dir", str(cache_dir), "--out", str(tmp_path / "r1"), "-q"]
    code, out, err = run_main(argv)
    assert code == 0 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.strip()][0].startswith("warning:")
    recs = [json.loads(line) for line in (tmp_path / "r1" / "trajectories.jsonl").open()]
    assert len(recs) == 3 and all(r["status"] == "answered" for r in recs)
    code, out, err = run_main(["cache", "stats", "--cache-dir", str(cache_dir), "--json"])
    stats = json.loads(out)
    assert code == 0 and len(stats["set_aside"]) == 1 and stats["entries"] == 0  # sim: uncached
    code, out, _ = run_main(["cache", "stats", "--cache-dir", str(cache_dir)])
    assert "set aside" in out and "corrupt-" in out
