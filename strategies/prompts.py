"""Prompt templates are data: text files under ``prompts/``, read with importlib.resources.

Templates use ``$name`` placeholders (``string.Template``), so JSON braces need no escaping.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def template(name: str) -> Template:
    """The template ``prompts/<name>.txt``."""
    path = resources.files(__package__).joinpath("prompts", *f"{name}.txt".split("/"))
    return Template(path.read_text(encoding="utf-8").strip())


def render(name: str, **fields: object) -> str:
    """Fill a template; a missing field is an error, not a silent blank."""
    return template(name).substitute(**fields)


def box_format_text(convention: str | None, width: int, height: int) -> str:
    """The sentence telling the model the box convention it must answer in; ``width`` x
    ``height`` is the image's own size, stated as the size it is sent at (a pixel box is in
    the pixels the model sees: ``engine.box.Convention.sent_size``)."""
    from ..engine.box import Convention

    conv = Convention.of(convention)
    w, h = conv.sent_size(width, height)
    return render(f"box/{conv.name}", width=w, height=h)
