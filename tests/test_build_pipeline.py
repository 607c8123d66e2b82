"""The SceneFun3D → SceneFunRI build: projection, V and V_o, boxes, quality control."""

import json

import numpy as np
import pytest

from unseen.evals.scenefunri.build import BuildParams, build, project
from unseen.evals.scenefunri.scenefun3d import write_visit
from unseen.evals.scenefunri.scenefun3d_types import (
    Annotation,
    Description,
    Frame,
    FrameData,
    Intrinsics,
    VideoData,
    VisitData,
)
from unseen.renderers.camera import Camera
from unseen.renderers.mesh import box, merge
from unseen.renderers.raster import render

K = Intrinsics(width=160, height=120, fx=400.0, fy=400.0, cx=80.0, cy=60.0)


def cam_to_world(position, forward_y: int) -> np.ndarray:
    """A camera at ``position`` looking along world +y (forward_y=1) or −y (−1), z up."""
    m = np.eye(4)
    x_axis = np.array([forward_y, 0.0, 0.0])  # keeps the frame right-handed both ways
    m[:3, 0], m[:3, 1], m[:3, 2] = x_axis, [0, 0, -1], [0, forward_y, 0]
    m[:3, 3] = position
    return m


def test_projection_matches_the_pinhole_formula():
    frame = Frame("v", "1.000", rgb=None, intrinsics=K, camera_to_world=cam_to_world((0, 0, 0), 1))  # type: ignore[arg-type]
    pts = np.array([[0.1, 2.0, -0.05], [0.0, 4.0, 0.0], [0.0, -1.0, 0.0]])
    uv, z = project(pts, frame)
    # camera coordinates: x = 0.1, y (down) = 0.05, z = 2 → u = 400·0.05 + 80, v = 400·0.025 + 60
    assert uv[0] == pytest.approx([100.0, 70.0]) and z[0] == pytest.approx(2.0)
    assert uv[1] == pytest.approx([80.0, 60.0])
    assert z[2] < 0  # behind the camera


def knob_scene(tmp_path):
    """A knob 3 m ahead behind a panel at 1 m (frame 1), and seen from the other side,
    where it stands in front of the panel (frame 2)."""
    knob = box((0.0, 3.0, 0.0), (0.10, 0.06, 0.10), color=(0.9, 0.8, 0.1), object_id=1)
    panel = box((0.0, 1.0, 0.0), (1.2, 0.05, 1.2), color=(0.4, 0.4, 0.4), object_id=2)
    mesh = merge([knob, panel])
    rng = np.random.default_rng(0)
    # laser points on the knob's surface: random points on its faces
    corners = knob.vertices
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    pts = rng.uniform(lo, hi, size=(300, 3))
    axis = rng.integers(0, 3, 300)
    side = rng.integers(0, 2, 300)
    pts[np.arange(300), axis] = np.where(side, hi[axis], lo[axis])
    panel_pts = rng.uniform([-0.6, 0.975, -0.6], [0.6, 0.975, 0.6], size=(200, 3))
    world = np.vstack([pts, panel_pts])
    # a non-identity laser → ARKit transform; the scan is stored in the laser frame
    a = np.radians(30)
    T = np.eye(4)
    T[:3, :3] = [[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]]
    T[:3, 3] = [0.5, -0.2, 0.1]
    laser = (world - T[:3, 3]) @ T[:3, :3]
    frames = []
    for ts, pose in (("1.000", cam_to_world((0, 0, 0), 1)), ("2.000", cam_to_world((0, 6, 0), -1))):
        cam = Camera(K=K.K, world_to_camera=np.linalg.inv(pose), width=K.width, height=K.height)
        out = render([mesh], cam, supersample=1)
        frames.append(FrameData(ts, out.color, out.depth, K, pose))
    faces = mesh.faces
    video = VideoData("12345678", frames, T, mesh.vertices, faces,
                      np.full((len(mesh.vertices), 3), 128, dtype=np.uint8))
    data = VisitData("100001", laser, np.full((len(laser), 3), 200, dtype=np.uint8), None,
                     [Annotation("knob", np.arange(300), "rotate"),
                      Annotation("junk", np.arange(300, 310), "exclude")],
                     [Description("d1", ["knob"], "Turn the knob behind the panel")], [video])
    write_visit(tmp_path / "scans", data)
    return tmp_path / "scans", pts


@pytest.mark.parametrize("occlusion", ["mesh", "depth"])
def test_hidden_knob_kept_visible_knob_dropped(tmp_path, occlusion):
    root, knob_pts = knob_scene(tmp_path)
    out = tmp_path / f"out-{occlusion}"
    summary = build(root, out, BuildParams(occlusion=occlusion), progress=False)
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    assert summary.kept == 1 and len(rows) == 1
    assert summary.dropped["not fully occluded (V_o)"] == 1  # frame 2: knob in front
    r = rows[0]
    assert r["meta"]["timestamp"] == "1.000" and r["meta"]["V"] == 1.0 and r["meta"]["V_o"] == 0.0
    assert r["meta"]["affordance"] == "rotate" and r["meta"]["annotations"] == ["knob"]
    # the box is the bounding box of the projected knob points
    frame = Frame("v", "1.000", rgb=None, intrinsics=K, camera_to_world=cam_to_world((0, 0, 0), 1))  # type: ignore[arg-type]
    uv, _ = project(knob_pts, frame)
    assert r["box"] == pytest.approx([uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(),
                                      uv[:, 1].max()], abs=0.01)
    assert (out / r["image"]).is_file()


def test_thresholds_are_parameters(tmp_path):
    root, _ = knob_scene(tmp_path)
    # allowing visible targets keeps both frames' candidates; one frame per description
    s = build(root, tmp_path / "o1", BuildParams(vo_max=1.0), progress=False)
    assert s.candidates == 2 and s.kept == 1
    assert s.dropped["another frame chosen for the description"] == 1
    s = build(root, tmp_path / "o2", BuildParams(min_box_px=500), progress=False)
    assert s.kept == 0 and s.dropped["box too small"] == 1


def test_repeated_instruction_and_missing_root(tmp_path):
    with pytest.raises(ValueError, match="not a directory|no SceneFun3D visits"):
        build(tmp_path / "nothing", tmp_path / "o", progress=False)


def test_cli_build_and_a_malformed_scan(tmp_path, run_main):
    root, _ = knob_scene(tmp_path)
    code, out, _ = run_main(["data", "build", "--scenefun3d", str(root), "--out",
                             str(tmp_path / "o")])
    assert code == 0 and "1 kept" in out and "not fully occluded (V_o)" in out
    (root / "100001" / "100001_annotations.json").write_text("{not json")
    code, _, err = run_main(["data", "build", "--scenefun3d", str(root), "--out",
                             str(tmp_path / "o2")])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "100001_annotations.json" in lines[0]
