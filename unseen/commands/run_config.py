"""``unseen run CONFIG.toml``: a run's configuration in a file (data, strategies, backends,
options), validated as the Director's designs are; a flag given on the command line wins."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import settings
from ..engine.userfiles import first_problem, read_text
from .common import UserError


class RunFile(BaseModel):
    """The keys of a run configuration file: the command's options by their long names
    (``max_tokens`` for ``--max-tokens``); relative paths are read from the file's folder."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    data: str | None = None
    benchmark: str | None = None
    strategies: list[str] = Field(default_factory=list)
    backends: list[str] = Field(default_factory=list)
    samples: int = Field(1, ge=1)
    limit: int | None = Field(None, ge=1)
    instances: list[str] = Field(default_factory=list)
    sample: int | None = Field(None, ge=1)
    seed: int | None = None
    temperature: float | None = Field(None, ge=0.0)
    max_tokens: int | None = Field(None, ge=1)
    out: str | None = None
    concurrency: int = Field(settings.DEFAULT_CONCURRENCY, ge=1)
    fixed_concurrency: bool = False
    batch: bool = False
    batch_window: float = Field(2.0, ge=0.0)
    batch_poll: float = Field(30.0, ge=0.1)
    box_format: str | None = None
    profiles: str | None = None
    max_image_side: int | None = Field(None, ge=1)
    cache_tag: str | None = None
    base_url: list[str] = Field(default_factory=list)
    timeout: float = Field(settings.DEFAULT_TIMEOUT_S, gt=0.0)
    cache: bool = True
    cache_dir: str | None = None
    processes: int = Field(1, ge=1)
    allow_outside_images: bool = False
    strict: bool = False
    max_cost: float | None = Field(None, gt=0.0)
    prices: str | None = None

    @field_validator("data", "out", "profiles", "prices", "cache_dir")
    @classmethod
    def _a_path(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():  # it would name the file's own folder
            raise ValueError("an empty path: give one, or leave the key out")
        return value


#: file key -> the command's parameter, where the two names differ
_PARAM = {"strategies": "strategy", "backends": "backend", "out": "out_dir", "cache": "no_cache"}
_PATHS = ("data", "out", "profiles", "prices", "cache_dir")


def load(path: Path) -> RunFile:
    """The file, validated: an unknown key or a bad value is one line naming it and the file."""
    if not path.is_file():
        raise UserError(f"no run configuration file {path}")
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    try:
        return RunFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "extra_forbidden":
            key = ".".join(str(x) for x in first["loc"])
            raise UserError(f"{path}: unknown key {key!r} (the keys are the options of "
                            "`unseen run --help` by their long names, e.g. max_tokens)") from None
        raise UserError(f"{path}: {first_problem(exc)}") from None


def merged(ctx: Any, path: Path) -> dict[str, Any]:
    """The command's parameters: the file's keys where the command line gave no flag."""
    params = dict(ctx.params)
    given = load(path)
    for key in given.model_fields_set:
        name = _PARAM.get(key, key)
        # by name: newer typer vendors its own click, whose enum is another class
        if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE":
            continue  # the flag wins
        value = getattr(given, key)
        if key in _PATHS and value is not None:
            value = path.parent / Path(value).expanduser()
        if key == "cache":
            value = not value
        elif key == "instances":
            value = ",".join(value) if value else None
        elif isinstance(value, list) and not value:
            value = None
        params[name] = value
    params.pop("config", None)
    return params
