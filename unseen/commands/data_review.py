"""``unseen data review BUILD``: the human page in review mode (paper §3.4).

Each undecided candidate of a build folder is shown with its box drawn on the image and its
instruction; the person accepts it or rejects it for one of the paper's reasons (duplicate,
not enough visual evidence, several plausible regions, other with a note). Every decision is
written at once (``evals.scenefunri.data.review``): kept by instance id in ``review.jsonl``, the
rejected left out of ``instances.jsonl``. Stopped and started again, the review shows only
what is undecided.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import ValidationError

from ..backends.human_web import PageServer
from ..engine.types import ImagePart
from ..evals.scenefunri.data.review import REASONS, Build, Decision, now

KEYS = {"accept": "a", "duplicate": "d", "evidence": "e", "ambiguous": "p", "other": "o"}


class Review:
    """The page's source (``backends.human_web.Source``) for one build folder."""

    def __init__(self, build: Build, who: str = "reviewer"):
        self.build = build
        self.who = who
        self.decided = 0  # in this session
        self.seconds: list[float] = []
        self._shown: dict[str, float] = {}
        self._todo = len(build.undecided())
        self.finished = asyncio.Event()

    def _item(self, cand: dict[str, Any]) -> dict[str, Any]:
        iid = cand["id"]
        self._shown.setdefault(iid, time.monotonic())
        entry = self.build.entries.get(iid, {})
        flags = entry.get("reasons") or []
        prompt = (f"Task: {cand.get('instruction', '')}\n\nThe outlined box is where the build "
                  "says the target is, hidden from view. Is this a good instance: can a "
                  "person infer from what is visible where the hidden target is, and is "
                  "that box the one plausible place?")
        if flags:
            prompt += "\n\nThe build flagged: " + "; ".join(map(str, flags))
        return {
            "id": iid, "mode": "review", "who": self.who, "title": "unseen review",
            "kind": "choice", "prompt": prompt, "history": [], "skip": False,
            "image": f"api/image/{iid}/0",
            # the box is drawn by the page as an outline, so a small target stays visible
            "frame": list(self._size(cand)), "marks": [cand["box"]],
            "choices": [{"label": "accept", "text": "Accept", "key": "a"}] + [
                {"label": k, "text": f"Reject: {v}", "key": KEYS[k]} for k, v in REASONS.items()],
            "note": {"label": "Note (needed for other)", "required_for": ["other"]},
            "progress": {"n": self.decided + 1, "of": self._todo, "step": 1},
        }

    def _size(self, cand: dict[str, Any]) -> tuple[int, int]:
        with Image.open(self.build.folder / cand["image"]) as im:
            return im.size

    async def next_item(self, wait: float) -> dict[str, Any]:
        todo = self.build.undecided()
        if not todo:
            self.finished.set()
            return {"done": True, "who": self.who, "answered": self.decided,
                    "title": "unseen review"}
        return self._item(todo[0])

    def image_part(self, item_id: str, index: int) -> ImagePart | None:
        cand = next((c for c in self.build.candidates() if c["id"] == item_id), None)
        if cand is None or index != 0:
            return None
        path = (self.build.folder / cand["image"]).resolve()
        if self.build.folder.resolve() not in path.parents or not path.is_file():
            return None  # only images of the build folder
        return ImagePart(path=str(path))

    def answer(self, item_id: str, body: Any) -> tuple[int, dict[str, Any]]:
        if all(c["id"] != item_id for c in self.build.candidates()):
            return 404, {"error": "no such instance"}
        if self.build.decision(item_id) is not None:
            return 409, {"error": "already answered"}
        if not isinstance(body, dict) or body.get("choice") not in ("accept", *REASONS):
            return 400, {"error": "accept, or reject with one of the reasons"}
        choice, note = body["choice"], body.get("note") or ""
        try:
            decision = Decision(verdict="accept" if choice == "accept" else "reject",
                                reason=None if choice == "accept" else choice,
                                note=str(note)[:500], by=self.who, at=now())
        except ValidationError as exc:
            return 400, {"error": exc.errors()[0]["msg"].removeprefix("Value error, ")}
        self.build.decide(item_id, decision)
        self.decided += 1
        self.seconds.append(time.monotonic() - self._shown.pop(item_id, time.monotonic()))
        if not self.build.undecided():
            self.finished.set()
        return 200, {"ok": True}


async def serve_review(folder: str | Path, *, who: str = "reviewer", port: int = 0,
                       announce: Callable[[str], None] = print) -> Review:
    """Serve the review page until every candidate is decided (or the task is cancelled)."""
    review = Review(Build(folder), who)
    if not review.build.undecided():
        return review
    page = PageServer(review, port)
    url = await page.start()
    announce(f"{who} (review): decide {review._todo} candidates at {url}")
    try:
        await review.finished.wait()
        await asyncio.sleep(0.5)  # the page's last poll gets "done" before the page stops
    finally:
        await page.stop()
    return review
