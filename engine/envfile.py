"""Provider keys from a ``.env`` file in the working directory, as inspect_ai users expect.

Only a provider's variables are taken from the file: those the built-in backends read
(:data:`PROVIDER_VARS`) and any other ``*_API_KEY`` or ``*_BASE_URL`` (a plug-in backend's);
the environment wins wherever it holds a value. Every
key-like value in the file is handed to the scrubber (:func:`.redact.remember`), the ones the
environment overrode too, so a key that came from the file is scrubbed like any other and is
never written to a run directory, a log or the cache. The file is parsed by python-dotenv
(``dotenv_values``, which leaves ``os.environ`` alone); a working directory without ``.env``
costs one ``stat``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import UnseenError
from .redact import KEY_ENV_VARS, remember

ENV_FILE = ".env"
PROVIDER_VARS = (*KEY_ENV_VARS, "OPENAI_BASE_URL", "GEMINI_BASE_URL")
# names whose values are secrets whatever the variable: scrubbed even when unused here
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_PROVIDER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_(API_KEY|BASE_URL)$")


class EnvFileError(UnseenError):
    """A ``.env`` file that cannot be read."""


def load_env_file(folder: str | Path | None = None) -> list[str]:
    """Set each provider variable (see the module) that ``folder/.env`` (default: the working
    directory's) names and the environment leaves unset or empty; return the names set."""
    path = Path(folder if folder is not None else os.getcwd()) / ENV_FILE
    if not path.is_file():
        return []
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvFileError(f"{path}: cannot be read as a .env file ({exc})") from None
    for name, value in values.items():
        if value and (name in KEY_ENV_VARS or _SECRET_NAME.search(name)):
            remember(value.strip())
    taken = []
    names = dict.fromkeys([*PROVIDER_VARS, *(n for n in values if _PROVIDER_NAME.search(n))])
    for name in names:
        value = (values.get(name) or "").strip()
        if value and not os.environ.get(name, "").strip():
            os.environ[name] = value
            taken.append(name)
    return taken
