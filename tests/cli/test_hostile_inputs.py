"""The hostile set (issue 25): a user's mistake or the machine's state ends in one line on
stderr and exit status 2, or in a stated warning and a finished run where the run can go on;
never a traceback, never exit 70 ("a bug in unseen"); nothing already journaled is lost.

One table in three parts (the issue's cases here; a user's files in ``hostile_files.py``;
what a user types and the environment in ``hostile_commands.py``): each case's setup
(``hostile.py``), its command, the exit status and a fragment of the one line (for exit 0,
of the warning). ``absent`` lists what must appear nowhere: not
on stdout or stderr, not in a file of the run directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import (
    SECRET,
    TINY,
    Case,
    Ctx,
    Setup,
    a_coded_study,
    a_file,
    a_run_in,
    a_study,
    both,
    cache_pages,
    changed,
    cut_journal,
    dataset,
    design,
    director,
    env_file,
    expect,
    expect_once,
    fill,
    free,
    full_after,
    garble,
    make_readonly,
    no_calls,
    run_data,
    run_openai,
    run_sample,
    snapshot,
    tiny_fs,
    unchanged,
)
from hostile_commands import COMMAND_CASES
from hostile_files import FILE_CASES


def nested(rec: dict) -> str:
    return json.dumps(rec)[:-1] + ', "meta": ' + "[" * 200_000 + "]" * 200_000 + "}"


def big_number(rec: dict) -> str:
    return json.dumps({**rec, "box": [0, 0, 10, 10]}).replace("[0, 0", "[" + "9" * 5000 + ", 0")


def surrogate(rec: dict) -> str:
    return json.dumps({**rec, "id": "PLACEHOLDER"}).replace("PLACEHOLDER", "inst\\ud800x")


def symlink_loop(ctx: Ctx) -> None:
    images = Path(ctx.data) / "images"
    (images / "loop1.png").symlink_to("loop2.png")
    (images / "loop2.png").symlink_to("loop1.png")


def truncate_image(ctx: Ctx) -> None:
    rec = json.loads((ctx.sample / "instances.jsonl").read_text().splitlines()[0])
    image = Path(ctx.data) / rec["image"]
    image.write_bytes(image.read_bytes()[: image.stat().st_size // 2])


def empty_image(ctx: Ctx) -> None:
    rec = json.loads((ctx.sample / "instances.jsonl").read_text().splitlines()[0])
    (Path(ctx.data) / rec["image"]).write_bytes(b"")


def text_image(ctx: Ctx) -> None:
    rec = json.loads((ctx.sample / "instances.jsonl").read_text().splitlines()[0])
    (Path(ctx.data) / rec["image"]).write_bytes(b"not an image at all\n")


def a_cache_in(sub: str) -> Setup:
    """A reply cache with one reply in ``tmp/sub``, then read-only."""

    def setup(ctx: Ctx) -> None:
        from unseen.engine.cache import ReplyCache
        from unseen.engine.types import Reply

        cache = ReplyCache(ctx.tmp / sub)
        cache.put("k", "openai", "m", Reply(text="{}"))
        cache.close()
        make_readonly(ctx, ctx.tmp / sub)

    return setup


def records(run_dir: Path) -> list[dict]:
    """The journal's whole records (a torn last line, which a resume cuts off, left out)."""
    lines = (run_dir / "trajectories.jsonl").read_bytes().split(b"\n")[:-1]
    return [json.loads(line) for line in lines]


def journaled(n: int, resumed: int | None = None) -> Callable[[Ctx, str, str], None]:
    """The run directory's journal holds ``n`` whole records (a torn tail aside); with
    ``resumed``, a rerun once the disk has room again adds the rest, none twice."""

    def check(ctx: Ctx, out: str, err: str) -> None:
        run_dir = Path(ctx.extra.get("out", ctx.out))
        assert len(records(run_dir)) >= n
        if resumed is None:
            return
        ctx.monkeypatch.undo()  # the injected full disk gone, or the real one given room:
        (ctx.tmp / "full" / "filler").unlink(missing_ok=True)
        from unseen.api import run

        run(ctx.sample, ["direct"], ["sim"], limit=resumed, out=run_dir, cache=False,
            progress=False)
        keys = [r["key"] for r in records(run_dir)]
        assert len(keys) == len(set(keys)) == resumed

    return check


def with_userinfo(ctx: Ctx, user: str = "user") -> str:
    return ctx.fp.openai_base_url.replace("://", f"://{user}:{SECRET}@")


def nothing_set_aside(ctx: Ctx, out: str, err: str) -> None:
    """A read-only cache is no damaged one: nothing moved aside, every reply journaled."""
    assert not list(ctx.tmp.rglob("*.corrupt-*"))
    journaled(2)(ctx, out, err)


def tmpfs(sub: str, keep: int | None = None) -> Setup:
    """A real 256 kB tmpfs at ``tmp/sub``, full (``keep`` bytes left)."""

    def setup(ctx: Ctx) -> None:
        tiny_fs(ctx, ctx.tmp / sub)
        if keep is None:
            fill(ctx.tmp / sub)
        else:
            free(ctx.tmp / sub, keep)

    return setup


def out_in(sub: str, limit: int = 2) -> Callable[[Ctx], list[str]]:
    def make(ctx: Ctx) -> list[str]:
        ctx.extra["out"] = str(ctx.tmp / sub / "r")
        return run_sample(ctx, limit=limit, out=ctx.extra["out"])

    return make


def cache_dir(sub: str, limit: int = 2) -> Callable[[Ctx], list[str]]:
    return lambda ctx: run_openai(ctx, "--cache-dir", str(ctx.tmp / sub), limit=limit)


CASES = [
    # --- instances.jsonl ----------------------------------------------------------------------
    Case("dataset: a 5,000-digit number", run_data, 2, "instances.jsonl:1:",
         dataset(big_number)),
    Case("dataset: a 200,000-deep array", run_data, 2, "nested too deeply", dataset(nested)),
    Case("dataset: a NUL in an image path", run_data, 2, "NUL",
         dataset(changed(image="images/a\x00b.png"))),
    Case("dataset: a 5,000-character image name", run_data, 2, "too long",
         dataset(changed(image="images/" + "a" * 5000 + ".png"))),
    Case("dataset: a lone surrogate in an id", run_data, 2, "surrogate", dataset(surrogate)),
    Case("dataset: an image symlink loop", run_data, 2, "symlink",
         dataset(changed(image="images/loop1.png"), prep=symlink_loop)),
    Case("dataset: a box of strings", run_data, 2, "numbers",
         dataset(changed(box=["1", "2", "30", "40"]))),
    Case("dataset: a box of booleans", run_data, 2, "numbers",
         dataset(changed(box=[False, False, True, True]))),
    Case("dataset: a truncated image", run_data, 2, "truncated",
         dataset(lambda rec: None, prep=truncate_image)),
    # ... and what already held
    Case("dataset: bad JSON", run_data, 2, "bad JSON", dataset('{"id": "a",')),
    Case("dataset: a line that is no object", run_data, 2, "JSON object", dataset("[1, 2]")),
    Case("dataset: a missing field", run_data, 2, "missing field 'box'",
         dataset(lambda rec: {k: v for k, v in rec.items() if k != "box"})),
    Case("dataset: an id of the wrong type", run_data, 2, "'id' must be a str",
         dataset(changed(id=7))),
    Case("dataset: an image outside the folder", run_data, 2, "outside the dataset folder",
         dataset(changed(image="../../etc/passwd"))),
    Case("dataset: an absolute image path", run_data, 2, "outside the dataset folder",
         dataset(changed(image="/etc/hostname"))),
    Case("dataset: a missing image", run_data, 2, "image not found",
         dataset(changed(image="images/nope.png"))),
    Case("dataset: an empty image", run_data, 2, "empty file",
         dataset(lambda rec: None, prep=empty_image)),
    Case("dataset: a text file as an image", run_data, 2, "not a readable image",
         dataset(lambda rec: None, prep=text_image)),
    Case("dataset: an inverted box", run_data, 2, "bad box",
         dataset(changed(box=[50, 50, 10, 10]))),
    Case("dataset: a box outside the image", run_data, 2, "lies outside",
         dataset(changed(box=[0, 0, 5000, 5000]))),
    Case("dataset: a box of three numbers", run_data, 2, "bad box",
         dataset(changed(box=[1, 2, 3]))),
    Case("dataset: meta not an object", run_data, 2, "'meta' must be an object",
         dataset(changed(meta=[1]))),
    Case("dataset: not UTF-8", run_data, 2, "not UTF-8", dataset('{"id": "\udcff"}')),
    Case("dataset: no instances", run_data, 2, "no instances", dataset("")),
    Case("dataset: no such folder", lambda ctx: run_data(ctx)[:2] + [str(ctx.tmp / "none")]
         + run_data(ctx)[3:], 2, "no benchmark reads this"),
    # --- options refused before any call -----------------------------------------------------
    Case("--timeout -1", lambda ctx: run_sample(ctx, "--timeout", "-1"), 2, "--timeout"),
    Case("--timeout 0", lambda ctx: run_sample(ctx, "--timeout", "0"), 2, "--timeout"),
    Case("--timeout nan", lambda ctx: run_sample(ctx, "--timeout", "nan"), 2, "--timeout"),
    Case("--base-url ftp:// (the fake server's address)",
         lambda ctx: run_openai(ctx, base_url=ctx.fp.openai_base_url.replace("http", "ftp")),
         2, "is no http:// or https:// URL", check=no_calls),
    Case("--base-url with port 99999",
         lambda ctx: run_openai(ctx, base_url="http://127.0.0.1:99999/v1"), 2, "99999",
         check=no_calls),
    Case("--timeout 0 against the fake server", lambda ctx: run_openai(ctx, "--timeout", "0"),
         2, "--timeout", check=no_calls),
    Case("vllm:m@not a url", lambda ctx: ["run", "--data", str(ctx.sample), "-s", "spoe", "-b",
                                          "vllm:m@not a url", "--limit", "1", "--no-cache",
                                          "-q", "--out", ctx.out], 2, "not a url",
         check=no_calls),
    Case("sim skill=nan", lambda ctx: run_sample(ctx, backend="sim:default,skill=nan"), 2, "skill"),
    Case("sim skill=2", lambda ctx: run_sample(ctx, backend="sim:default,skill=2"), 2, "skill"),
    # ... and what already held
    Case("an unknown backend", lambda ctx: run_sample(ctx, backend="acme:m"), 2, "unknown backend 'acme'"),
    Case("an unknown strategy", lambda ctx: run_sample(ctx)[:3] + ["-s", "nope"] + run_sample(ctx)[5:], 2, "nope"),
    Case("an unknown sim knob", lambda ctx: run_sample(ctx, backend="sim:default,zap=1"), 2, "zap"),
    Case("--max-cost -1", lambda ctx: run_openai(ctx, "--max-cost", "-1"), 2, "--max-cost",
         check=no_calls),
    Case("--samples 0", lambda ctx: run_sample(ctx, "--samples", "0"), 2, "--samples"),
    Case("--concurrency 0", lambda ctx: run_sample(ctx, "--concurrency", "0"), 2,
         "--concurrency"),
    Case("openai without a key", lambda ctx: ["run", "--data", str(ctx.sample), "-s", "direct",
                                              "-b", "openai:gpt-4o", "-q", "--out", ctx.out],
         2, "OPENAI_API_KEY",
         lambda ctx: ctx.monkeypatch.delenv("OPENAI_API_KEY", raising=False), check=no_calls),
    # --- the file system: --out and --cache-dir ----------------------------------------------
    Case("--out naming a file", lambda ctx: run_sample(ctx, out=str(ctx.tmp / "afile")),
         2, "afile", a_file("afile")),
    Case("--cache-dir naming a file", lambda ctx: run_openai(ctx, "--cache-dir",
                                                            str(ctx.tmp / "afile")),
         2, "afile", a_file("afile")),
    Case("--out a new folder on a read-only file system", out_in("ro"), 2,
         "choose another --out", lambda ctx: (ctx.tmp / "ro").mkdir() or make_readonly(
             ctx, ctx.tmp / "ro")),
    Case("--out a finished run on a read-only file system", out_in("ro"), 2,
         "cannot write in the run directory", a_run_in("ro"), check=journaled(2)),
    Case("--out on a full file system (tmpfs)", out_in("full"), 2, "No space left",
         tmpfs("full")),
    Case("--out fills up mid-run (tmpfs)", out_in("full", limit=20), 2,
         "cannot write the journal", tmpfs("full", keep=24_000),
         check=journaled(1, resumed=20)),
    Case("--out fills up mid-run (ENOSPC injected)", lambda ctx: run_sample(ctx, limit=12), 2,
         "cannot write the journal", lambda ctx: full_after(ctx, 9000),
         check=journaled(1, resumed=12)),
    Case("--cache-dir read-only, a cache in it", cache_dir("c"), 0, "cannot be used",
         a_cache_in("c"), check=nothing_set_aside),
    Case("--cache-dir a read-only empty folder", cache_dir("c"), 0, "cannot be used",
         lambda ctx: (ctx.tmp / "c").mkdir() or make_readonly(ctx, ctx.tmp / "c"),
         check=nothing_set_aside),
    Case("--cache-dir fills up (SQLITE_FULL from a page limit)", cache_dir("c", limit=12), 0,
         "database or disk is full", cache_pages, check=journaled(12)),
    # --- .env (only a provider's lines are read, each alone) ---------------------------------
    Case(".env: a NUL byte in a key", run_sample, 2, ".env:2: OPENAI_API_KEY: a NUL byte",
         env_file(b"# keys\nOPENAI_API_KEY=sk-ab\x00cdefghijklmnop\n")),
    Case(".env: a key's line dotenv cannot parse", run_sample, 2, ".env:1: OPENAI_API_KEY: not NAME=VALUE",
         env_file(b'OPENAI_API_KEY="sk-abcdefghijklmnop" trailing\n')),
    Case(".env: an unclosed quote (once swallowed the next key)", run_sample, 2,
         ".env:1: OPENAI_API_KEY: not NAME=VALUE",
         env_file(b'OPENAI_API_KEY="sk-abcdefghijklmnop\nGEMINI_API_KEY=AIza' + b"k" * 35 + b"\n")),
    Case(".env: a key not UTF-8", run_sample, 2, ".env:1: GEMINI_API_KEY: not UTF-8",
         env_file(b"GEMINI_API_KEY=\xff\xfe\n")),
    Case(".env: lines not ours that dotenv cannot parse (its warning, twice, once)",
         run_sample, 0, "", env_file(b"this is no assignment\n\x00\xff\nFOO='open\n"),
         absent=("could not parse", "dotenv")),
    Case(".env: 3 MB (read up to 1 MiB, said once)", run_sample, 0, "larger than 1 MiB",
         env_file(b"VLLM_API_KEY=from-the-file-123\n" + b"# padding padding\n" * 180_000),
         check=lambda ctx, out, err: expect_once("larger than 1 MiB", err)),
    # --- Director studies ------------------------------------------------------------------
    Case("director run into a SceneFunRI run directory", director, 2,
         "holds a scenefunri run, not a director one",
         both(a_run_in("", readonly=False), design(TINY), snapshot), check=unchanged),
    Case("a design of size axb", director, 2, "d.toml: size: must be WIDTHxHEIGHT",
         design(TINY.replace("512x384", "axb"))),
    Case("a design of size 0x0", director, 2, "size: 0x0: each side must be 64 to 4096",
         design(TINY.replace("512x384", "0x0"))),
    Case("a design of size 60000x60000 (13 GiB)", lambda ctx: director(ctx, scenes=False), 2,
         "each side must be 64 to 4096", design(TINY.replace("512x384", "60000x60000"))),
    Case("a design's size the --scenes do not have", director, 2,
         "holds scenes of 512x384; the design asks 640x480",
         design(TINY.replace("512x384", "640x480"))),
    Case("director run --samples 100000000", lambda ctx: director(ctx, "--samples", "100000000"),
         2, "plans 200,000,000 calls", design(TINY)),
    Case("a design of samples = 1000000000000",
         director, 2, "one invocation runs at most 1,000,000",
         design(TINY.replace("samples = 2", "samples = 1000000000000"))),
    Case("director codes on a garbled items.jsonl", lambda ctx: ["director", "codes", ctx.out],
         2, "items.jsonl:2: not UTF-8", both(a_coded_study, garble("coding/main/items.jsonl", 2))),
    Case("director codes on a coding journal cut into", lambda ctx: ["director", "codes", ctx.out],
         2, "trajectories.jsonl:1:", both(a_coded_study,
                                           garble("coding/main/trajectories.jsonl", 1))),
    Case("director analyze on a truncated journal", lambda ctx: ["director", "analyze", ctx.out],
         0, "holds 3 of the 4 replies the design plans and ends in a torn line",
         both(a_study, cut_journal)),
    # --- secrets in a server's URL ------------------------------------------------------------
    Case("a password in --base-url", lambda ctx: run_openai(ctx, base_url=with_userinfo(ctx)),
         0, "", absent=(SECRET,)),
    Case("a password in two --base-url (the servers' summary)",
         lambda ctx: [a for a in run_openai(ctx, "--base-url", with_userinfo(ctx, "u2"),
                                            "--no-cache", base_url=with_userinfo(ctx))
                      if a != "-q"], 0, "",
         absent=(SECRET,), check=lambda ctx, out, err: expect("servers of fake-model: http://[redacted]@", out)),
    Case("an api_key in OPENAI_BASE_URL's query (the server's 404 echoes it)",
         lambda ctx: run_openai(ctx, base_url="") + ["--no-cache"], 1, "?api_key=[redacted]",
         lambda ctx: ctx.monkeypatch.setenv(
             "OPENAI_BASE_URL", f"{ctx.fp.openai_base_url}?api_key={SECRET}"),
         absent=(SECRET,)),
    Case("--cache-dir on a full file system (tmpfs)", cache_dir("full"), 0, "cannot be",
         tmpfs("full", keep=60_000), check=journaled(2)),
]


ALL = [*CASES, *FILE_CASES, *COMMAND_CASES]


def test_the_set_is_large_and_each_case_named_once():
    names = [c.name for c in ALL]
    assert len(names) == len(set(names)) and len(names) == 229, len(names)  # as the README says


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in ALL])
def test_hostile(case, tmp_path, sample_data, fp, director_scenes, monkeypatch, run_main):
    ctx = Ctx(tmp_path, sample_data, fp, director_scenes, monkeypatch)
    try:
        if case.setup is not None:
            case.setup(ctx)
        code, out, err = run_main(case.argv(ctx))
        assert "Traceback" not in out + err, err
        assert code == case.code, (code, out, err)
        lines = [line for line in err.splitlines() if line.strip()]
        if case.code == 2:
            assert len(lines) == 1, err
            assert case.fragment in lines[0], (case.fragment, lines[0])
            assert "internal error" not in lines[0]
        elif case.code == 1:  # a run whose calls failed: its error line says why
            assert case.fragment in err, err
        elif case.fragment:
            said = [line for line in lines if case.fragment in line]
            assert said and all(line.startswith("warning: ") for line in said), err
        for text in case.absent:
            assert text not in out + err
            for p in tmp_path.rglob("*"):
                if p.is_file():
                    assert text.encode() not in p.read_bytes(), p
        if case.check is not None:
            case.check(ctx, out, err)
    finally:
        ctx.undo()
