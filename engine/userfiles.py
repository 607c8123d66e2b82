"""Reading a user's files: text that is not UTF-8 is one line naming the file, line, column
and byte (a ``UserFileError``), never a ``UnicodeDecodeError`` traceback.

A UTF-8 byte-order mark (spreadsheets write one) is accepted and dropped.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import UserFileError

M = TypeVar("M", bound=BaseModel)

_BOM = codecs.BOM_UTF8


def _not_utf8(path: Path | str, data: bytes, exc: UnicodeDecodeError, line: int | None = None,
              offset: int = 0) -> UserFileError:
    start = exc.start
    if line is None:
        line = data.count(b"\n", 0, start) + 1
        offset = data.rfind(b"\n", 0, start) + 1
    return UserFileError(f"{path}:{line}: not UTF-8 text (byte 0x{data[start]:02x} at column "
                         f"{start - offset + 1}); save the file as UTF-8")


def decode(path: Path | str, data: bytes) -> str:
    """``data`` (the bytes of ``path``) as text."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data.startswith(_BOM):  # positions below count from after the mark
            exc.start += len(_BOM)
        raise _not_utf8(path, data, exc) from None


def read_bytes(path: Path | str) -> bytes:
    """The file's bytes; a file that cannot be read is one line naming it and why."""
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise UserFileError(f"{path}: a folder, not a file") from None
    except FileNotFoundError:
        raise UserFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_text(path: Path | str) -> str:
    """The whole file as text."""
    return decode(path, read_bytes(path))


def iter_lines(path: Path | str) -> Iterator[tuple[int, str]]:
    """(line number from 1, line with its newline), streamed."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the generator's last line
    except OSError:
        read_bytes(path)  # raises the one-line error
        raise
    with fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                yield n, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, raw, exc, line=n) from None


def _json_error(path: Path | str, exc: json.JSONDecodeError, line: int | None = None) -> UserFileError:
    return UserFileError(f"{path}:{line or exc.lineno}: not valid JSON ({exc.msg} at column "
                         f"{exc.colno})")


def parse_json(path: Path | str, text: str, line: int | None = None) -> Any:
    """``text`` (all of ``path``, or its line ``line``) as JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc, line) from None
    except RecursionError:
        raise UserFileError(f"{path}:{line or 1}: JSON nested too deeply") from None


def read_json_object(path: Path | str) -> dict[str, Any]:
    """A JSON file that must hold one object (``run.json``, ``study.json``)."""
    obj = parse_json(path, read_text(path))
    if not isinstance(obj, dict):
        raise UserFileError(f"{path}:1: a JSON object was expected, not {type(obj).__name__}")
    return obj


def first_problem(exc: ValidationError) -> str:
    """The first problem pydantic found, named by its field: ``steps.0.reply: Field
    required`` (the message alone where the whole object is at fault)."""
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")  # pydantic's label for a validator's own
    return f"{loc}: {msg}" if loc else msg


def validated(path: Path | str, model: type[M], obj: Any, line: int | None = None) -> M:
    """``obj`` (read from ``path``) as ``model``; the first problem named by its field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise UserFileError(f"{path}:{line or 1}: {first_problem(exc)}") from None


def read_json_lines(path: Path | str) -> list[dict[str, Any]]:
    """A JSON Lines file of objects (blank lines skipped): a line that is not UTF-8, not
    JSON or not an object is one line naming the file and line."""
    out = []
    for n, line in iter_lines(path):
        if line.strip():
            obj = parse_json(path, line, n)
            if not isinstance(obj, dict):
                raise UserFileError(f"{path}:{n}: a JSON object was expected, not "
                                    f"{type(obj).__name__}")
            out.append(obj)
    return out
