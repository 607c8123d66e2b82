"""The hostile set's cases about what a user types and the environment a command starts in
(``tests/cli/test_hostile_inputs.py`` runs them with the rest): backend and strategy specs,
options out of range, empty arguments, environment variables, the ``data`` commands, the
pager, and cache folders that cannot be made. Each ends in one line and exit 2, or a stated
warning and a finished run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from hostile import (
    KEY,
    TINY,
    Case,
    Ctx,
    a_file,
    a_run_in,
    a_study,
    both,
    design,
    director,
    expect,
    make_readonly,
    no_calls,
    run_openai,
    run_sample,
)


def backend(spec: str) -> Callable[[Ctx], list[str]]:
    return lambda ctx: run_sample(ctx, backend=spec)


def strategy(spec: str, *extra: str) -> Callable[[Ctx], list[str]]:
    def make(ctx: Ctx) -> list[str]:
        argv = run_sample(ctx, *extra)
        argv[argv.index("-s") + 1] = spec
        return argv

    return make


def env(**values: str) -> Callable[[Ctx], None]:
    """Environment variables for the case; ``{fake}`` is the fake OpenAI server's URL."""

    def setup(ctx: Ctx) -> None:
        for name, value in values.items():
            ctx.monkeypatch.setenv(name, value.replace("{fake}", ctx.fp.openai_base_url))

    return setup


def gemini(ctx: Ctx) -> list[str]:
    ctx.monkeypatch.setenv("GEMINI_API_KEY", "AIza" + "k" * 35)
    return run_sample(ctx, backend="gemini:gemini-2.5-flash")


def data(command: str, *args: str) -> Callable[[Ctx], list[str]]:
    """``unseen data COMMAND ARGS``; ``{tmp}`` is the case's folder."""
    return lambda ctx: ["data", command, *(a.replace("{tmp}", str(ctx.tmp)) for a in args)]


def tty(ctx: Ctx) -> None:
    """Standard output a terminal, so ``show`` pages."""
    ctx.monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def pager(value: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        tty(ctx)
        ctx.monkeypatch.setenv("UNSEEN_PAGER", value.replace("{tmp}", str(ctx.tmp)))

    return setup


def bad_script(ctx: Ctx) -> None:
    """``tmp/pager``: executable, its interpreter missing (it exists but cannot start)."""
    script = ctx.tmp / "pager"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)


def shown(ctx: Ctx, out: str, err: str) -> None:
    expect("trajectories", out)  # the summary printed directly


def show(ctx: Ctx) -> list[str]:
    return ["show", ctx.out]


def readonly_parent(ctx: Ctx) -> None:
    (ctx.tmp / "ro").mkdir()
    make_readonly(ctx, ctx.tmp / "ro")


def cached_run(ctx: Ctx) -> list[str]:
    """A cached run (the reply cache in use) with no --cache-dir."""
    return [a for a in run_sample(ctx) if a != "--no-cache"]


def unlimited(argv: list[str]) -> list[str]:
    at = argv.index("--limit")
    return argv[:at] + argv[at + 2:]


def two_journaled(ctx: Ctx, out: str, err: str) -> None:
    """The run went on without the cache: both trajectories journaled."""
    assert len((Path(ctx.out) / "trajectories.jsonl").read_text().splitlines()) == 2


CODE = ["director", "code", "-q", "--no-cache"]

COMMAND_CASES = [
    # --- --reasoning-effort and other decoding out of range ------------------------------------
    Case("director run --reasoning-effort ludicrous",
         lambda ctx: director(ctx, "--reasoning-effort", "ludicrous"), 2,
         "bad parameter 'reasoning_effort' for strategy 'director'", design(TINY)),
    Case("director code --reasoning-effort ludicrous",
         lambda ctx: [*CODE, ctx.out, "--reasoning-effort", "ludicrous"], 2,
         "bad parameter 'reasoning_effort' for strategy 'director-code'", a_study),
    Case("-s direct:reasoning_effort=ludicrous", strategy("direct:reasoning_effort=ludicrous"),
         2, "bad parameter 'reasoning_effort' for strategy 'direct'"),
    Case("-s direct:temperature=-1", strategy("direct:temperature=-1"), 2,
         "'temperature' for strategy 'direct': Input should be greater than or equal to 0"),
    Case("-s direct:temperature=nan", strategy("direct:temperature=nan"), 2,
         "Input should be a finite number"),
    Case("-s spoe:temperature=3", strategy("spoe:temperature=3"), 2,
         "less than or equal to 2"),
    Case("--temperature inf", lambda ctx: run_sample(ctx, "--temperature", "inf"), 2,
         "Input should be a finite number"),
    Case("director run --temperature -1", lambda ctx: director(ctx, "--temperature", "-1"), 2,
         "'temperature' for strategy 'director'", design(TINY)),
    Case("-s direct:max_tokens=0", strategy("direct:max_tokens=0"), 2,
         "'max_tokens' for strategy 'direct'"),
    # --- strategy specs -----------------------------------------------------------------------
    Case("-s direct:zap=1 (an unknown parameter)", strategy("direct:zap=1"), 2, "'zap'"),
    Case("-s spoe:votes=-1", strategy("spoe:votes=-1"), 2, "'votes'"),
    Case("-s direct:prompt=weird", strategy("direct:prompt=weird"), 2, "'prompt'"),
    Case("-s direct:= (no key)", strategy("direct:="), 2, "key=value"),
    Case("-s direct:max_tokens=abc", strategy("direct:max_tokens=abc"), 2, "valid integer"),
    Case("-s cot:seed=1.5", strategy("cot:seed=1.5"), 2, "'seed'"),
    Case("-s direct:prompt=basic,prompt=hidden (once the last won)",
         strategy("direct:prompt=basic,prompt=hidden"), 2, "'prompt' is given twice"),
    Case("-s direct,cot (one spec)", strategy("direct,cot"), 2, "unknown strategy"),
    Case("a Director strategy on SceneFunRI data", strategy("director"), 2, "director"),
    # --- backend specs ------------------------------------------------------------------------
    Case("-b ::: (no provider)", backend(":::"), 2, "unknown backend"),
    Case("-b sim:nosuchprofile", backend("sim:nosuchprofile"), 2, "unknown sim profile"),
    Case("-b sim:default,skill (no value)", backend("sim:default,skill"), 2, "knob=value"),
    Case("-b sim:default,seed=abc", backend("sim:default,seed=abc"), 2, "'seed'"),
    Case("-b sim:default,skill=-0.5", backend("sim:default,skill=-0.5"), 2, "'skill'"),
    Case("-b openai: (no model)", backend("openai:"), 2, "openai needs a model"),
    Case("-b openai:gpt-4o,zap=1", backend("openai:gpt-4o,zap=1"), 2, "unknown option 'zap'",
         lambda ctx: ctx.monkeypatch.setenv("OPENAI_API_KEY", KEY)),
    Case("-b vllm:m (no server)", backend("vllm:m"), 2, "vllm needs a model and a server"),
    Case("-b hf: (no model path)", backend("hf:"), 2, "hf needs a model path"),
    Case("-b vllm-local: (no model path)", backend("vllm-local:"), 2,
         "vllm-local needs a model path"),
    Case("-b baseline:nope", backend("baseline:nope"), 2, "unknown baseline 'nope'"),
    Case("gemini without a key", backend("gemini:gemini-2.5-flash"), 2, "GEMINI_API_KEY",
         lambda ctx: [ctx.monkeypatch.delenv(k, raising=False)
                      for k in ("GEMINI_API_KEY", "GOOGLE_API_KEY")]),
    Case("--box-format weird", lambda ctx: run_sample(ctx, "--box-format", "weird"), 2,
         "unknown box convention 'weird'"),
    Case("--batch with the simulator", lambda ctx: run_sample(ctx, "--batch"), 2,
         "--batch is for"),
    Case("director run -b sim -b sim", lambda ctx: director(ctx, "-b", "sim"), 2,
         "given twice", design(TINY)),
    Case("director code --coder zork", lambda ctx: [*CODE, ctx.out, "--coder", "zork"], 2,
         "unknown backend 'zork'", a_study),
    # --- options out of range, empty arguments ------------------------------------------------
    Case("--out \"\" (once the current folder)",
         lambda ctx: ["" if a == ctx.out else a for a in run_sample(ctx)], 2,
         "--out was given an empty value"),
    Case("--cache-dir= (empty)", lambda ctx: run_sample(ctx, "--cache-dir="), 2,
         "--cache-dir was given an empty value"),
    Case("--cache-tag=YWJjZA== is a value, not an empty one",
         lambda ctx: run_sample(ctx, "--cache-tag=YWJjZA==", "--dry-run"), 0, ""),
    Case("an empty run directory for show", lambda ctx: ["show", ""], 2,
         "an empty argument"),
    Case("--instances , (no id)", lambda ctx: run_sample(ctx, "--instances", ","), 2,
         "--instances names no instance id"),
    Case("--sample past the data", lambda ctx: unlimited(run_sample(ctx, "--sample", "100000")),
         2, "the data holds only"),
    Case("--seed without --sample", lambda ctx: run_sample(ctx, "--seed", "3"), 2,
         "give --sample too"),
    Case("--dry-run --format xml", lambda ctx: run_sample(ctx, "--dry-run", "--format", "xml"),
         2, "--format must be table or json"),
    Case("--processes 0", lambda ctx: run_sample(ctx, "--processes", "0"), 2, "--processes"),
    Case("a design given to unseen run with --processes 2",
         lambda ctx: ["run", "--data", str(ctx.tmp / "d.toml"), "-b", "sim", "--processes",
                      "2", "-q", "--no-cache", "--out", ctx.out], 2,
         "plans its own order of calls", design(TINY)),
    Case("director run into a file", lambda ctx: [str(ctx.tmp / "afile") if a == ctx.out else a
                                                  for a in director(ctx)], 2, "afile",
         both(design(TINY), a_file("afile"))),
    # --- environment variables ----------------------------------------------------------------
    Case("OPENAI_BASE_URL that is no URL", lambda ctx: run_openai(ctx, base_url=""), 2,
         "'notaurl' is no http", env(OPENAI_BASE_URL="notaurl"), check=no_calls),
    Case("OPENAI_BASE_URL ftp:// (the fake server's address)",
         lambda ctx: run_openai(ctx, base_url=""), 2, "is no http:// or https:// URL",
         lambda ctx: ctx.monkeypatch.setenv(
             "OPENAI_BASE_URL", ctx.fp.openai_base_url.replace("http", "ftp")), check=no_calls),
    Case("OPENAI_BASE_URL with port 99999", lambda ctx: run_openai(ctx, base_url=""), 2,
         "99999", env(OPENAI_BASE_URL="http://127.0.0.1:99999/v1"), check=no_calls),
    Case("OPENAI_BASE_URL empty", lambda ctx: run_openai(ctx, base_url=""), 2,
         "the server URL '' is no", env(OPENAI_BASE_URL=""), check=no_calls),
    Case("GEMINI_BASE_URL that is no URL (once retried, every call)", gemini, 2,
         "'notaurl' is no http", env(GEMINI_BASE_URL="notaurl"), check=no_calls),
    Case("UNSEEN_MAX_IMAGE_PIXELS=abc", run_sample, 2, "UNSEEN_MAX_IMAGE_PIXELS must be",
         env(UNSEEN_MAX_IMAGE_PIXELS="abc")),
    Case("UNSEEN_MAX_IMAGE_PIXELS=10", run_sample, 2, "over the limit of 10",
         env(UNSEEN_MAX_IMAGE_PIXELS="10")),
    Case("UNSEEN_PAGER pointing nowhere (printed directly)", show, 0, "",
         both(a_run_in("", readonly=False), pager("/nonexistent/pager")), check=shown),
    Case("UNSEEN_PAGER with an unclosed quote", show, 0, "cannot be read",
         both(a_run_in("", readonly=False), pager('less "x')), check=shown),
    Case("UNSEEN_PAGER a script that cannot start", show, 0, "cannot be started",
         both(a_run_in("", readonly=False), bad_script, pager("{tmp}/pager")), check=shown),
    # --- the data commands --------------------------------------------------------------------
    Case("data rooms --size axb", data("rooms", "--out", "{tmp}/o", "--size", "axb"), 2,
         "--size must be WIDTHxHEIGHT"),
    Case("data rooms --size 0x0", data("rooms", "--out", "{tmp}/o", "--size", "0x0"), 2,
         "each side must be"),
    Case("data rooms --out a file", data("rooms", "--out", "{tmp}/afile", "--n", "1"), 2,
         "afile is a file, not a folder", a_file("afile")),
    Case("data stats on no folder", data("stats", "{tmp}/none"), 2, "not found"),
    Case("data stats --format nope", lambda ctx: ["data", "stats", str(ctx.sample), "--format",
                                                  "nope"], 2, "--format must be"),
    Case("data director --set zzz", data("director", "--out", "{tmp}/o", "--set", "zzz"), 2,
         "unknown scene set 'zzz'"),
    Case("data director --size 1x1 (once exit 70)",
         data("director", "--out", "{tmp}/o", "--size", "1x1", "--n", "1"), 2,
         "no layout renders with every digit readable at 1x1"),
    Case("data director --out a file", data("director", "--out", "{tmp}/afile", "--n", "1"), 2,
         "afile", a_file("afile")),
    Case("data build on no folder", data("build", "--scenefun3d", "{tmp}/none", "--out",
                                         "{tmp}/o"), 2, "none: not a directory"),
    Case("data build on a file", data("build", "--scenefun3d", "{tmp}/afile", "--out",
                                      "{tmp}/o"), 2, "not a directory", a_file("afile")),
    Case("data sample --out a file", data("sample", "--out", "{tmp}/afile"), 2, "afile",
         a_file("afile")),
    Case("data review on no folder", data("review", "{tmp}/none"), 2, "no instances.jsonl"),
    Case("cache stats --cache-dir a file",
         lambda ctx: ["cache", "stats", "--cache-dir", str(ctx.tmp / "afile")], 2,
         "is a file, not a folder", a_file("afile")),
    # --- a cache folder the machine will not make ---------------------------------------------
    Case("--cache-dir a new folder on a read-only file system (once refused)",
         lambda ctx: run_openai(ctx, "--cache-dir", str(ctx.tmp / "ro" / "cache")), 0,
         "the folder cannot be created", readonly_parent, check=two_journaled),
    Case("the default user cache on a read-only file system (once refused)", cached_run, 0,
         "the folder cannot be created",
         both(readonly_parent, lambda ctx: ctx.monkeypatch.setenv(
             "XDG_CACHE_HOME", str(ctx.tmp / "ro" / "xdg"))), check=two_journaled),
]
