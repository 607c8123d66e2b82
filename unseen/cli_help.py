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
import typing
from pathlib import Path
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
    "view": ("unseen view", "unseen view runs/gpt runs/gemini --port 8765"),
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


#: an option's value by its type, where the option names no metavar of its own
_METAVARS = ((bool, ""), (int, "INTEGER"), (float, "NUMBER"), (Path, "PATH"), (str, "TEXT"))


def _value_type(hint: Any) -> Any:
    """``list[str] | None`` → ``str``: the type of one value of the option."""
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return _value_type(args[0]) if args else hint


def _plain_arguments() -> None:
    """Typer writes a required argument ``{NAME}`` in the usage line, its type
    (``<list[Path]>``) beside the name the metavar already gives, and ``<bool>`` beside a
    flag: the name alone, plainly."""
    from typer.core import TyperArgument, TyperOption

    usage = getattr(TyperArgument, "_usage_display_name", None)
    if usage is None or getattr(usage, "plain", False):
        return  # another typer: its own usage line stays
    option_type = TyperOption.display_type_rich

    def no_flag_type(self: Any, ctx: Any) -> str | None:  # a flag takes no value: no <bool>
        return None if self.is_flag and self.metavar is None else option_type(self, ctx)

    TyperOption.display_type_rich = no_flag_type  # type: ignore[method-assign]

    def plain_usage(self: Any) -> str:
        name = usage(self)
        return name.replace("{", "").replace("}", "") if self.metavar is not None else name

    def no_type(self: Any, ctx: Any) -> str | None:
        return None if self.metavar is not None else TyperArgument.display_type(self, ctx)

    plain_usage.plain = True  # type: ignore[attr-defined]
    TyperArgument._usage_display_name = plain_usage  # type: ignore[method-assign]
    TyperArgument.display_type_rich = no_type  # type: ignore[method-assign]
    # "INTEGER [x>=1]", "NUMBER [x>=0.0]": the bound widened the metavar column by up to 9
    # of 80 columns, narrowing every option's help; a value out of range is refused with it
    for cls in (TyperArgument, TyperOption):
        cls._get_number_range_help_str = lambda self: None  # type: ignore[method-assign]


def readable_metavars(callback: Any) -> None:
    """Give every option and argument of ``callback`` that names none a plain metavar
    (``TEXT``, ``INTEGER``, ``PATH``; an argument its name, ``RUN_DIR...``) in place of
    typer's ``<list[str]>`` and ``{run_dirs}...``, which crowd the help at 80 columns."""
    from typer.models import ArgumentInfo, OptionInfo

    hints = typing.get_type_hints(callback, include_extras=True)
    # typer evaluates string annotations anew on every call: keep the evaluated (and
    # changed) ones, or the metavars set here would be lost
    callback.__annotations__ = dict(hints)
    for name, hint in hints.items():
        info = next((m for m in getattr(hint, "__metadata__", ())
                     if isinstance(m, (OptionInfo, ArgumentInfo))), None)
        if info is None:
            continue
        if info.help and not getattr(info, "escaped", False):
            info.help = escape(info.help)  # "TOML [[profile]]" is text, not rich markup
            info.escaped = True  # type: ignore[union-attr]  # one info serves two commands
        if info.metavar is not None:
            continue
        if isinstance(info, ArgumentInfo):
            info.metavar = name.upper().removesuffix("S") if "list" in str(hint) \
                else name.upper()
            continue
        kind = _value_type(typing.get_args(hint)[0])
        word = next((w for t, w in _METAVARS if isinstance(kind, type) and issubclass(kind, t)),
                    "TEXT")
        if word:
            info.metavar = word


def reflow_help(app: Any, path: str = "") -> None:
    """Rewrite the help of ``app`` (a ``typer.Typer``), its commands and its groups, in place."""
    _plain_arguments()
    info = app.info
    if isinstance(info.help, str):
        info.help = with_example(info.help, path)
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__.replace("_", "-")
        doc = cmd.help or inspect.getdoc(cmd.callback) or ""
        cmd.help = with_example(doc, f"{path} {name}".strip())
        readable_metavars(cmd.callback)
    for group in app.registered_groups:
        sub = group.typer_instance
        reflow_help(sub, f"{path} {group.name or sub.info.name}".strip())
