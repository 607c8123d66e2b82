"""Help that reads as wrapped paragraphs, each command with an example.

Typer's rich help keeps a docstring's line breaks after its first paragraph, so a docstring
wrapped at 100 columns in the source came out broken mid-sentence at any other width.
:func:`reflow_help` sets each command's help to its docstring with every paragraph joined
into one line (the terminal wraps it) and an "Example:" paragraph from :data:`EXAMPLES`,
whose lines are kept as they are. The examples are kept here, not in the docstrings, so the
commands' code in ``cli.py`` stays as it was; ``tests/cli/test_help.py`` checks that every
command has one and that each one parses.
"""

from __future__ import annotations

import inspect
from typing import Any

from rich.markup import escape

# command path → example command lines (the root app is "", groups their name)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("unseen run", "unseen compare runs/* --baseline direct --format md"),
    "run": ("unseen run --data DIR -s direct -s spoe:T=6 -b openai:gpt-4o --out runs/gpt",
            "unseen run --data DIR -s direct -s spoe:T=6 -b openai:gpt-4o --dry-run"),
    "compare": ("unseen compare runs/gpt runs/gemini --baseline direct --format md",
                "unseen compare runs/gpt --paper"),
    "figure": ("unseen figure runs/gpt --worst 4 --out worst.png",
               "unseen figure runs/gpt --instances ID1,ID2 --out fig.png"),
    "curve": ("unseen curve runs/gpt --metric dist --ceiling --format png --out dist.png",),
    "show": ("unseen show runs/gpt INSTANCE_ID --strategy spoe",),
    "tui": ("unseen tui runs/gpt runs/gemini",),
    "view": ("unseen view runs/", "unseen view runs/gpt runs/gemini --port 8765"),
    "export": ("unseen export runs/gpt --html report/",),
    "strategies": ("unseen strategies",),
    "backends": ("unseen backends",),
    "profiles": ("unseen profiles", "unseen profiles OpenGVLab/InternVL3_5-38B",
                 "unseen profiles my-lab/spatial-7b --profiles my-profiles.toml"),
    "prices": ("unseen prices", "unseen prices gpt-4o",
               "unseen prices my-lab/spatial-7b --prices my-prices.toml"),
    "benchmarks": ("unseen benchmarks",),
    "data": ("unseen data sample --out data/sample",),
    "data sample": ("unseen data sample --out data/sample",),
    "data build": ("unseen data build --scenefun3d scans/ --out data/built",),
    "data review": ("unseen data review data/built --who ann",),
    "data rooms": ("unseen data rooms --out scans/ --n 8 --seed 0",),
    "data stats": ("unseen data stats data/sample --png centres.png",),
    "data director": ("unseen data director --set rotated --out scenes/rotated",),
    "cache": ("unseen cache stats",),
    "cache stats": ("unseen cache stats --json",),
    "cache clear": ("unseen cache clear --backend openai --model gpt-4o",),
    "director": ("unseen director run quick --backend sim --out runs/dq",
                 "unseen director analyze runs/dq"),
    "director prompts": ("unseen director prompts -c move -c move/novis",),
    "director run": ("unseen director run quick --backend sim --out runs/dq",
                     "unseen director run paper -b openai:gpt-6-sol --dry-run --format json"),
    "director analyze": ("unseen director analyze runs/dq --format md",),
    "director code": ("unseen director code runs/dq --coder sim",),
    "director codes": ("unseen director codes runs/dq",),
    "director sheet": ("unseen director sheet runs/dq --out sheet.csv",),
    "director codebook": ("unseen director codebook --second-pass",),
    "director agree": ("unseen director agree runs/dq ann.csv ben.csv",),
    "director power": ("unseen director power quick --effect dir_uplift=0.2 --reps 200",),
}


def paragraphs(doc: str) -> str:
    """``doc`` dedented, with each paragraph (blank-line separated) joined into one line."""
    blocks = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(b.split()) for b in blocks if b.strip())


def with_example(doc: str, path: str) -> str:
    """The help text of the command at ``path``: its paragraphs, then its example."""
    lines = EXAMPLES.get(path, ())
    # "$ " marks a command line: typer dedents the help after its first paragraph, so an
    # indent would survive in some helps and not in others
    example = ("Example:" if len(lines) == 1 else "Examples:") + "".join(
        f"\n$ {escape(line)}" for line in lines)
    return paragraphs(doc) + ("\n\n" + example if lines else "")


def reflow_help(app: Any, path: str = "") -> None:
    """Rewrite the help of ``app`` (a ``typer.Typer``), its commands and its groups, in place."""
    info = app.info
    if isinstance(info.help, str):
        info.help = with_example(info.help, path)
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__.replace("_", "-")
        doc = cmd.help or inspect.getdoc(cmd.callback) or ""
        cmd.help = with_example(doc, f"{path} {name}".strip())
    for group in app.registered_groups:
        sub = group.typer_instance
        reflow_help(sub, f"{path} {group.name or sub.info.name}".strip())
