"""Provider keys from a ``.env`` file in the working directory, as inspect_ai users expect.

Only a provider's variables are taken from the file: those the built-in backends read
(:data:`PROVIDER_VARS`) and any other ``*_API_KEY`` or ``*_BASE_URL`` (a plug-in backend's);
the environment wins wherever it holds a value. Every
key-like value in the file is handed to the scrubber (:func:`.redact.remember`), the ones the
environment overrode too, so a key that came from the file is scrubbed like any other and is
never written to a run directory, a log or the cache.

Only the lines that name such a variable are read, each on its own with python-dotenv's
parser (``dotenv.parser.parse_stream``, what ``dotenv_values`` runs over the whole file), and
only the file's first :data:`MAX_BYTES` (a warning says when there is more): a large
``.env`` costs every start-up one bounded read, and an unclosed quote on one line cannot
swallow the lines after it. A provider line that cannot be read (not UTF-8, a NUL byte, not
``NAME=VALUE``, an unclosed quote) is one line naming the file and line, exit 2. A working
directory without ``.env`` costs one ``stat``.
"""

from __future__ import annotations

import io
import os
import re
from functools import lru_cache
from pathlib import Path

from .errors import UnseenError, warn
from .redact import KEY_ENV_VARS, remember

ENV_FILE = ".env"
MAX_BYTES = 1 << 20  # 1 MiB: a .env of keys is a few hundred bytes
PROVIDER_VARS = (*KEY_ENV_VARS, "OPENAI_BASE_URL", "GEMINI_BASE_URL")
# names whose values are secrets whatever the variable: scrubbed even when unused here
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_PROVIDER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_(API_KEY|BASE_URL)$")
# a line that assigns a variable whose name ends as a provider's or a secret's does
_CANDIDATE = re.compile(rb"^[ \t]*(?:export[ \t]+)?((?=[A-Za-z_])[A-Za-z0-9_]*(?i:KEY|TOKEN"
                        rb"|SECRET|PASSWORD|BASE_URL))[ \t]*=", re.MULTILINE)


class EnvFileError(UnseenError):
    """A ``.env`` file that cannot be read."""


def _ours(name: str) -> bool:
    return name in PROVIDER_VARS or bool(_PROVIDER_NAME.search(name))


@lru_cache(maxsize=4)
def _read(path: Path, stamp: tuple[int, int]) -> dict[str, str]:
    """The provider and secret variables of ``path`` (read once per version of the file:
    the CLI and the backends both load it, and a warning is said once)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise EnvFileError(f"{path}: cannot be read as a .env file ({exc})") from None
    if len(data) > MAX_BYTES:
        data = data[: data.rfind(b"\n", 0, MAX_BYTES) + 1]
        warn(f"{path} is larger than {MAX_BYTES >> 20} MiB: only the lines of its first MiB "
             "are read")
    values: dict[str, str] = {}
    line_no, pos = 1, 0
    for m in _CANDIDATE.finditer(data):
        line_no += data.count(b"\n", pos, m.start())
        pos = m.start()
        name = m.group(1).decode("ascii")
        end = data.find(b"\n", pos)
        value = _value(data[pos: end if end >= 0 else len(data)])
        if isinstance(value, str):
            values[name] = value
        elif _ours(name):  # another program's secret that we cannot read is not our concern
            raise EnvFileError(f"{path}:{line_no}: {name}: {value[0]}; fix or remove the line")
    return values


def _value(raw: bytes) -> str | tuple[str]:
    """The value one ``NAME=VALUE`` line sets, or (why it cannot be read,)."""
    from dotenv.parser import parse_stream

    if b"\0" in raw:
        return ("a NUL byte in the line",)
    try:
        text = raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        return ("not UTF-8",)
    bindings = list(parse_stream(io.StringIO(text)))
    if len(bindings) != 1 or bindings[0].error or bindings[0].key is None:
        return ("not NAME=VALUE (an unclosed quote, or text after the closing one?)",)
    return bindings[0].value or ""


def load_env_file(folder: str | Path | None = None) -> list[str]:
    """Set each provider variable (see the module) that ``folder/.env`` (default: the working
    directory's) names and the environment leaves unset or empty; return the names set."""
    path = Path(folder if folder is not None else os.getcwd()) / ENV_FILE
    try:
        st = path.stat()
    except OSError:
        return []
    if not path.is_file():
        return []
    values = _read(path.resolve(), (st.st_mtime_ns, st.st_size))
    for name, value in values.items():
        if value and (name in KEY_ENV_VARS or _SECRET_NAME.search(name)):
            remember(value.strip())
    taken = []
    names = dict.fromkeys([*PROVIDER_VARS, *(n for n in values if _ours(n))])
    for name in names:
        value = (values.get(name) or "").strip()
        if value and not os.environ.get(name, "").strip():
            os.environ[name] = value
            taken.append(name)
    return taken
