"""What the hostile set (``tests/cli/test_hostile_inputs.py``) builds its cases from: a
:class:`Ctx` with the case's folder and the shared fixtures, and setups that write a hostile
dataset, design, ``.env`` or run directory, or put the machine in a state (a read-only
folder, a full file system).

A read-only folder is a read-only bind mount where the tests run as root (root writes
through ``chmod``), else ``chmod 0555``; a full file system is a real 256 kB tmpfs (root
only, else the case is skipped) or SQLite's own ``database or disk is full`` from a page
limit (``PRAGMA max_page_count``), which runs everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

KEY = "sk-hostile-0123456789abcdef"
SECRET = "PW-hostile-s3cr3t-9876"  # a password inside a base URL


@dataclass
class Ctx:
    """One case's world: its own folder, the sample data, the fake provider, the scenes."""

    tmp: Path
    sample: Path
    fp: Any
    scenes: Path
    monkeypatch: pytest.MonkeyPatch
    mounts: list[Path] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def out(self) -> str:
        return str(self.tmp / "r")

    @property
    def data(self) -> str:
        return str(self.tmp / "ds")

    def undo(self) -> None:
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(m)], check=False, capture_output=True)
        for p in self.tmp.rglob("*"):  # chmod'ed folders back, so pytest can remove them
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)


Setup = Callable[[Ctx], None]


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Ctx], list[str]]
    code: int
    fragment: str
    setup: Setup | None = None
    absent: tuple[str, ...] = ()
    check: Callable[[Ctx, str, str], None] | None = None
    marks: tuple = field(default=())


def first_record(ctx: Ctx) -> dict[str, Any]:
    return json.loads((ctx.sample / "instances.jsonl").read_text().splitlines()[0])


def dataset(line: str | dict | Callable[[dict], Any], prep: Setup | None = None) -> Setup:
    """A one-instance dataset in ``ctx.data`` with the sample's first image; ``line`` is the
    raw line, an object, or a function of the first record (its return value, or the record
    it changed in place, is the line)."""

    def setup(ctx: Ctx) -> None:
        rec = first_record(ctx)
        ds = Path(ctx.data)
        (ds / "images").mkdir(parents=True)
        shutil.copy(ctx.sample / rec["image"], ds / rec["image"])
        if callable(line):
            got = line(rec)
            text = got if isinstance(got, str) else json.dumps(got if got is not None else rec)
        else:
            text = line if isinstance(line, str) else json.dumps(line)
        if prep is not None:
            prep(ctx)
        (ds / "instances.jsonl").write_bytes(text.encode("utf-8", "surrogatepass") + b"\n")

    return setup


def changed(**fields: Any) -> Callable[[dict], dict]:
    return lambda rec: {**rec, **fields}


def run_data(ctx: Ctx, *extra: str) -> list[str]:
    return ["run", "--data", ctx.data, "-s", "direct", "-b", "sim", "--no-cache", "-q",
            "--out", ctx.out, *extra]


def run_sample(ctx: Ctx, *extra: str, limit: int = 2, backend: str = "sim",
               out: str | None = None) -> list[str]:
    return ["run", "--data", str(ctx.sample), "-s", "direct", "-b", backend, "--limit",
            str(limit), "--no-cache", "-q", "--out", out or ctx.out, *extra]


def run_openai(ctx: Ctx, *extra: str, base_url: str | None = None, limit: int = 2,
               out: str | None = None) -> list[str]:
    """Instances against the fake OpenAI server, the key in the environment; ``base_url=""``
    leaves the server to ``OPENAI_BASE_URL``."""
    ctx.monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = [] if base_url == "" else ["--base-url", base_url or ctx.fp.openai_base_url]
    return ["run", "--data", str(ctx.sample), "-s", "direct", "-b",
            "openai:fake-model,box_format=norm1000", *url, "--limit", str(limit),
            "--concurrency", "1", "-q", "--out", out or ctx.out, *extra]


# --- the machine's state ----------------------------------------------------------------------


def make_readonly(ctx: Ctx, folder: Path) -> None:
    """``folder`` (and what it holds) read-only for this process."""
    if os.geteuid() != 0:
        for p in [folder, *folder.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return
    for cmd in (["mount", "--bind", str(folder), str(folder)],
                ["mount", "-o", "remount,ro,bind", str(folder)]):
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            pytest.skip("root without mount: no read-only folder to test on")
        if cmd[1] == "--bind":
            ctx.mounts.append(folder)


def tiny_fs(ctx: Ctx, folder: Path, size: str = "256k") -> None:
    """A real small tmpfs at ``folder`` (root only: the case is skipped otherwise)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True).returncode != 0:
        pytest.skip("a real full file system needs root (mount -t tmpfs)")
    ctx.mounts.append(folder)


def fill(folder: Path) -> None:
    """Fill the file system under ``folder`` to the last byte."""
    with open(folder / "filler", "ab", buffering=0) as fh:
        try:
            while fh.write(b"\0" * 4096):
                pass
        except OSError:  # ENOSPC: full
            pass


def free(folder: Path, keep: int) -> None:
    """Fill the file system under ``folder``, then give back ``keep`` bytes."""
    fill(folder)
    filler = folder / "filler"
    os.truncate(filler, max(0, filler.stat().st_size - keep))


def full_after(ctx: Ctx, budget: int) -> None:
    """The journal's file system fills up after ``budget`` bytes: the write that passes it
    writes what fits and fails with ENOSPC, as a full disk does."""
    import errno

    from unseen.engine import journal

    class Full:
        def __init__(self, fh: Any):
            self.fh, self.left = fh, budget

        def write(self, data: Any) -> int:
            if self.left <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.fh.name)
            n = self.fh.write(data[: self.left])
            self.left -= n
            return n

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fh, name)

    real = journal.JournalWriter.__init__

    def init(self: Any, path: Path) -> None:
        real(self, path)
        self._fh = Full(self._fh)

    ctx.monkeypatch.setattr(journal.JournalWriter, "__init__", init)


def cache_pages(ctx: Ctx, pages: int = 3) -> None:
    """Every reply cache this case opens holds at most ``pages`` pages: SQLite itself then
    answers a write with ``database or disk is full`` (SQLITE_FULL), as on a full disk."""
    from unseen.engine import cache

    real = cache.ReplyCache._connect

    def limited(self: Any) -> sqlite3.Connection:
        db = real(self)
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    ctx.monkeypatch.setattr(cache.ReplyCache, "_connect", limited)


# --- .env files ---------------------------------------------------------------------------------


def env_file(content: bytes) -> Setup:
    """``content`` as ``.env`` in the case's folder, which becomes the working directory; the
    provider variables start unset (and are unset again after the case)."""

    def setup(ctx: Ctx) -> None:
        from unseen.engine.envfile import PROVIDER_VARS

        (ctx.tmp / ".env").write_bytes(content)
        for name in (*PROVIDER_VARS, "ACME_API_KEY"):
            ctx.monkeypatch.delenv(name, raising=False)
        ctx.monkeypatch.chdir(ctx.tmp)

    return setup


# --- Director studies -------------------------------------------------------------------------


def design(text: str, name: str = "d.toml") -> Setup:
    def setup(ctx: Ctx) -> None:
        (ctx.tmp / name).write_text(text, encoding="utf-8")

    return setup


def director(ctx: Ctx, *extra: str, design_file: str = "d.toml", scenes: bool = True) -> list[str]:
    return ["director", "run", str(ctx.tmp / design_file), "-b", "sim", "-q", "--no-cache",
            "--out", ctx.out, *(["--scenes", str(ctx.scenes)] if scenes else []), *extra]


def both(*setups: Setup) -> Setup:
    def setup(ctx: Ctx) -> None:
        for s in setups:
            s(ctx)

    return setup


TINY = ('name = "tiny"\nsamples = 2\nseed = 1\nsize = "512x384"\n[sets.main]\nn = 2\n'
        '[[batch]]\nname = "b1"\nconditions = ["move"]\n')  # 4 calls (helpers.tiny_design)


def a_study(ctx: Ctx) -> None:
    """The tiny design (``d.toml``) run with the simulator into ``ctx.out``: 4 replies."""
    from unseen.commands.director_run import run_study
    from unseen.evals.director.study.design import load_design

    (ctx.tmp / "d.toml").write_text(TINY, encoding="utf-8")
    run_study(load_design(ctx.tmp / "d.toml"), ["sim"], Path(ctx.out), scenes=ctx.scenes,
              progress=False)


def cut_journal(ctx: Ctx) -> None:
    """The journal of ``ctx.out`` cut inside its last record (a truncated copy)."""
    path = Path(ctx.out) / "trajectories.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 40])


def snapshot(ctx: Ctx) -> None:
    """Each file of ``ctx.out`` and its bytes, kept to compare after the case."""
    ctx.extra["before"] = {p: p.read_bytes() for p in Path(ctx.out).rglob("*") if p.is_file()}


def unchanged(ctx: Ctx, out: str, err: str) -> None:
    after = {p: p.read_bytes() for p in Path(ctx.out).rglob("*") if p.is_file()}
    assert after == ctx.extra["before"]


def a_coded_study(ctx: Ctx) -> None:
    """:func:`a_study`, its traces coded by the simulator's coder (``coding/main/``)."""
    from unseen.commands.director_code import run_coding

    a_study(ctx)
    run_coding(ctx.out, "sim:default,dir_coder_error=0", batch_size=2, tests=1, repeats=1,
               cache=False, progress=False)


def garble(name: str, line: int = 1) -> Setup:
    """A byte that is not UTF-8 in line ``line`` of ``ctx.out/name``."""

    def setup(ctx: Ctx) -> None:
        path = Path(ctx.out) / name
        lines = path.read_bytes().split(b"\n")
        lines[line - 1] = lines[line - 1][:5] + b"\xff\xfe" + lines[line - 1][5:]
        path.write_bytes(b"\n".join(lines))

    return setup


# --- shared by the tables ----------------------------------------------------------------------


def a_file(name: str) -> Setup:
    return lambda ctx: (ctx.tmp / name).write_text("x\n")


def a_run_in(sub: str, readonly: bool = True) -> Setup:
    """A finished run of two trajectories in ``tmp/sub/r``, its folder then read-only."""

    def setup(ctx: Ctx) -> None:
        from unseen.api import run

        run(ctx.sample, ["direct"], ["sim"], limit=2, out=ctx.tmp / sub / "r", cache=False,
            progress=False)
        if readonly:
            make_readonly(ctx, ctx.tmp / sub)

    return setup


def expect(text: str, where: str) -> None:
    assert text in where, where


def expect_once(text: str, where: str) -> None:
    assert where.count(text) == 1, where


def no_calls(ctx: Ctx, out: str, err: str) -> None:
    assert not ctx.fp.requests
