"""The ``human`` page over real HTTP on 127.0.0.1, with its valid token (issue 25): it reads
only its own answers, as JSON, and never past its 64 kB limit; a box far outside the image
is refused. tests/backends/test_human.py has the rest of the page's API."""

from __future__ import annotations

import asyncio
import json

from human_driver import Announced, Person, finish

from unseen.api import run_async
from unseen.engine.journal import JOURNAL, iter_records


def _run(data, out, **kw) -> asyncio.Task:
    return asyncio.create_task(run_async(data, ["direct"], ["human:ann"], out=out, cache=False,
                                         progress=False, **kw))


def _post_raw(url: str, path: str, head: str, body: bytes = b"") -> str:
    """POST over a plain socket: ``head`` (the framing headers) and ``body`` sent, then no
    more; the status line the page answers, or "none" when it waits for the rest (a page
    that read the whole declared body would: the socket's timeout bounds the wait)."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as sock:
        sock.sendall((f"POST {u.path}{path} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                      f"Content-Type: application/json\r\n{head}\r\n").encode() + body)
        try:
            return sock.recv(4096).split(b"\r\n")[0].decode()
        except TimeoutError:
            return "none"


async def test_the_page_reads_only_its_own_answers_and_never_past_the_limit(sample_data, tmp_path,
                                                                           monkeypatch):
    """Over real HTTP on 127.0.0.1, with the valid token: a body declared 300 MB is refused
    before a byte of it is read, a chunked one once 64 kB have come (the rest never asked
    for); another origin's post, a text/plain one (a form's, sent without a preflight) and
    a box far outside the image are refused; the page's own answer is then taken."""
    from unseen.backends.human_web import MAX_BODY

    said = Announced(monkeypatch)
    task = _run(sample_data, tmp_path / "r", limit=1)
    url = await said.url(task=task)
    person = Person(url)
    item = await person.next()
    path = f"api/answer/{item['id']}"
    status = await asyncio.to_thread(_post_raw, url, path, "Content-Length: 300000000\r\n")
    assert status == "HTTP/1.1 413 Request Entity Too Large", status
    over = b"[" + b"0," * (MAX_BODY // 2) + b"0]"
    chunk = f"{len(over):x}\r\n".encode() + over + b"\r\n"  # and no last chunk: more to come
    status = await asyncio.to_thread(_post_raw, url, path, "Transfer-Encoding: chunked\r\n",
                                     chunk)
    assert status == "HTTP/1.1 413 Request Entity Too Large", status
    good = json.dumps({"box": [10, 10, 50, 60]})
    for headers, code in [({"content-type": "text/plain", "origin": "http://evil.example"}, 403),
                          ({"content-type": "text/plain"}, 415),
                          ({"content-type": "application/json", "origin": "http://evil.example"}, 403),
                          ({"content-type": "application/json", "sec-fetch-site": "cross-site"}, 403)]:
        r = await person.client.post(path, content=good, headers=headers)
        assert r.status_code == code, (headers, r.text)
    r = await person.answer(item["id"], {"box": [-500, -500, 99999, 99999]})
    assert r.status_code == 400 and "not inside" in r.json()["error"]
    own = {"content-type": "application/json", "origin": url.split("/", 3)[0] + "//" + url.split("/")[2],
           "sec-fetch-site": "same-origin"}
    assert (await person.client.post(path, content=good, headers=own)).status_code == 200
    await finish(task, person)
    (rec,) = list(iter_records(tmp_path / "r" / JOURNAL))
    assert rec["prediction"] == [10.0, 10.0, 50.0, 60.0]
