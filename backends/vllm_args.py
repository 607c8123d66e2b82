"""The target of a ``vllm-local`` spec: a model path, then vLLM engine arguments.

``vllm-local:/models/X,tensor_parallel_size=2,max_model_len=32768,limit_mm_per_prompt={"image":1}``

Each ``key=value`` after the path is a field of vLLM's ``AsyncEngineArgs``
(vllm/engine/arg_utils.py, ``EngineArgs`` and ``AsyncEngineArgs``), given to it as is: vLLM
checks the values when the engine starts, and its parallelism (``tensor_parallel_size``,
``data_parallel_size``, ``distributed_executor_backend=ray`` across nodes) is its own. A value
is read as JSON when it is JSON (numbers, ``true``, ``null``, ``{...}``, ``[...]``), else kept
as text (``ray``, ``float16``, ``qwen3``); commas inside brackets or quotes do not split.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from typing import Any

from .base import BackendConfigError


def split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, braces and double quotes."""
    items, depth, quoted, start = [], 0, False, 0
    escaped = False
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def parse_value(text: str) -> Any:
    """JSON when the text is JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_target(target: str, backend: str = "vllm-local") -> tuple[str, dict[str, Any]]:
    """``(model_path, engine_args)`` from ``PATH[,key=value,...]`` (``backend`` names the
    backend in the messages: ``hf`` reads its targets the same way)."""
    path, *rest = split_top(target)
    path = path.strip()
    if not path:
        raise BackendConfigError(f"{backend} needs a model path: {backend}:/path/to/model"
                                 "[,key=value,...]")
    args: dict[str, Any] = {}
    for item in rest:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise BackendConfigError(
                f"{backend}: {item.strip()!r} is not key=value (arguments follow the "
                f"model path, e.g. {backend}:/models/X,dtype=bfloat16)")
        if key in args:
            raise BackendConfigError(f"{backend}: argument {key!r} is given twice")
        args[key] = parse_value(value.strip())
    return path, args


def engine_arg_names(engine_args_cls: type) -> frozenset[str]:
    """The public fields of vLLM's ``AsyncEngineArgs`` dataclass (``model`` excluded: the
    spec's path is the model)."""
    return frozenset(f.name for f in dataclasses.fields(engine_args_cls)
                     if f.init and not f.name.startswith("_")) - {"model"}


def check_engine_args(args: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """``args`` if every name is an engine argument; else one BackendConfigError naming the
    first unknown one and the nearest known names."""
    for key in args:
        if key == "model":
            raise BackendConfigError("vllm-local: the model is the path before the first comma, "
                                     "not a model= argument")
        if key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise BackendConfigError(
                f"vllm-local: {key!r} is not an engine argument of vLLM (a field of "
                f"AsyncEngineArgs){hint}")
    return args
