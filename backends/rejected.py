"""Parameters a provider rejects: dropped for that model, the call retried once, recorded.

A 400 that names one of the decoding parameters unseen sends (``temperature``, ``seed``,
``logprobs``/``top_logprobs``, ``reasoning_effort``) as unsupported drops that parameter for
the backend's model from then on: the call is sent again without it at once, a warning says
so once, and run.json's backend description lists it (``dropped_params``), which every
table's legend shows. Each parameter is dropped at most once, so a call is sent at most once
more per parameter: never a loop, and never silently.

The error shapes read (each test against a local server sends them as the provider does):

- OpenAI: ``{"error": {"message": "Unsupported parameter: 'temperature' is not supported
  with this model.", "type": "invalid_request_error", "param": "temperature", "code": null}}``,
  and ``Unsupported value: 'temperature' does not support 0 ...`` (``code``
  ``unsupported_value``);
- xAI: ``{"code": "Client specified an invalid argument", "error": "Model grok-4.6 does not
  support parameter reasoningEffort."}`` (older: ``Argument not supported on this model:
  presencePenalty``), camelCase names;
- vLLM: ``{"error": {"message", "type": "BadRequestError", "param", "code": 400}}``, and
  before 0.10 the flat ``{"object": "error", "message", ...}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..engine.errors import warn

#: a parameter's name → the body keys it is sent as (the Responses API: ``reasoning``)
DROPPABLE: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "seed": ("seed",),
    "logprobs": ("logprobs", "top_logprobs"),
    "reasoning_effort": ("reasoning_effort", "reasoning"),
}
# the names a provider may use for them, in any case, snake or camel
_NAMES = {"temperature": "temperature", "seed": "seed", "logprobs": "logprobs",
          "top_logprobs": "logprobs", "toplogprobs": "logprobs",
          "reasoning_effort": "reasoning_effort", "reasoningeffort": "reasoning_effort",
          "reasoning.effort": "reasoning_effort"}
_UNSUPPORTED = re.compile(r"unsupported|not supported|does not support|not permitted|"
                          r"not allowed|unrecognized|unknown (?:parameter|field|argument)|"
                          r"extra inputs", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z_.]*")


def rejected_param(exc: Exception, sent: dict[str, Any]) -> str | None:
    """The droppable parameter a 400 (or 422) says the model does not take, if it was sent;
    None for any other error."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 422):
        return None
    body = getattr(exc, "body", None)
    text = " ".join(str(x) for x in (getattr(exc, "message", ""),
                                     json.dumps(body) if not isinstance(body, str) else body))
    if not _UNSUPPORTED.search(text):
        return None
    candidates = []
    param = getattr(exc, "param", None) or (body.get("param") if isinstance(body, dict)
                                             else None)
    if isinstance(param, str):  # the Responses API names the object, ``reasoning``
        candidates.append("reasoning_effort" if param == "reasoning" else param)
    candidates += _WORD.findall(text)
    for word in candidates:
        name = _NAMES.get(word.lower().strip("'\"."))
        if name is not None and any(k in sent for k in DROPPABLE[name]):
            return name
    return None


def without(body: dict[str, Any], dropped: set[str]) -> dict[str, Any]:
    """``body`` without the keys of the ``dropped`` parameters."""
    keys = {k for name in dropped for k in DROPPABLE[name]}
    return {k: v for k, v in body.items() if k not in keys} if keys else body


def note_drop(backend: Any, name: str) -> None:
    """Record the drop on ``backend`` (its ``dropped`` set) and say it once."""
    backend.dropped.add(name)
    extra = ""
    if name == "logprobs":
        backend.capabilities = backend.capabilities.model_copy(update={"logprobs": False})
        extra = "; choices carry no confidence from it (spoe:tau, spoe-search)"
    warn(f"{backend.spec}: the provider rejects {name} for {backend.model}; it is no longer "
         f"sent to this model (recorded in run.json){extra}")
