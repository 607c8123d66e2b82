"""``unseen cache``: inspect or clear the reply cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .common import (
    out,
    plain,
)

cache_app = typer.Typer(no_args_is_help=True, help="Inspect or clear the reply cache.")


@cache_app.command("stats")
def cache_stats(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: user cache dir).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Entries per backend and model, size on disk, location."""
    from ..engine.cache import ReplyCache

    cache = ReplyCache(cache_dir)
    stats = cache.stats()
    cache.close()
    if as_json:
        plain(json.dumps(stats, indent=2))
        return
    out.print(f"cache: {stats['path']}  entries: {stats['entries']}  size: {stats['bytes'] / 1e6:.2f} MB")
    for row in stats["by_model"]:
        out.print(f"  {row['backend']}:{row['model']}  {row['entries']}")
    for moved in stats["set_aside"]:  # damaged files the cache moved aside
        out.print(f"set aside (damaged): {moved['path']}  {moved['bytes'] / 1e6:.2f} MB",
                  soft_wrap=True, highlight=False, markup=False)


@cache_app.command("clear")
def cache_clear(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: user cache dir).")] = None,
    backend: Annotated[str | None, typer.Option(help="Only this provider, e.g. openai.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
) -> None:
    """Delete cached replies (all, or one provider / model)."""
    from ..engine.cache import ReplyCache

    cache = ReplyCache(cache_dir)
    n = cache.clear(backend=backend, model=model)
    cache.close()
    out.print(f"deleted {n} cached replies")


