"""The reply cache: what it keys on, what it refuses to keep."""

from PIL import Image

from unseen.engine.cache import ReplyCache, request_key
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
    # the oracle is a side channel: never part of the key
    assert request_key("openai", "m", req(img, oracle={"truth": [1, 2, 3, 4]})) == base
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
