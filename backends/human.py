"""``human``: a person answers each request on a local page, as a model would get it.

Spec: ``human[:NAME][,port=N]``, e.g. ``human:ann`` or ``human:ann,port=8765``. NAME (the
person; default ``person``) is the model name in every table, where the rows are marked
``(human)``. The runner attaches the backend to the run (:meth:`Human.attach`) before the
first request: the page starts on 127.0.0.1 (any free port unless ``port`` says which) and
one line with its address goes to stderr. Several people at once are several backends
(``-b human:ann -b human:ben``), each with its own page, port and token.

The page shows what the model would get, the image with the step's overlay and the prompt,
with controls chosen from ``Request.answer`` (never from ``Request.oracle``, which holds the
answer key: this backend does not read it). The answer comes back in the convention the
strategy reads:

- ``box``: the person drags a box on the image; the reply is ``{"box": [x1, y1, x2, y2]}``
  in this backend's ``box_format``, ``pixel`` unless ``--box-format`` says otherwise, of
  the answer's frame (the image as shown: a zoomed-in crop's own pixels).
- ``choice``: one button per label (SPoE's A and B; this backend takes ``decoding.choices``
  like constrained decoding); the reply is the label.
- ``cells``: toggles; the reply is ``{"eliminate": [n, ...]}``, at least one cell kept.
- ``fields``: one input per field (a Director turn); the reply is the JSON object.
- ``text``: free text; also what a request without ``answer`` gets, unless it has
  ``decoding.choices``.
- "can't tell": a reply with the typed error ``skipped``, so the step and its trajectory
  are unanswered and scored as such; never a text that could be scored as an answer.

People are slow: no timeout and no retries (``backends.reliable``), one request on screen at
a time (``concurrency`` 1), one item at a time with its steps in a row (``serial``: the
runner queues a person's trajectories), and ``Reply.latency_s`` is the person's seconds
from the request first on screen to the answer. The first answer to a request wins; a reload or a second tab
gets the next one. Answers are appended to ``RUN_DIR/human/NAME.jsonl`` (keyed by
``engine.cache.request_key``, whatever ``--no-cache`` says), and a request already answered
there is answered from it, so a stopped run, resumed, asks only what is unanswered. Human
replies never go into the reply cache: another run asks the person again.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine.backend import Capabilities
from ..engine.box import Box, BoxError
from ..engine.cache import request_key
from ..engine.images import part_bytes
from ..engine.runner import CURRENT_KEY
from ..engine.types import AnswerSpec, ErrorInfo, ImagePart, Reply, Request
from .base import BackendConfigError, BaseBackend, provider

DEFAULT_NAME = "person"
LOG_DIR = "human"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_INT = re.compile(r"[+-]?[0-9]+")
_KEYS = "123456789abcdefghijklmnopqrstuvwxyz"


class AnswerError(ValueError):
    """An answer that does not fit its request (HTTP 400, with this message)."""


@dataclass
class Pending:
    """A request waiting for the person."""

    id: str
    request: Request
    key: str
    spec: AnswerSpec
    item: int  # which of the run's items (trajectories) for this person, 1-based
    step: int  # which request of that item, 1-based
    future: asyncio.Future
    shown_at: float | None = None
    images: list[ImagePart] = field(default_factory=list)


def answer_spec(request: Request) -> AnswerSpec:
    """What the request asks for: ``Request.answer``, else a choice among
    ``decoding.choices``, else free text."""
    if request.answer is not None:
        return request.answer
    if request.decoding.choices:
        return AnswerSpec(kind="choice", choices=list(request.decoding.choices))
    return AnswerSpec(kind="text")


def choice_keys(labels: list[str]) -> list[str]:
    """The key that picks each label: a label of one character is its own key; longer
    labels that are numbers are typed as numbers; others get 1-9 then letters."""
    if all(len(x) == 1 for x in labels) or all(x.isdigit() for x in labels):
        return [x.lower() for x in labels]
    return [_KEYS[i] if i < len(_KEYS) else "" for i in range(len(labels))]


EDGE_PX = 1.0  # how far past the image's edge a box may reach (and is clipped back)


def _ints(text: Any, what: str) -> list[int]:
    if isinstance(text, list):
        items = [str(v) for v in text]
    elif isinstance(text, str):
        items = [t for t in re.split(r"[\s,;]+", text.strip()) if t]
    else:
        raise AnswerError(f"{what}: numbers separated by commas")
    if not all(_INT.fullmatch(t) for t in items):
        raise AnswerError(f"{what}: whole numbers separated by commas, got {text!r}")
    return [int(t) for t in items]


def reply_text(spec: AnswerSpec, body: Any, box_format: str) -> str:
    """The reply a strategy reads, from the page's answer ``body`` (see the module
    docstring); AnswerError when the answer does not fit the request."""
    if not isinstance(body, dict):
        raise AnswerError("the answer must be a JSON object")
    if spec.kind == "box":
        values = body.get("box")
        if not (isinstance(values, list) and len(values) == 4 and all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                for v in values)):
            raise AnswerError("draw a box on the image")
        w, h = spec.width or 0, spec.height or 0
        x1, y1, x2, y2 = (float(v) for v in values)
        if x2 <= x1 or y2 <= y1:
            raise AnswerError("the box is empty: drag on the image to draw it")
        # the page keeps a drag inside the image: a box past its edge by more than the
        # page's rounding (a pixel) was not drawn on it, and is refused, not clipped
        if w and h and (min(x1, y1) < -EDGE_PX or x2 > w + EDGE_PX or y2 > h + EDGE_PX):
            raise AnswerError(f"the box {values} is not inside the {w}x{h} image")
        try:
            box = Box.of([x1, y1, x2, y2]).clip(w, h)
        except (BoxError, ValueError):
            raise AnswerError(f"the box {values} is not inside the {w}x{h} image") from None
        # a tenth of a pixel, or of a thousandth; four places of a unit box's fraction
        places = 4 if box_format == "unit" else 1
        out = [round(v, places) for v in box.to_convention(box_format, w, h)]
        try:  # read back as the strategy will: a sliver left by clipping is empty once written
            Box.from_convention(out, box_format, w, h)
        except (BoxError, ValueError):
            raise AnswerError("the box is empty: drag on the image to draw it") from None
        return json.dumps({"box": out})
    if spec.kind == "choice":
        choice = body.get("choice")
        if choice not in spec.choices:
            raise AnswerError(f"pick one of {', '.join(spec.choices)}")
        return str(choice)
    if spec.kind == "cells":
        picked = body.get("cells")
        if not isinstance(picked, list) or not all(p in spec.choices for p in picked):
            raise AnswerError(f"pick cells among {', '.join(spec.choices)}")
        picked = sorted(set(picked), key=spec.choices.index)
        if len(picked) == len(spec.choices):
            raise AnswerError("keep at least one cell")
        return json.dumps({"eliminate": [int(p) if p.isdigit() else p for p in picked]})
    if spec.kind == "fields":
        given = body.get("fields")
        if not isinstance(given, dict):
            raise AnswerError("fill in the fields")
        fields: dict[str, Any] = {}
        for name, kind in spec.fields.items():
            value = given.get(name)
            if kind == "int":
                if isinstance(value, int) and not isinstance(value, bool):
                    value = str(value)
                if not (isinstance(value, str) and _INT.fullmatch(value.strip())):
                    raise AnswerError(f"{name}: one whole number")
                fields[name] = int(value.strip())
            else:
                fields[name] = _ints(value if value is not None else "", name)
        return json.dumps(fields)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise AnswerError("write an answer")
    return text


class Human(BaseBackend):
    """A person behind a local page (see the module docstring)."""

    provider = "human"
    cacheable = False  # the person's own log resumes a run; another run asks again
    interactive = True  # no timeout, no retries (backends.reliable)
    concurrency = 1  # one request on screen at a time
    serial = True  # one item at a time, its steps in a row (engine.runner)
    capabilities = Capabilities(choices=True, multi_turn=True)

    def __init__(self, name: str = DEFAULT_NAME, *, port: int = 0,
                 box_format: str | None = None,
                 announce: Callable[[str], None] | None = None):
        if not _NAME.fullmatch(name):
            raise BackendConfigError(
                f"a person's name is letters, digits, '.', '_' or '-' (at most 64), got "
                f"{name!r}: e.g. human:ann")
        # the spec leaves the port out: a resume on another port is the same person
        super().__init__(name, box_format=box_format or "pixel", spec=f"human:{name}")
        self.port = port
        self.announce = announce or _to_stderr
        self.page: Any = None  # human_web.PageServer once attached
        self.todo = 0
        self.answered = 0  # answers taken on the page during this run
        self.skipped = 0  # of those, "can't tell": counted apart, as they score unanswered
        self._pending: dict[str, Pending] = {}
        self._done_ids: set[str] = set()
        self._items: dict[str | None, list[int]] = {}  # trajectory key -> [item, requests]
        self._log: dict[str, Reply] = {}
        self._log_path: Path | None = None
        self._changed = asyncio.Event()
        self._closed = False

    def describe(self) -> dict[str, Any]:
        # never the page's address: its token is a secret
        return {**super().describe(), "interactive": True}

    # --- the run -----------------------------------------------------------------------

    async def attach(self, run_dir: Path | None, todo: int) -> None:
        """Read the person's answer log in ``run_dir`` and start the page (once)."""
        self.todo = todo
        if run_dir is not None:
            self._log_path = Path(run_dir) / LOG_DIR / f"{self.model}.jsonl"
            self._log = read_log(self._log_path)
        if self.page is None and todo:
            from .human_web import PageError, PageServer

            self.page = PageServer(self, self.port)
            try:
                url = await self.page.start()
            except PageError as exc:
                self.page = None
                raise BackendConfigError(f"{self.spec}: {exc}") from None
            self.port = self.page.port
            self.announce(f"{self.model} (human): answer {todo or 'the'} items at {url}")

    async def complete(self, request: Request) -> Reply:
        key = request_key(self.provider, self.model, request)
        item = self._item(CURRENT_KEY.get())
        known = self._log.get(key)
        if known is not None:  # answered before this run stopped
            return known.model_copy(update={"cached": True})
        if self.page is None:  # called outside a runner: serve the page now
            await self.attach(None, 1)
        images = [p for m in request.messages for p in m.parts if isinstance(p, ImagePart)]
        pending = Pending(id=uuid.uuid4().hex[:12], request=request, key=key,
                          spec=answer_spec(request), item=item[0], step=item[1],
                          future=asyncio.get_running_loop().create_future(), images=images)
        self._pending[pending.id] = pending
        self._wake()
        try:
            return await pending.future
        finally:
            self._pending.pop(pending.id, None)

    def _item(self, key: str | None) -> list[int]:
        """[which item of the run, which request of it]: counted as requests arrive."""
        if key not in self._items:
            self._items[key] = [len(self._items) + 1, 0]
        self._items[key][1] += 1
        return self._items[key]

    async def aclose(self) -> None:
        self._closed = True
        self._wake()
        if self.page is not None:
            await asyncio.sleep(0.05)  # long polls answer "done" before the page stops
            await self.page.stop()
            self.page = None

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # --- the page's source (backends.human_web.Source) ---------------------------------

    async def next_item(self, wait: float) -> dict[str, Any]:
        deadline = time.monotonic() + wait
        while True:
            if self._closed:
                return {"done": True, "who": self.model, "answered": self.answered,
                        "skipped": self.skipped}
            if self._pending:
                return self._show(next(iter(self._pending.values())))
            left = deadline - time.monotonic()
            if left <= 0:
                return {"waiting": True, "who": self.model, "answered": self.answered,
                        "skipped": self.skipped, "of": self.todo}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    def _show(self, p: Pending) -> dict[str, Any]:
        if p.shown_at is None:
            p.shown_at = time.monotonic()
        spec = p.spec
        msgs = p.request.messages
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        history = [{"role": m.role, "text": m.text} for m in msgs[:last_user] if m.text]
        item: dict[str, Any] = {
            "id": p.id, "mode": "answer", "who": self.model, "kind": spec.kind,
            "prompt": msgs[last_user].text if last_user >= 0 else "",
            "history": history,
            "image": f"api/image/{p.id}/{len(p.images) - 1}" if p.images else None,
            "progress": {"n": p.item, "of": max(self.todo, p.item), "step": p.step},
        }
        if spec.kind == "box":
            if spec.width is None or spec.height is None:
                p.spec = spec = spec.model_copy(update=dict(zip(
                    ("width", "height"), image_size(p.images[-1]), strict=True)))
            item["frame"] = [spec.width, spec.height]
        if spec.kind in ("choice", "cells"):
            item["choices"] = [{"label": c, "text": c, "key": k}
                               for c, k in zip(spec.choices, choice_keys(spec.choices),
                                               strict=True)]
        if spec.kind == "fields":
            item["fields"] = [{"name": n, "type": t} for n, t in spec.fields.items()]
        return item

    def image_part(self, item_id: str, index: int) -> ImagePart | None:
        p = self._pending.get(item_id)
        if p is None or not 0 <= index < len(p.images):
            return None
        return p.images[index]

    def answer(self, item_id: str, body: Any) -> tuple[int, dict[str, Any]]:
        p = self._pending.get(item_id)
        if p is None or p.future.done():
            if item_id in self._done_ids:
                return 409, {"error": "already answered"}
            return 404, {"error": "no such request"}
        seconds = time.monotonic() - (p.shown_at or time.monotonic())
        if isinstance(body, dict) and body.get("skip") is True:
            reply = Reply(latency_s=seconds, finish_reason="skipped", error=ErrorInfo(
                kind="skipped", message=f"{self.model} could not tell"))
        else:
            try:
                text = reply_text(p.spec, body, self.box_format or "pixel")
            except AnswerError as exc:
                return 400, {"error": str(exc)}
            reply = Reply(text=text, latency_s=seconds, finish_reason="person")
        self._done_ids.add(item_id)
        self._pending.pop(item_id, None)
        self._record(p.key, reply)
        if reply.error is not None:
            self.skipped += 1
        else:
            self.answered += 1
        p.future.set_result(reply)
        self._wake()
        return 200, {"ok": True}

    def _record(self, key: str, reply: Reply) -> None:
        self._log.setdefault(key, reply)
        if self._log_path is None:
            return
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"key": key, "person": self.model,
                           "at": datetime.now(UTC).isoformat(timespec="seconds"),
                           "reply": reply.model_dump(mode="json")})
        with self._log_path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def read_log(path: Path) -> dict[str, Reply]:
    """A person's answers by request key; the first answer to a key wins, and a line cut
    short by a stop (the last one) is left out."""
    out: dict[str, Reply] = {}
    if not path.is_file():
        return out
    for line in path.read_bytes().splitlines():
        try:
            rec = json.loads(line)  # bytes that are not UTF-8 JSON: a damaged line, left out
            key, reply = rec["key"], Reply.model_validate(rec["reply"])
        except (ValueError, KeyError, TypeError):
            continue
        out.setdefault(key, reply)
    return out


def image_size(part: ImagePart) -> tuple[int, int]:
    """The size of an image as the request shows it (its overlay, a crop, applied)."""
    from PIL import Image

    with Image.open(io.BytesIO(part_bytes(part)[0])) as im:
        return im.size


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def parse_human_spec(target: str) -> tuple[str, int]:
    """``NAME[,port=N]`` (or ``,port=N``) → (name, port)."""
    name, *options = [p.strip() for p in target.split(",")]
    port = 0
    for opt in options:
        key, eq, value = opt.partition("=")
        if key.strip() != "port" or not eq:
            raise BackendConfigError(f"human takes port=N, got {opt!r}: human[:NAME][,port=N]")
        try:
            port = int(value)
        except ValueError:
            port = -1
        if not 0 <= port <= 65535:
            raise BackendConfigError(f"port must be a number 0-65535, got {value!r}")
    return name or DEFAULT_NAME, port


@provider("human", "human[:NAME][,port=N]  (a person answers on a local page; rows marked (human))")
def _human(target: str, *, spec: str, box_format: str | None = None, **_: Any) -> Human:
    name, port = parse_human_spec(target)
    return Human(name, port=port, box_format=box_format)


