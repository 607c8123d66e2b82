"""A backend spec's own endpoint and options, and the image settings a backend sends.

Grammar of a provider's target (after ``provider:``)::

    MODEL[@URL[,URL...]][,OPTION=VALUE...]

Items with ``=`` are options, the others after ``@`` the servers: ``openai:grok-4.6@https://
api.x.ai/v1,key_env=XAI_API_KEY`` sends grok's calls to xAI with the key in
``$XAI_API_KEY``, whatever ``--base-url`` says for other backends. Options a spec gives win
over the command's (``--box-format``, ``--max-image-side``); an option the provider does not
take is one line naming the ones it does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from .base import BackendConfigError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Target:
    """A provider's target, split: the model, its servers and its options (as text)."""

    model: str
    urls: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)


def split_target(target: str, spec: str) -> Target:
    """``MODEL[@URL[,URL...]][,OPTION=VALUE...]`` split into its parts."""
    model, at, rest = target.partition("@")
    head, *tail = model.split(",")
    items = [x.strip() for x in (tail + (rest.split(",") if at else [])) if x.strip()]
    out = Target(head.strip())
    for item in items:
        key, eq, value = item.partition("=")
        if eq and not key.strip().startswith(("http:", "https:")) and "/" not in key:
            if not key.strip() or not value.strip():
                raise BackendConfigError(f"option {item!r} in {spec!r} needs a name and a value")
            out.options[key.strip()] = value.strip()
        elif at:
            from .servers import check_url  # a URL that cannot work: refused as it is written

            out.urls.append(check_url(item, spec))
        else:
            raise BackendConfigError(f"{item!r} in {spec!r} is neither an option (name=value) "
                                     "nor a server (servers follow the model after @)")
    return out


class ImageSettings(BaseModel):
    """How a backend sends images, recorded in run.json and named in table legends:

    - ``max_side``: longer side at most this many pixels, resized before sending (the box
      conventions account for it: ``engine.box.Convention``); None sends the file as it is;
    - ``min_pixels`` / ``max_pixels`` / ``factor``: Qwen2.5-VL's resize, sent to a vLLM server
      as ``mm_processor_kwargs`` and used to read its pixel boxes (None: the profile's);
    - ``detail``: OpenAI's image detail (``low``, ``high``, ``auto``, ``original``);
    - ``media_resolution``: Gemini's (``low``, ``medium``, ``high``, ``ultra_high``);
    - ``draw_fitted`` (opt-in, with ``max_side``): draw a step's overlay on the image already
      fitted to ``max_side``, encoded once, instead of drawing at full size and fitting the
      encoded result (decoded and encoded again): the size the provider works at, for a
      fraction of the CPU; lines and labels are drawn at the sent size, so the bytes differ.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_side: int | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    factor: int | None = None
    detail: str | None = None
    media_resolution: str | None = None
    draw_fitted: bool | None = None

    def resize(self) -> dict[str, int]:
        return {k: v for k, v in (("factor", self.factor), ("min_pixels", self.min_pixels),
                                  ("max_pixels", self.max_pixels)) if v is not None}

    def recorded(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


DETAILS = ("low", "high", "auto", "original")
MEDIA_RESOLUTIONS = ("low", "medium", "high", "ultra_high")


def positive_int(name: str, value: Any, spec: str) -> int | None:
    """``value`` as a positive whole number (None stays None)."""
    if value is None:
        return None
    try:
        f = float(str(value).replace("_", ""))
    except ValueError:
        f = math.nan
    if not (math.isfinite(f) and f.is_integer() and f >= 1):
        raise BackendConfigError(f"{name} in {spec!r} must be a positive whole number, "
                                 f"got {value!r}")
    return int(f)


def one_of(name: str, value: Any, allowed: tuple[str, ...], spec: str) -> str | None:
    if value is None:
        return None
    v = str(value).strip().lower()
    if v not in allowed:
        raise BackendConfigError(f"{name} in {spec!r} must be one of {', '.join(allowed)}, "
                                 f"got {value!r}")
    return v


def env_name(value: str, spec: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise BackendConfigError(f"key_env in {spec!r} names an environment variable "
                                 f"(letters, digits, _), got {value!r}")
    return value


def take_options(target: Target, allowed: tuple[str, ...], given: dict[str, Any],
                 spec: str) -> dict[str, Any]:
    """The spec's options over the command's (``given``), checked against ``allowed``."""
    unknown = sorted(set(target.options) - set(allowed))
    if unknown:
        raise BackendConfigError(f"{spec!r}: unknown option {unknown[0]!r}; this backend "
                                 f"takes {', '.join(allowed)}")
    return {**{k: v for k, v in given.items() if v is not None}, **target.options}


def image_settings(opts: dict[str, Any], spec: str, *, detail: str | None = None,
                   media_resolution: str | None = None) -> ImageSettings:
    """The image settings of a backend from its options; ``detail`` / ``media_resolution``
    are the provider's stated defaults (None where the provider has no such setting)."""
    return ImageSettings(
        max_side=positive_int("max_image_side", opts.get("max_image_side"), spec),
        min_pixels=positive_int("min_pixels", opts.get("min_pixels"), spec),
        max_pixels=positive_int("max_pixels", opts.get("max_pixels"), spec),
        factor=positive_int("resize_factor", opts.get("resize_factor"), spec),
        detail=one_of("detail", opts.get("detail", detail), DETAILS, spec)
        if detail is not None else None,
        media_resolution=one_of("media_resolution",
                                opts.get("media_resolution", media_resolution),
                                MEDIA_RESOLUTIONS, spec)
        if media_resolution is not None else None,
        draw_fitted=_draw_fitted(opts, spec),
    )


def _draw_fitted(opts: dict[str, Any], spec: str) -> bool | None:
    """``draw_fitted=true`` (recorded), or None: the default is left out of run.json and
    the cache key, so a run that does not opt in is described as before."""
    raw = opts.get("draw_fitted")
    if raw is None:
        return None
    value = {"true": True, "false": False}.get(str(raw).strip().lower())
    if value is None:
        raise BackendConfigError(f"draw_fitted in {spec!r} is true or false, got {raw!r}")
    if value and opts.get("max_image_side") is None:
        raise BackendConfigError(f"draw_fitted in {spec!r} needs max_image_side=N: the size "
                                 "to draw at")
    return value or None


#: options every backend over a model takes
IMAGE_OPTIONS = ("box_format", "max_image_side", "min_pixels", "max_pixels", "resize_factor",
                 "draw_fitted")
