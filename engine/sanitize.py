"""One sanitiser for text shown in a terminal or written into HTML: model replies and dataset
text may carry escape sequences (``ESC ]52`` writes the clipboard, ``ESC [2J`` clears the
screen), and Unicode format characters (category Cf) reorder or hide what is shown: a
right-to-left override (U+202E) makes ``RTLO-gnp.exe`` read as ``exe.png-OLTR``, a zero-width
space (U+200B), joiner (U+200D) or byte-order mark (U+FEFF) hides between letters. Newlines
and tabs stay; every other control character and every format character goes, and with an
escape character the whole sequence it starts.

:class:`SafeConsole` is a rich Console that passes every text it prints through
:func:`for_terminal` and the secret scrubber, whatever renderable carries the text; rich's
own styling and control segments (colours, the kitty image protocol) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from .redact import scrub, scrubber

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"            # CSI: ESC [ parameters intermediates final
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: ESC ] ... BEL or ST (clipboard, title)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"       # DCS, SOS, PM, APC ... ST
    r"|\x1b[\x20-\x7e]?"                    # any other escape and the byte after it
)
# C0 but tab and newline, DEL, C1; then Unicode's format characters (Cf, as of Unicode 15:
# the test checks the list against ``unicodedata``), spelled out since building the class from
# ``unicodedata`` costs a pass over every code point at each start-up
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
           "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
           "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
           "\U000e0020-\U000e007f")
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")


def for_terminal(text: str) -> str:
    """``text`` with newlines and tabs kept and every other control character and every
    format character (bidi overrides, zero-width ones) removed, escape sequences whole."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def shown(text: Any) -> str:
    """What a view may show of ``text``: scrubbed of secrets, then :func:`for_terminal`."""
    return for_terminal(scrub(str(text)))


def shown_now() -> Callable[[Any], str]:
    """:func:`shown` with the keys in use looked up once (``redact.scrubber``): for a view
    that shows many short texts at once."""
    clean_secrets = scrubber()
    return lambda text: for_terminal(clean_secrets(str(text)))


def clean(obj: Any) -> Any:
    """Every string in ``obj`` (a parsed record: dicts, lists, scalars) made :func:`shown`."""
    if isinstance(obj, str):
        return shown(obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


class SafeConsole(Console):
    """A rich Console whose printed text is :func:`shown`: nothing a model, a dataset or a
    file name carries reaches the terminal as a control sequence or a secret."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        safe = (seg if seg.control else Segment(shown(seg.text), seg.style, seg.control)
                for seg in buffer)
        return super()._render_buffer(safe)
