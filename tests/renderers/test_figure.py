"""``unseen figure``: a grid of instances × (model, strategy) with the predicted box in red
and the true box in green."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import unseen
from unseen.engine.types import Instance
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.evals.scenefunri.report.summary import figure_cells
from unseen.renderers.figures import GridCell, GridRow, prediction_grid

IDS = ["syn-000", "syn-003", "syn-007"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("figure")
    data = write_test_set(tmp / "data")
    unseen.run(data, ["direct", "direct:temperature=0.5"], ["sim", "sim:strong", "baseline:center"],
               out=tmp / "run", cache=False, progress=False)
    return tmp / "run"


def is_red(px) -> bool:
    r, g, b = (int(v) for v in px[:3])
    return r > 180 and g < 90 and b < 90


def is_green(px) -> bool:
    r, g, b = (int(v) for v in px[:3])
    return g > 150 and r < 110 and b < 110


def edge_midpoints(box) -> list[tuple[float, float]]:
    x1, y1, x2, y2 = box
    return [((x1 + x2) / 2, y1), ((x1 + x2) / 2, y2), (x1, (y1 + y2) / 2), (x2, (y1 + y2) / 2)]


def colours_at(png: np.ndarray, layout, row: int, col: int, box) -> list[np.ndarray]:
    out = []
    for x, y in edge_midpoints(box):
        px, py = layout.to_png(row, col, x, y)
        out.append(png[round(py), round(px)])
    return out


def test_grid_red_prediction_green_truth_and_unanswered(tmp_path):
    """A hand-made grid on a grey image: every edge of each box has its colour."""
    img = tmp_path / "grey.png"
    Image.new("RGB", (400, 300), (128, 128, 128)).save(img)
    inst = Instance(id="x", image=str(img), width=400, height=300,
                    text={"instruction": "Open the drawer of the cabinet under the window, "
                                         "the one on the left next to the radiator"},
                    truth={"box": [40, 40, 120, 110]})
    rows = [GridRow("model-a\ndirect", [GridCell(box=[220, 150, 360, 260]),
                                        GridCell(note="unanswered (parse)")]),
            GridRow("model-b\ncot", [None, GridCell(box=[40, 40, 120, 110])])]
    out = tmp_path / "grid.png"
    layout = prediction_grid([inst, inst], rows, out, dpi=100)
    png = np.asarray(Image.open(out).convert("RGB"))
    assert (layout.n_rows, layout.n_cols) == (2, 2)
    assert png.shape[:2] == (layout.height, layout.width)
    assert all(is_red(c) for c in colours_at(png, layout, 0, 0, [220, 150, 360, 260]))
    assert all(is_green(c) for c in colours_at(png, layout, 0, 0, [40, 40, 120, 110]))
    # the unanswered cell and the missing one: the truth, and no red anywhere in the cell
    for row, col in ((0, 1), (1, 0)):
        assert all(is_green(c) for c in colours_at(png, layout, row, col, [40, 40, 120, 110]))
        (x0, y0), (x1, y1) = layout.to_png(row, col, 0, 0), layout.to_png(row, col, 400, 300)
        cell = png[round(y0) + 2:round(y1) - 2, round(x0) + 2:round(x1) - 2].reshape(-1, 3)
        assert not any(is_red(p) for p in cell)
        # dimmed: the grey image shows lighter than it is
        assert png[round(y0) + 5, round(x0) + 5].mean() > 160
    # cells lie on a grid: same rows share y, same columns share x
    assert layout.cells[(0, 0)][0] == layout.cells[(1, 0)][0]
    assert layout.cells[(0, 0)][1] == layout.cells[(0, 1)][1]
    assert layout.cells[(1, 0)][1] > layout.cells[(0, 0)][1]


def test_figure_command_from_runs(run_dir, tmp_path, run_main):
    out = tmp_path / "fig.png"
    code, stdout, err = run_main(["figure", str(run_dir), "--instances", ",".join(IDS),
                                  "--out", str(out)])
    assert code == 0, err
    assert out.is_file()
    assert "6 rows × 3 columns" in stdout
    with Image.open(out) as im:
        assert "×".join(map(str, im.size)) in stdout

    # the same grid, drawn here to know where each cell landed
    insts, rows = figure_cells([run_dir], IDS)
    assert [i.id for i in insts] == IDS
    assert len(rows) == 6 and all(len(r.cells) == 3 for r in rows)
    assert rows[0].label.startswith("sim-default (sim)") and rows[-1].label.startswith("center (rule)")
    layout = prediction_grid(insts, rows, tmp_path / "again.png")
    png = np.asarray(Image.open(tmp_path / "again.png").convert("RGB"))
    assert (layout.n_rows, layout.n_cols) == (6, 3)
    answered = 0
    for r, row in enumerate(rows):
        for c, cell in enumerate(row.cells):
            # the prediction is drawn on top: its edges are red; the truth's edges green where
            # the prediction does not cover them (sim boxes often overlap the truth)
            truth = insts[c].truth["box"]
            assert sum(is_green(p) for p in colours_at(png, layout, r, c, truth)) >= 1, (r, c)
            if cell is not None and cell.box is not None:
                answered += 1
                assert sum(is_red(p) for p in colours_at(png, layout, r, c, cell.box)) >= 3, (r, c)
    assert answered >= 15


def test_figure_unknown_instance_is_one_line_error(run_dir, tmp_path, run_main):
    code, out, err = run_main(["figure", str(run_dir), "--instances", "syn-000,nope",
                               "--out", str(tmp_path / "f.png")])
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "nope" in lines[0]
    assert not (tmp_path / "f.png").exists()
