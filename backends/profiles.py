"""Model profiles: the box convention and decoding quirks of each model family.

The table is data, ``profiles.toml`` beside this module, each profile with its source. The
first profile whose pattern occurs in the model's name (lower case, after its last ``/``)
wins; a user's profile file (``--profiles FILE`` or ``$UNSEEN_PROFILES``, the same format)
comes before the built-in table, which is how a user adds a model. A model no profile
knows has no profile (``profile_for`` returns None): its box convention is unknown, and a
box strategy is refused for it before any call (``engine.pairing.check_pairing``) until the
user gives one. Conventions are never guessed.
"""

from __future__ import annotations

import os
import re
import tomllib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..engine.box import CONVENTIONS
from ..engine.errors import UserFileError
from ..engine.userfiles import first_problem, read_text

PROFILES_ENV = "UNSEEN_PROFILES"
BUILT_IN = "profiles.toml"


class Resize(BaseModel):
    """Qwen2.5-VL's resize of the input (``engine.box.smart_resize``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    factor: int = Field(28, ge=1)
    min_pixels: int = Field(4 * 28 * 28, ge=1)
    max_pixels: int = Field(16384 * 28 * 28, ge=1)


class Profile(BaseModel):
    """One model family: how to ask it for a box and what it accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: str
    family: str = ""
    box_format: str | None = None  # None: no documented convention
    sampling: bool = True  # False: temperature and seed are rejected, so never sent
    logprobs: bool = True  # False: no log-probabilities come back
    thinking: bool | None = None  # True: it reasons before answering by default
    resize: Resize | None = None
    source: str = ""
    note: str = ""
    origin: str = "built-in"  # the file the profile came from

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return v

    @field_validator("box_format")
    @classmethod
    def _convention(cls, v: str | None) -> str | None:
        if v is not None and v not in CONVENTIONS:
            raise ValueError(f"unknown box convention {v!r}; one of {', '.join(CONVENTIONS)}")
        return v

    @property
    def name(self) -> str:
        return self.family or self.pattern

    @property
    def sampling_params(self) -> bool:  # the name the backends used before profiles were data
        return self.sampling

    def matches(self, model: str) -> bool:
        return re.search(self.pattern, model_key(model)) is not None


def model_key(model: str) -> str:
    """The part of a model name profiles are matched against: lower case, after the last
    ``/`` (``OpenGVLab/InternVL3_5-38B`` → ``internvl3_5-38b``)."""
    return model.lower().rstrip("/").rsplit("/", 1)[-1]


def parse_profiles(text: str, origin: str) -> tuple[Profile, ...]:
    """The ``[[profile]]`` tables of a TOML text; a bad one is one line naming ``origin``."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserFileError(f"{origin}: not valid TOML ({exc})") from None
    unknown = sorted(set(raw) - {"profile"})
    if unknown:
        raise UserFileError(f"{origin}: unknown table {unknown[0]!r}; a profile file holds "
                            "[[profile]] tables (pattern, box_format, sampling, ...)")
    entries = raw.get("profile", [])
    if not isinstance(entries, list) or not entries:
        raise UserFileError(f"{origin}: no [[profile]] table (each needs a pattern and, for "
                            "box strategies, a box_format)")
    out = []
    for n, entry in enumerate(entries, start=1):
        try:
            out.append(Profile.model_validate({**entry, "origin": origin}))
        except ValidationError as exc:
            raise UserFileError(f"{origin}: profile {n}: {first_problem(exc)}") from None
    return tuple(out)


@lru_cache(maxsize=1)
def built_in() -> tuple[Profile, ...]:
    """The built-in table (``profiles.toml``)."""
    text = resources.files(__package__).joinpath(BUILT_IN).read_text("utf-8")
    return parse_profiles(text, "built-in")


@lru_cache(maxsize=8)
def _user(path: str, mtime_ns: int) -> tuple[Profile, ...]:
    return parse_profiles(read_text(path), path)


def user_profiles(path: str | Path | None = None) -> tuple[Profile, ...]:
    """The profiles of ``path`` (default ``$UNSEEN_PROFILES``; none without either)."""
    path = path or os.environ.get(PROFILES_ENV) or None
    if path is None:
        return ()
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        read_text(path)  # the one-line error naming the file
        raise
    return _user(str(path), mtime)


_active: str | None = None  # the profile file of this process's run (set by ``use``)


def use(path: str | Path | None) -> str | None:
    """Make ``path`` the user profile file of this process (``connect`` calls it; a run
    sets the one before it back when it ends); checked now, so a bad file is refused before
    anything connects. Returns the one it replaces."""
    global _active
    user_profiles(path)
    before, _active = _active, (str(path) if path else None)
    return before


def in_use() -> str | None:
    """The user profile file this process's backends read now."""
    return _active


def restore(path: str | None) -> None:
    """Set the user profile file back to ``path`` (unchecked: it was checked when set)."""
    global _active
    _active = path


def profile_for(model: str, path: str | Path | None = None) -> Profile | None:
    """The first profile (a user's first) whose pattern occurs in the model's name, or
    None when no profile knows the model."""
    for profile in (*user_profiles(path or _active), *built_in()):
        if profile.matches(model):
            return profile
    return None


def describe(profile: Profile | None) -> dict[str, Any]:
    """What run.json records of a backend's profile."""
    if profile is None:
        return {"profile": None}
    out: dict[str, Any] = {"profile": profile.name}
    if profile.box_format is None and profile.note:
        out["profile_note"] = profile.note  # why it asks no box (the refusal quotes it)
    if profile.origin != "built-in":
        out["profile_file"] = profile.origin
    return out
