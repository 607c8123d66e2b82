"""Helpers shared by the test modules of every folder (a top-level module: pyproject's
``pythonpath = ["tests"]``). Their asserts are rewritten by pytest (see conftest.py)."""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from unseen.commands.director_run import run_study
from unseen.engine.types import Decoding, ImagePart, Message, Request, TextPart
from unseen.evals.director.study.design import load_design

# Async tests share one event loop per module, so that they can share the SDK clients: each
# new client builds TLS contexts (~0.1-0.2 s of CPU), which would dominate a module's time.
module_loop = pytest.mark.asyncio(loop_scope="module")


def image_request(inst, decoding: Decoding | None = None, text: str = "Where is it?") -> Request:
    """One user message: the instance's image, then ``text``."""
    return Request(
        messages=[Message(role="user", parts=[ImagePart(path=inst.image), TextPart(text=text)])],
        decoding=decoding or Decoding(),
    )


async def complete_once(backend, request: Request) -> tuple:
    """``backend.complete(request)``, then close the backend: (reply, seconds the call took)."""
    t0 = time.perf_counter()
    try:
        reply = await backend.complete(request)
    finally:
        elapsed = time.perf_counter() - t0
        await backend.aclose()
    return reply, elapsed


def read_journal(run_dir: Path) -> list[dict]:
    lines = (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def hand_dist(pred: list[float], gt: list[float], w: float, h: float) -> float:
    """Mean normalised distance between the four corners, computed by hand."""
    total = 0.0
    for xp, xg in ((pred[0], gt[0]), (pred[2], gt[2])):
        for yp, yg in ((pred[1], gt[1]), (pred[3], gt[3])):
            total += math.sqrt(((xp - xg) / w) ** 2 + ((yp - yg) / h) ** 2)
    return total / 4


def hand_iou(a: list[float], b: list[float]) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def unused_port() -> int:
    """A port on 127.0.0.1 that nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_secret_not_on_disk(secret: str, *dirs: Path) -> None:
    """Every file under ``dirs`` (which hold a journal and a reply cache) lacks ``secret``."""
    files = [p for d in dirs for p in d.rglob("*") if p.is_file()]
    assert any(p.name == "trajectories.jsonl" for p in files)
    assert any(p.name.startswith("replies.sqlite") for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), p


def assert_failed(reply, kind: str, *, attempts: int, status: int | None = None) -> None:
    """``reply`` failed (``not reply.ok``) with an error of ``kind`` after ``attempts`` tries,
    and with HTTP ``status`` where one is given."""
    assert reply.error is not None
    assert reply.error.kind == kind
    if status is not None:
        assert reply.error.status == status
    assert reply.error.attempts == attempts


def _toml(value) -> str:
    """One TOML value: a string, a whole number, a boolean or a list of strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def tiny_design(name: str = "tiny", *, samples: int = 1, seed: int = 1, n: int = 2,
                batches: Mapping[str, Sequence[str] | Mapping[str, object]] | None = None,
                comparisons: Sequence[Mapping[str, object]] = (),
                description: str | None = None, size: str = "512x384") -> str:
    """The TOML text of a tiny Director study design over ``n`` main-set scenes at ``size``
    (the ``director_scenes`` fixture renders six at 512x384).

    ``batches`` maps each batch's name to its conditions, or to its keys in order
    (``{"c": {"models": ["gpt-x"], "conditions": ["move"]}}``); the default is one batch
    ``b1`` of ``move``. Each comparison is its keys in order (``batch``, ``base``,
    ``variant``, ...). Keys are written in the order given, one a line, so a test can find a
    value's line (``tiny_design()`` has ``name`` on line 1)."""
    lines = [f"name = {_toml(name)}"]
    if description is not None:
        lines.append(f"description = {_toml(description)}")
    lines += [f"samples = {samples}", f"seed = {seed}", f"size = {_toml(size)}",
              "[sets.main]", f"n = {n}"]
    for batch, spec in (batches if batches is not None else {"b1": ["move"]}).items():
        keys = spec if isinstance(spec, Mapping) else {"conditions": spec}
        lines += ["[[batch]]", f"name = {_toml(batch)}"]
        lines += [f"{k} = {_toml(v)}" for k, v in keys.items()]
    for comparison in comparisons:
        lines.append("[[comparison]]")
        lines += [f"{k} = {_toml(v)}" for k, v in comparison.items()]
    return "\n".join(lines) + "\n"


def run_tiny_study(folder: Path, design_text: str, backends: list[str], scenes: Path,
                   **kwargs) -> tuple[Path, Path]:
    """Write ``design_text`` to ``folder/tiny.toml`` and run it over the shared scenes:
    (design file, run directory)."""
    design = folder / "tiny.toml"
    design.write_text(design_text, encoding="utf-8")
    run_dir = folder / "run"
    run_study(load_design(design), backends, run_dir, scenes=scenes, progress=False, **kwargs)
    return design, run_dir


def key_answer(s, truth, rng) -> str:
    """A stand-in Director respondent for the sim backend (a ``director`` sim task, given
    the request's ``DirectorTruth``): the right report, the right count, a random block
    (tests that must not depend on the simulator's respondent model)."""
    key = truth.key
    d = {}
    for f in truth.fields:
        d[f] = {"visible": key.visible_digits, "known": key.visible_digits,
                "count": len(key.digits)}.get(f, rng.choice(key.digits))
    return json.dumps(d)


def chromium() -> str:
    """Debian's chromium, for the browser checks; the test is skipped, saying why, without."""
    import shutil

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Debian's chromium is not installed: the browser check needs it "
                    "(apt-get install chromium); the rest was checked without it")
    return exe


def hostile_first_step(run_dir: Path, text: str, *, prompt: bool = False) -> dict:
    """Make the journal's first record's first reply ``text`` (and its prompt, with
    ``prompt``), as a model could have written it; returns the record."""
    journal = run_dir / "trajectories.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[0])
    rec["steps"][0]["reply"]["text"] = text
    if prompt:
        rec["steps"][0]["prompt"] = text
    lines[0] = json.dumps(rec)
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rec


async def first_records(run_dir: Path, tries: int = 400) -> list:
    """The heads of a run being written, once it has run.json and a first record (bounded:
    ``tries`` looks 50 ms apart)."""
    import asyncio

    from unseen.engine.rundir import RunDir

    for _ in range(tries):
        if (run_dir / "run.json").is_file() and (run_dir / "trajectories.jsonl").is_file():
            heads = RunDir(run_dir).heads()
            if heads:
                return heads
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_dir}: no record after {tries * 0.05:.0f} s")


def slow_sim_run(data: Path, out: Path, strategies: Sequence[str] = ("direct",), *,
                 limit: int = 8, delay_s: float = 0.3):
    """A sim run started as a task in the running loop, one call at a time ``delay_s``
    apart, so a test can watch it grow."""
    import asyncio

    from unseen.api import run_async

    return asyncio.create_task(run_async(data, list(strategies), [f"sim:default,delay_s={delay_s}"],
                                         out=out, limit=limit, concurrency=1, cache=False,
                                         progress=False))
