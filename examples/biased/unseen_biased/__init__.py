"""``biased:SIDE``: an example backend plug-in, a respondent with a fixed position bias and
no model. It reads only what any backend gets (the request's prompt and its ``answer``, what
kind of answer it asks), never the truth, so it stands where a model would: how far does a
strategy get with a chooser that always favours one side?

- a choice request (``A``/``B``, grid cells, quadrants): the first label (``first``) or the
  last (``last``);
- a box request: the box of a quarter of the frame in the corner the side names
  (``first``: top left, ``last``: bottom right), in pixels of the frame the request shows;
- anything else: a typed ``client`` error, never a sentinel that could be scored.

Spec: ``biased:first`` (the default) or ``biased:last``. See docs/writing-a-backend.md.
"""

from __future__ import annotations

import json
from typing import Any

from unseen.backends.base import BackendConfigError, BaseBackend, provider
from unseen.engine.backend import Capabilities, ProviderError
from unseen.engine.types import Reply, Request, Usage

SIDES = ("first", "last")


class Biased(BaseBackend):
    provider = "biased"
    simulated = True  # no model answers: every table marks its rows
    cacheable = False  # instant and deterministic: a cache would only hide changes
    capabilities = Capabilities(choices=True)

    def __init__(self, side: str, spec: str):
        if side not in SIDES:
            raise BackendConfigError(f"biased takes first or last, got {side!r}")
        self.side = side
        super().__init__(f"biased-{side}", box_format="pixel", spec=spec)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "side": self.side, "note": "fixed position bias, no model"}

    async def complete(self, request: Request) -> Reply:
        want = request.answer
        if want is None:
            raise ProviderError("client", "biased answers requests that say what they ask "
                                          "(Request.answer)")
        if want.kind in ("choice", "cells") and want.choices:
            label = want.choices[0 if self.side == "first" else -1]
            text = label if want.kind == "choice" else json.dumps({"eliminate": [int(label)]})
        elif want.kind == "box" and want.width and want.height:
            w, h = want.width, want.height
            box = [0, 0, w / 2, h / 2] if self.side == "first" else [w / 2, h / 2, w, h]
            text = json.dumps({"box": [round(v, 1) for v in box]})
        else:
            raise ProviderError("client", f"biased cannot answer a {want.kind} request")
        words = sum(len(m.text.split()) for m in request.messages)
        return Reply(text=text, finish_reason="stop",
                     usage=Usage(input_tokens=words, output_tokens=1))


@provider("biased", "biased:first|last  (example plug-in: a fixed position bias, no model)")
def _biased(target: str, *, spec: str, **_: Any) -> Biased:
    return Biased(target or "first", spec=spec)
