"""The ``unseen`` app, assembled from the command groups in ``unseen.commands`` (imported by
``unseen.cli.main`` only when a command runs: a replayed help or listing needs none of it)."""

from __future__ import annotations

import typer

from .cli_help import reflow_help
from .commands import cache, data, director, run, views

app = typer.Typer(
    name="unseen", no_args_is_help=True, add_completion=False,
    help="Test, and improve, how vision-language models reason about what they cannot see.",
)
app.add_typer(data.data_app, name="data")
app.add_typer(cache.cache_app, name="cache")
app.add_typer(director.director_app, name="director")
# the top-level commands, in the order `unseen --help` lists them
for name in ("run", "compare", "figure", "curve", "show", "tui", "view", "export", "strategies",
             "benchmarks", "backends", "profiles", "prices"):
    group = run if name in ("run", "strategies", "benchmarks", "backends", "profiles",
                            "prices") \
        else views
    app.registered_commands += [c for c in group.commands.registered_commands
                                if c.callback.__name__ == name]

# every command is registered by now: paragraphs that rewrap, and an example each
reflow_help(app)
