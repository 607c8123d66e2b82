"""``unseen data``: make and inspect datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .common import (
    UserError,
    err,
    out,
)

data_app = typer.Typer(no_args_is_help=True, help="Make and inspect datasets.")


@data_app.command("sample")
def data_sample(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the sample set into.")],
) -> None:
    """Copy the bundled sample SceneFunRI set (65 hidden targets in 8 procedural rooms)."""
    from ..evals.scenefunri import load_dataset
    from ..evals.scenefunri.data.sample import copy_sample

    folder = copy_sample(out_dir)
    ds = load_dataset(folder)
    out.print(f"wrote {len(ds)} instances to {folder} (fingerprint {ds.fingerprint})")


MAX_SIDE = 4096  # the Director design's limit too (evals/director/study/design.py)


def _size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` → (width, height); a user error otherwise."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UserError(f"--size must be WIDTHxHEIGHT, e.g. 640x480, got {text!r}") from None
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):  # 60000x60000: 13 GiB
        raise UserError(f"--size: each side must be 1 to {MAX_SIDE} pixels, got {text!r}")
    return width, height


@data_app.command("build")
def data_build(
    scenefun3d: Annotated[Path, typer.Option("--scenefun3d", help="SceneFun3D root (folders of visits).")],
    out_dir: Annotated[Path, typer.Option("--out", help="SceneFunRI folder to write.")],
    stride: Annotated[int, typer.Option(min=1, help="Use every N-th frame.")] = 1,
    v_min: Annotated[float, typer.Option(help="Keep frames with projection visibility V >= this.")] = 1.0,
    vo_max: Annotated[float, typer.Option(help="Keep frames with occlusion visibility V_o <= this.")] = 0.0,
    occlusion: Annotated[str, typer.Option(help="Occlusion from the 'mesh' (rendered) or the 'depth' PNGs.")] = "mesh",
    min_box: Annotated[float, typer.Option(help="Drop boxes with a side shorter than this (px).")] = 8.0,
    dedupe_images: Annotated[bool, typer.Option(help="Drop near-duplicate images within a visit.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the frame kept per description (a hash of visit, description and seed).")] = 0,
) -> None:
    """Build SceneFunRI instances from SceneFun3D scans: hidden targets inside the view."""
    from ..evals.scenefunri.data.build import BuildParams, build
    from ..evals.scenefunri.data.scenefun3d_types import SceneFun3DError

    if occlusion not in ("mesh", "depth"):
        raise UserError(f"--occlusion must be mesh or depth, got {occlusion!r}")
    params = BuildParams(v_min=v_min, vo_max=vo_max, stride=stride, occlusion=occlusion,  # type: ignore[arg-type]
                         min_box_px=min_box, dedupe_images=dedupe_images, seed=seed)
    try:
        s = build(scenefun3d, out_dir, params)
    except (ValueError, SceneFun3DError) as exc:  # a malformed scan names its file
        raise UserError(str(exc)) from None
    out.print(f"{s.visits} visits, {s.frames} frames, {s.pairs} (frame, description) pairs: "
              f"{s.candidates} candidates, [bold]{s.kept} kept[/] in {out_dir}")
    for reason, n_dropped in s.dropped.most_common():
        out.print(f"  dropped {n_dropped:>6}  {reason}")
    review = [json.loads(x) for x in (out_dir / "review.jsonl").read_text().splitlines()]
    flagged = sum(bool(r.get("reasons")) for r in review)
    if s.rejected_in_review:
        out.print(f"{s.rejected_in_review} rejected in an earlier review, left out: "
                  f"{s.kept - s.rejected_in_review} instances in {out_dir / 'instances.jsonl'}")
    out.print(f"{flagged} of {len(review)} instances a person should review, and each one's "
              f"frame pick: {out_dir / 'review.jsonl'}; the funnel: {out_dir / 'build.json'}")
    out.print(f"review them in the browser: unseen data review {out_dir}")


@data_app.command("review")
def data_review(
    build_dir: Annotated[Path, typer.Argument(metavar="BUILD", help="A folder made by `unseen data build`.")],
    who: Annotated[str, typer.Option("--who", help="The reviewer's name, kept with each decision.")] = "reviewer",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port of the local page (0: any free one).")] = 0,
) -> None:
    """Review a build in the browser (paper §3.4): accept each candidate, or reject it as a
    duplicate, for too little visual evidence, for several plausible regions, or other.

    Decisions are kept by instance id in review.jsonl and survive rebuilds; the rejected
    leave instances.jsonl. Stop with Ctrl-C and start again to go on where you stopped.
    """
    import asyncio

    from ..backends.human_web import PageError
    from .data_review import serve_review

    def announce(line: str) -> None:
        err.print(line, soft_wrap=True, highlight=False, markup=False)

    try:
        review = asyncio.run(serve_review(build_dir, who=who, port=port, announce=announce))
    except PageError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        err.print(f"interrupted: every decision so far is saved in {build_dir / 'review.jsonl'}; "
                  "run the same command again to go on", soft_wrap=True, highlight=False)
        raise typer.Exit(130) from None
    c = review.build.counts()
    reasons = ", ".join(f"{k.removeprefix('reject:')} {v}" for k, v in sorted(c.items())
                        if k.startswith("reject:"))
    out.print(f"{c.get('accept', 0)} accepted, {c.get('reject', 0)} rejected"
              + (f" ({reasons})" if reasons else "") + f", {c.get('undecided', 0)} undecided; "
              f"{len(review.build.instances)} instances in {build_dir / 'instances.jsonl'}")


@data_app.command("rooms")
def data_rooms(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write SceneFun3D visits into.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Rooms.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same rooms.")] = 0,
    size: Annotated[str, typer.Option(help="Frame size WIDTHxHEIGHT.")] = "640x480",
) -> None:
    """Generate procedural rooms in SceneFun3D's format (scan, annotations, video, mesh)."""
    from ..engine.paths import make_folder
    from ..evals.scenefunri.data.rooms import write_rooms

    width, height = _size(size)
    make_folder(out_dir, "the folder", "choose another --out")  # before any room is drawn
    visits = write_rooms(out_dir, n_rooms=n, seed=seed, size=(width, height),
                         progress=err.is_terminal)
    out.print(f"wrote {len(visits)} visits to {out_dir}")


@data_app.command("stats")
def data_stats(
    folder: Annotated[Path, typer.Argument(help="A SceneFunRI folder (instances.jsonl; build.json when built).")],
    fmt: Annotated[str, typer.Option("--format", help="table, json or md.")] = "table",
    png: Annotated[Path | None, typer.Option(help="Also write a heat map of box centres and sizes.")] = None,
) -> None:
    """Describe a SceneFunRI folder: counts, affordances, box sizes and positions, what the
    fixed rules (center, prior, the best fixed box learned leave-one-scene-out) score, and a
    build's funnel from frames to kept instances."""
    from ..evals.scenefunri import load_dataset
    from ..evals.scenefunri.report.dataset_card import describe, normalized_boxes, render_stats

    if fmt not in ("table", "json", "md"):
        raise UserError(f"--format must be table, json or md, got {fmt!r}")
    ds = load_dataset(folder)
    card = describe(folder, ds)
    if fmt == "table":
        out.print(render_stats(card, fmt))
    else:
        out.print(render_stats(card, fmt), markup=False, highlight=False, soft_wrap=True)
    if png is not None:
        from ..renderers.plots import box_heatmap_png

        box_heatmap_png(normalized_boxes(ds), png, title=str(folder),
                        fixed=[e["box"] for e in card["fixed_boxes"]])
        out.print(f"wrote {png}")


@data_app.command("director")
def data_director(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the PNGs and scenes.jsonl.")],
    set_name: Annotated[str, typer.Option("--set", help="main, rotated or rearranged.")] = "main",
    n: Annotated[int | None, typer.Option("--n", min=1, help="Scenes (default: 160; rotated 150).")] = None,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same scenes.")] = 0,
    size: Annotated[str, typer.Option(help="Image size WIDTHxHEIGHT.")] = "1024x768",
) -> None:
    """Render a Director Task scene set; every answer key is checked two ways."""
    from ..evals.director.scenes.sets import build_set

    width, height = _size(size)
    try:
        path = build_set(set_name, out_dir, n=n, seed=seed, size=(width, height))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    count = len(path.read_text(encoding="utf-8").splitlines())
    out.print(f"wrote {count} scenes of the {set_name} set to {path.parent}")


