"""The hostile set's cases about a user's files (``tests/cli/test_hostile_inputs.py`` runs
them with the rest): ``instances.jsonl`` fields of every wrong type and images that cannot be
sent, run configuration files, model-profile and price files, study designs and scene folders,
and the run directories the views read, damaged. Each ends in one line and exit 2."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from hostile import (
    TINY,
    Case,
    Ctx,
    Setup,
    a_run_in,
    a_study,
    both,
    changed,
    dataset,
    design,
    director,
    first_record,
    run_data,
    run_sample,
)


def png_header(width: int, height: int) -> bytes:
    """A PNG that says it is ``width`` x ``height`` (its pixels a few bytes of zeros)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                                0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 10)) + chunk(b"IEND", b""))


def jpeg() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (640, 480)).save(buf, "JPEG")
    return buf.getvalue()


def an_image(name: str, data: bytes | None = None) -> Setup:
    """``images/name`` in the case's dataset: ``data``, or the first record's image's bytes."""

    def setup(ctx: Ctx) -> None:
        target = Path(ctx.data) / "images" / name
        if data is None:
            shutil.copy(ctx.sample / first_record(ctx)["image"], target)
        else:
            target.write_bytes(data)

    return setup


def image_case(what: str, name: str, fragment: str, data: bytes | None = None) -> Case:
    return Case(f"dataset: {what}", run_data, 2, fragment,
                dataset(changed(image=f"images/{name}"), prep=an_image(name, data)))


def raw(line: Callable[[dict], str]) -> Callable[[dict], str]:
    return line


def without(key: str) -> Callable[[dict], dict]:
    return lambda rec: {k: v for k, v in rec.items() if k != key}


def user_file(name: str, content: str | bytes) -> Setup:
    def setup(ctx: Ctx) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        (ctx.tmp / name).write_bytes(data)

    return setup


def config(text: str) -> Setup:
    """A run configuration ``c.toml``; ``{sample}`` and ``{out}`` name the case's."""
    return lambda ctx: user_file("c.toml", text.replace("{sample}", str(ctx.sample))
                                 .replace("{out}", ctx.out))(ctx)


def with_file(option: str, name: str = "f.toml") -> Callable[[Ctx], list[str]]:
    return lambda ctx: run_sample(ctx, option, str(ctx.tmp / name))


GOOD_PRICE = 'pattern = "gpt"\ninput = 1\noutput = 1\ndate = "2025-01-01"\nsource = "x"\n'


def damaged(name: str, change: Callable[[bytes], bytes]) -> Setup:
    """A finished two-trajectory run in ``ctx.out``, its ``name`` then changed."""

    def setup(ctx: Ctx) -> None:
        a_run_in("", readonly=False)(ctx)
        path = Path(ctx.out) / name
        if change is gone:
            path.unlink()
        else:
            path.write_bytes(change(path.read_bytes()))

    return setup


def gone(data: bytes) -> bytes:  # the file is removed (damaged() tells it by identity)
    return b""


def other_benchmark(data: bytes) -> bytes:
    return json.dumps({**json.loads(data), "benchmark": "acme"}).encode()


def view(command: str, *extra: str) -> Callable[[Ctx], list[str]]:
    def make(ctx: Ctx) -> list[str]:
        out = {"export": ["--html", str(ctx.tmp / "html")],
               "figure": ["--out", str(ctx.tmp / "f.png"), "--worst", "1"]}.get(command, [])
        return [command, ctx.out, *out, *extra]

    return make


def scenes(change: Callable[[Path], None]) -> Setup:
    """A copy of the session's scenes in ``tmp/sc``, changed (``change(main folder)``), and
    the tiny design beside it."""

    def setup(ctx: Ctx) -> None:
        shutil.copytree(ctx.scenes, ctx.tmp / "sc")
        change(ctx.tmp / "sc" / "main")
        design(TINY)(ctx)

    return setup


def on_scenes(ctx: Ctx) -> list[str]:
    return director(ctx, "--scenes", str(ctx.tmp / "sc"), scenes=False)


def first_png(main: Path) -> Path:
    return main / "images" / "main-000.png"


def halve(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def study_file(name: str, change: Callable[[bytes], bytes]) -> Setup:
    def setup(ctx: Ctx) -> None:
        a_study(ctx)
        path = Path(ctx.out) / name
        path.write_bytes(change(path.read_bytes()))

    return setup


def analyze(ctx: Ctx, *extra: str) -> list[str]:
    return ["director", "analyze", ctx.out, *extra]


def array_first(data: bytes) -> bytes:
    return b"[1, 2, 3]\n" + data


def not_utf8(data: bytes) -> bytes:
    return b"\xff\xfe" + data


def cut_in(data: bytes) -> bytes:
    return data[: len(data) // 3]


def record_with(**fields: object) -> Callable[[bytes], bytes]:
    def change(data: bytes) -> bytes:
        first, _, rest = data.partition(b"\n")
        rec = {**json.loads(first), **fields}
        return json.dumps({k: v for k, v in rec.items() if v is not DROP}).encode() + b"\n" + rest

    return change


DROP = object()

FILE_CASES = [
    # --- instances.jsonl: each field of the wrong type, missing or empty ----------------------
    Case("dataset: an id that is null", run_data, 2, "'id' must be a str",
         dataset(changed(id=None))),
    Case("dataset: an empty id", run_data, 2, "field 'id' is empty", dataset(changed(id=" "))),
    Case("dataset: an instruction that is a number", run_data, 2,
         "'instruction' must be a str", dataset(changed(instruction=5))),
    Case("dataset: no instruction", run_data, 2, "missing field 'instruction'",
         dataset(without("instruction"))),
    Case("dataset: an empty instruction", run_data, 2, "field 'instruction' is empty",
         dataset(changed(instruction=""))),
    Case("dataset: an image that is a number", run_data, 2, "'image' must be a str",
         dataset(changed(image=5))),
    Case("dataset: no image field", run_data, 2, "missing field 'image'",
         dataset(without("image"))),
    Case("dataset: an empty image name", run_data, 2, "image not found",
         dataset(changed(image=""))),
    Case("dataset: a box that is an object", run_data, 2, "'box' must be a list",
         dataset(changed(box={"x": 1}))),
    Case("dataset: a box that is null", run_data, 2, "'box' must be a list",
         dataset(changed(box=None))),
    Case("dataset: a box of NaN", run_data, 2, "non-finite",
         dataset(raw(lambda rec: json.dumps({**rec, "box": [0, 0, 10, 10]})
                     .replace("[0, 0", "[NaN, 0")))),
    Case("dataset: a box with Infinity", run_data, 2, "non-finite",
         dataset(raw(lambda rec: json.dumps({**rec, "box": [0, 0, 10, 10]})
                     .replace("10, 10]", "Infinity, 10]")))),
    Case("dataset: a box of 1e308", run_data, 2, "bad box",
         dataset(changed(box=[1e308, 0, 1e308, 5]))),
    Case("dataset: a box that is a string", run_data, 2, "'box' must be a list",
         dataset(changed(box="1,2,3,4"))),
    Case("dataset: a line that is a string", run_data, 2, "JSON object", dataset('"hello"')),
    Case("dataset: a line that is null", run_data, 2, "JSON object", dataset("null")),
    Case("dataset: one id twice", run_data, 2, "duplicate id",
         dataset(raw(lambda rec: json.dumps(rec) + "\n" + json.dumps(rec)))),
    # --- instances.jsonl: images that cannot be sent --------------------------------------------
    image_case("a PNG header of 100000x100000", "huge.png", "over the limit",
               png_header(100_000, 100_000)),
    image_case("a PNG header of 0x0", "zero.png", "not a readable image", png_header(0, 0)),
    image_case("a PNG named .txt", "photo.txt", "a PNG image named .txt: name it .png"),
    image_case("a PNG named .jpg", "photo.jpg", "a PNG image named .jpg"),
    image_case("a JPEG named .png", "photo.png", "a JPEG image named .png", jpeg()),
    image_case("a BMP image", "photo.bmp", "the providers take PNG, JPEG or WebP",
               b"BM" + struct.pack("<IHHIIiiHHIIiiII", 58, 0, 0, 54, 40, 1, 1, 1, 24, 0, 4, 0,
                                   0, 0, 0) + b"\0\0\xff\0"),
    Case("dataset: an image that is a folder", run_data, 2, "image not found",
         dataset(changed(image="images/sub"),
                 prep=lambda ctx: (Path(ctx.data) / "images" / "sub").mkdir())),
    Case("dataset: instances.jsonl a folder", lambda ctx: run_data(ctx), 2,
         "no benchmark reads this",
         lambda ctx: (Path(ctx.data) / "instances.jsonl").mkdir(parents=True)),
    Case("dataset: --data a file", lambda ctx: run_data(ctx), 2, "no benchmark reads this",
         lambda ctx: Path(ctx.data).write_text("x")),
    Case("an unknown --benchmark", lambda ctx: run_sample(ctx, "--benchmark", "acme"), 2,
         "unknown benchmark 'acme'"),
    # --- a run configuration file (unseen run CONFIG.toml) -------------------------------------
    Case("config: an unknown key", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "unknown key 'zap'", config('data = "{sample}"\nzap = 1\n')),
    Case("config: data of the wrong type", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "data: Input should be a valid string", config("data = 5\n")),
    Case("config: strategies a string", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "strategies: Input should be a valid list", config('strategies = "direct"\n')),
    Case("config: backends of numbers", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "backends.0", config("backends = [1, 2]\n")),
    Case("config: samples -3", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "samples: Input should be greater than or equal to 1", config("samples = -3\n")),
    Case("config: an empty out (the file's own folder)",
         lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2, "out: an empty path",
         config('data = "{sample}"\nout = ""\nstrategies = ["direct"]\nbackends = ["sim"]\n')),
    Case("config: data that is not there", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "no benchmark reads this", config('data = "nowhere"\nbackends = ["sim"]\n')),
    Case("config: not TOML", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "not valid TOML", config("x = [[[\n")),
    Case("config: not UTF-8", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2, "not UTF-8",
         user_file("c.toml", b"data = \"\xff\"\n")),
    Case("config: no such file", lambda ctx: ["run", str(ctx.tmp / "c.toml")], 2,
         "no run configuration file"),
    Case("config: a folder", lambda ctx: ["run", str(ctx.tmp)], 2,
         "no run configuration file"),
    # --- --profiles and --prices files --------------------------------------------------------
    Case("--profiles: a pattern that is a number", with_file("--profiles"), 2,
         "pattern: Input should be a valid string", user_file("f.toml", "[[profile]]\npattern = 5\n")),
    Case("--profiles: an unknown box convention", with_file("--profiles"), 2,
         "unknown box convention 'weird'",
         user_file("f.toml", '[[profile]]\npattern = "x"\nbox_format = "weird"\n')),
    Case("--profiles: an unknown key", with_file("--profiles"), 2, "zap",
         user_file("f.toml", '[[profile]]\npattern = "x"\nzap = 1\n')),
    Case("--profiles: no [[profile]] table", with_file("--profiles"), 2, "no [[profile]] table",
         user_file("f.toml", "profile = 3\n")),
    Case("--profiles: not TOML", with_file("--profiles"), 2, "not valid TOML",
         user_file("f.toml", "not toml [[[\n")),
    Case("--profiles: not UTF-8", with_file("--profiles"), 2, "not UTF-8",
         user_file("f.toml", b"\xff\xfe")),
    Case("--profiles: a folder", with_file("--profiles", "."), 2, "a folder, not a file"),
    Case("$UNSEEN_PROFILES: no such file", run_sample, 2, "no such file",
         lambda ctx: ctx.monkeypatch.setenv("UNSEEN_PROFILES", str(ctx.tmp / "none.toml"))),
    Case("unseen profiles MODEL with a bad file",
         lambda ctx: ["profiles", "gpt-4o", "--profiles", str(ctx.tmp / "f.toml")], 2,
         "unknown box convention", user_file("f.toml", '[[profile]]\npattern = "x"\n'
                                             'box_format = "weird"\n')),
    Case("--prices: an input that is a word", with_file("--prices"), 2,
         "a number of US dollars", user_file("f.toml", '[[price]]\npattern = "gpt"\ninput = "cheap"\n')),
    Case("--prices: a negative price", with_file("--prices"), 2,
         "greater than or equal to 0",
         user_file("f.toml", "[[price]]\n" + GOOD_PRICE.replace("input = 1", "input = -1"))),
    Case("--prices: a NaN price", with_file("--prices"), 2, "a finite number",
         user_file("f.toml", "[[price]]\n" + GOOD_PRICE.replace("input = 1", "input = nan"))),
    Case("--prices: a batch discount of 2", with_file("--prices"), 2, "batch_discount",
         user_file("f.toml", "[[price]]\n" + GOOD_PRICE + "batch_discount = 2\n")),
    Case("--prices: no date", with_file("--prices"), 2, "date: Field required",
         user_file("f.toml", "[[price]]\n" + GOOD_PRICE.replace('date = "2025-01-01"\n', ""))),
    Case("--prices: not TOML", with_file("--prices"), 2, "not valid TOML",
         user_file("f.toml", "garbage ][")),
    Case("$UNSEEN_PRICES: a folder", run_sample, 2, "a folder, not a file",
         lambda ctx: ctx.monkeypatch.setenv("UNSEEN_PRICES", str(ctx.tmp))),
    # --- the views on a damaged run directory -------------------------------------------------
    Case("compare: run.json cut short", view("compare"), 2, "run.json",
         damaged("run.json", cut_in)),
    Case("show: run.json not UTF-8", view("show", "--no-pager"), 2, "not UTF-8",
         damaged("run.json", not_utf8)),
    Case("curve: run.json empty", view("curve"), 2, "not valid JSON",
         damaged("run.json", lambda data: b"")),
    Case("export: run.json an array", view("export"), 2, "a JSON object was expected",
         damaged("run.json", lambda data: b"[1, 2]\n")),
    Case("figure: a journal line that is an array", view("figure"), 2, "the journal is damaged",
         damaged("trajectories.jsonl", array_first)),
    Case("tui: a journal line not UTF-8", view("tui"), 2, "not UTF-8",
         damaged("trajectories.jsonl", not_utf8)),
    Case("view: a journal record without its status", view("view"), 2, "status: Field required",
         damaged("trajectories.jsonl", record_with(status=DROP))),
    Case("show: a journal record of the wrong types", view("show", "--no-pager"), 2,
         "metrics: Input should be a valid dictionary",
         damaged("trajectories.jsonl", record_with(metrics=[1]))),
    Case("compare: a journal line 100,000 arrays deep", view("compare"), 2,
         "the journal is damaged",
         damaged("trajectories.jsonl", lambda data: b"[" * 100_000 + b"]" * 100_000 + b"\n" + data)),
    Case("compare: no journal", view("compare"), 2, "not a run directory",
         damaged("trajectories.jsonl", gone)),
    Case("curve: a run.json of another benchmark", view("curve"), 2, "acme run",
         damaged("run.json", other_benchmark)),
    Case("compare: a Director study", view("compare"), 2, "director analyze", a_study),
    # --- Director designs and scene folders ---------------------------------------------------
    Case("--scenes: a truncated PNG", on_scenes, 2, "main-000.png: the image is truncated",
         scenes(lambda main: halve(first_png(main)))),
    Case("--scenes: an empty PNG", on_scenes, 2, "main-000.png: an empty file",
         scenes(lambda main: first_png(main).write_bytes(b""))),
    Case("--scenes: a missing PNG", on_scenes, 2, "is missing",
         scenes(lambda main: first_png(main).unlink())),
    Case("--scenes: a scenes.jsonl line cut short", on_scenes, 2, "not a scene record",
         scenes(lambda main: (main / "scenes.jsonl").write_text('{"id": 1\n'))),
    Case("--scenes: a file", lambda ctx: director(ctx, "--scenes", str(ctx.tmp / "d.toml"),
                                                  scenes=False), 2,
         "a part of the path is a file, not a folder", design(TINY)),
    Case("a design of samples = -1", director, 2, "samples: Input should be greater than",
         design(TINY.replace("samples = 2", "samples = -1"))),
    Case("a design with an unknown condition", director, 2, "unknown request 'fly'",
         design(TINY.replace('"move"', '"fly"'))),
    Case("a design of n = \"two\"", director, 2, "sets.main.n",
         design(TINY.replace("n = 2", 'n = "two"'))),
    Case("a design of an unknown scene set", director, 2, "unknown scene set 'zzz'",
         design(TINY.replace("[sets.main]", "[sets.zzz]"))),
    Case("a design with an unknown key", director, 2, "zap",
         design(TINY.replace('name = "b1"', 'name = "b1"\nzap = 3'))),
    Case("a design without batches", director, 2, "batch: Field required",
         design(TINY.split("[[batch]]")[0])),
    Case("an empty design", director, 2, "name: Field required", design("")),
    Case("a design not UTF-8", director, 2, "not UTF-8",
         user_file("d.toml", TINY.encode().replace(b"tiny", b"t\xffny"))),
    Case("a design that is a folder", lambda ctx: director(ctx, design_file="."), 2,
         "no design file"),
    # --- director analyze, codes, sheet, agree ------------------------------------------------
    Case("director analyze on a SceneFunRI run", analyze, 2, "no study.json",
         a_run_in("", readonly=False)),
    Case("director analyze: study.json cut short", analyze, 2, "no readable design",
         study_file("study.json", cut_in)),
    Case("director analyze: a journal line that is an array", analyze, 2,
         "the journal is damaged", study_file("trajectories.jsonl", array_first)),
    Case("director analyze --format nope", lambda ctx: analyze(ctx, "--format", "nope"), 2,
         "--format must be one of", a_study),
    Case("director analyze --design with an unknown condition",
         lambda ctx: analyze(ctx, "--design", str(ctx.tmp / "bad.toml")), 2,
         "unknown request 'fly'",
         both(a_study, design(TINY.replace('"move"', '"fly"'), "bad.toml"))),
    Case("director codes before any coding", lambda ctx: ["director", "codes", ctx.out], 2,
         "has no coded traces", a_study),
    Case("director sheet of a SceneFunRI run",
         lambda ctx: ["director", "sheet", ctx.out, "--out", str(ctx.tmp / "s.csv")], 2,
         "no reasoning traces", a_run_in("", readonly=False)),
    Case("director agree without a sheet", lambda ctx: ["director", "agree", ctx.out,
                                                        str(ctx.tmp / "none.csv")], 2,
         "no sheet", a_study),
]
