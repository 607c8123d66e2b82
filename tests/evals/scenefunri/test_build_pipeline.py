"""The SceneFun3D → SceneFunRI build: projection, V and V_o, boxes, quality control."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from unseen.evals.scenefunri.data.build import (
    FRAME_RULE,
    BuildParams,
    BuildSummary,
    Candidate,
    arkit_to_laser,
    build,
    project,
    select,
    visibility,
)
from unseen.evals.scenefunri.data.scenefun3d import write_visit
from unseen.evals.scenefunri.data.scenefun3d_types import (
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


# A laser → ARKit transform far from the identity: a quarter turn about z and a shift, so a
# scan or a mesh put in the wrong frame lands behind the camera or metres away.
L2A = np.array([[0.0, -1.0, 0.0, 2.0], [1.0, 0.0, 0.0, -1.0], [0.0, 0.0, 1.0, 0.3],
                [0.0, 0.0, 0.0, 1.0]])
# the knob's box in the laser frame: x, z in [-0.05, 0.05], y in [2.97, 3.03]
KNOB_LO, KNOB_HI = np.array([-0.05, 2.97, -0.05]), np.array([0.05, 3.03, 0.05])


def knob_scene(tmp_path):
    """A hand-made visit in the toolkit's frames: the scan and the hires poses in the laser
    frame, the ARKit mesh in the ARKit frame (L2A applied). A knob 3 m ahead behind a panel
    at 1 m (frame 1), and seen from the other side, where it stands in front of the panel
    (frame 2). The annotated points: the knob's 8 corners and 292 points on its faces."""
    knob = box((0.0, 3.0, 0.0), KNOB_HI - KNOB_LO, color=(0.9, 0.8, 0.1), object_id=1)
    panel = box((0.0, 1.0, 0.0), (1.2, 0.05, 1.2), color=(0.4, 0.4, 0.4), object_id=2)
    mesh = merge([knob, panel])  # laser frame
    rng = np.random.default_rng(0)
    corners = np.array([[x, y, z] for x in (KNOB_LO[0], KNOB_HI[0])
                        for y in (KNOB_LO[1], KNOB_HI[1]) for z in (KNOB_LO[2], KNOB_HI[2])])
    face = rng.uniform(KNOB_LO, KNOB_HI, size=(292, 3))
    axis, side = rng.integers(0, 3, 292), rng.integers(0, 2, 292)
    face[np.arange(292), axis] = np.where(side, KNOB_HI[axis], KNOB_LO[axis])
    panel_pts = rng.uniform([-0.6, 0.975, -0.6], [0.6, 0.975, 0.6], size=(200, 3))
    laser = np.vstack([corners, face, panel_pts])
    frames = []
    for ts, pose in (("1.000", cam_to_world((0, 0, 0), 1)), ("2.000", cam_to_world((0, 6, 0), -1))):
        cam = Camera(K=K.K, world_to_camera=np.linalg.inv(pose), width=K.width, height=K.height)
        out = render([mesh], cam, supersample=1)
        frames.append(FrameData(ts, out.color, out.depth, K, pose))
    arkit_vertices = mesh.vertices @ L2A[:3, :3].T + L2A[:3, 3]
    video = VideoData("12345678", frames, L2A, arkit_vertices, mesh.faces,
                      np.full((len(mesh.vertices), 3), 128, dtype=np.uint8))
    data = VisitData("100001", laser, np.full((len(laser), 3), 200, dtype=np.uint8), None,
                     [Annotation("knob", np.arange(300), "rotate"),
                      Annotation("junk", np.arange(300, 310), "exclude")],
                     [Description("d1", ["knob"], "Turn the knob behind the panel")], [video])
    write_visit(tmp_path / "scans", data)
    return tmp_path / "scans", laser[:300]


@pytest.mark.parametrize("occlusion", ["mesh", "depth"])
def test_hidden_knob_kept_with_the_pinhole_box(tmp_path, occlusion):
    """The toolkit projects the laser scan with the hires poses and no transform
    (SceneFun3D/scenefun3d examples/project_rgb_on_laser_scan.py, main(): get_laser_scan and
    get_camera_trajectory(pose_source="colmap") into PointCloudToImageMapper.compute_mapping);
    its mesh reaches the laser frame through the inverse transform
    (examples/show_annotations.py: arkit_mesh.transform(np.linalg.inv(transform))).
    Moving the scan with the transform puts the knob behind the camera; leaving the mesh in
    the ARKit frame (or moving it the wrong way) leaves no panel in front of the knob."""
    root, _ = knob_scene(tmp_path)
    out = tmp_path / f"out-{occlusion}"
    summary = build(root, out, BuildParams(occlusion=occlusion), progress=False)
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    assert summary.kept == 1 and len(rows) == 1
    assert summary.dropped["not fully occluded (V_o)"] == 1  # frame 2: knob in front
    r = rows[0]
    assert r["meta"]["timestamp"] == "1.000" and r["meta"]["V"] == 1.0 and r["meta"]["V_o"] == 0.0
    assert r["meta"]["affordance"] == "rotate" and r["meta"]["annotations"] == ["knob"]
    # frame 1 looks along laser +y from the origin: camera (x, y, z) = (X, −Z, Y), so
    # u = 400·X/Y + 80, v = −400·Z/Y + 60; the extremes are the near corners (Y = 2.97):
    # 80 ± 400·0.05/2.97 and 60 ± 400·0.05/2.97
    d = 400 * 0.05 / 2.97
    assert r["box"] == pytest.approx([80 - d, 60 - d, 80 + d, 60 + d], abs=0.006)
    assert (out / r["image"]).is_file()


def test_transform_maps_laser_to_arkit_and_the_mesh_comes_back_by_its_inverse():
    """SceneFun3D/scenefun3d utils/data_parser.py, get_transform: "converts coordinates from
    the Faro laser scan coordinate system to the ARKit coodinate system"; the ARKit mesh goes
    back with np.linalg.inv(transform) (examples/show_annotations.py)."""
    laser = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    # by hand: R (a quarter turn about z) takes (x, y, z) to (−y, x, z), then + (2, −1, 0.3)
    arkit = np.array([[-2.0 + 2.0, 1.0 - 1.0, 3.0 + 0.3], [2.0, -1.0, 0.3]])
    np.testing.assert_allclose(arkit_to_laser(arkit, L2A), laser, atol=1e-12)


def test_depth_rule_is_the_toolkits():
    """SceneFun3D/scenefun3d utils/fusion_util.py, PointCloudToImageMapper.compute_mapping:
    the pixel is np.round of the projection, and a point is visible when
    |depth − z| <= 0.25·depth there; a depth of 0 (unknown, NaN here) shows nothing."""
    depth = np.full((4, 20), 2.0)
    depth[:, 10] = 9.0  # column 10 differs: a lookup at floor(10.6) would read it
    depth[:, 12] = np.nan
    uv = np.array([[3.2, 1.0], [3.2, 1.0], [3.2, 1.0], [3.2, 1.0], [10.6, 1.0], [12.0, 1.0]])
    z = np.array([2.5, 2.51, 1.5, 1.49, 2.0, 2.0])
    v, v_o, inside = visibility(uv, z, 20, 4, depth, "depth", BuildParams())
    assert v == 1.0 and inside.all()
    # visible: z = 2.5 (|2 − 2.5| = 0.5 <= 0.5), z = 1.5, and the point read at round(10.6) = 11
    assert v_o == pytest.approx(3 / 6)
    v, v_o, _ = visibility(uv[:1], np.array([2.5]), 20, 4, depth, "depth",
                           BuildParams(depth_tol_rel=0.2))
    assert v_o == 0.0  # the tolerance is the parameter


def test_thresholds_are_parameters(tmp_path):
    root, _ = knob_scene(tmp_path)
    # allowing visible targets keeps both frames' candidates; one frame per description
    s = build(root, tmp_path / "o1", BuildParams(vo_max=1.0), progress=False)
    assert s.candidates == 2 and s.kept == 1
    assert s.dropped["another frame chosen for the description"] == 1
    s = build(root, tmp_path / "o2", BuildParams(min_box_px=500), progress=False)
    assert s.kept == 0 and s.dropped["box too small"] == 1


def _cand(ts: str, x: float, desc: str = "d1") -> Candidate:
    return Candidate("100001", "12345678", ts, Path(f"{ts}.jpg"), 160, 120, desc,
                     f"Turn the knob {desc}", ["knob"], "rotate", 1.0, 0.0, [x, 50, x + 10, 60])


def test_frame_pick_is_the_hash_rule_and_blind_to_the_box():
    """One frame per description, at index sha256("visit|desc|seed") mod n of its frames in
    (video, timestamp) order: the same frame wherever the boxes lie and in whatever order
    the candidates come."""
    params = BuildParams(dedupe_images=False)
    stamps = ["9.5", "10.0", "10.25", "11.0", "100.0"]  # numeric order, not text order
    want = int.from_bytes(hashlib.sha256(b"100001|d1|0").digest()[:8], "big") % 5
    for xs in ([5, 40, 75, 110, 145], [145, 110, 75, 40, 5], [75, 75, 75, 75, 75]):
        cands = [_cand(ts, x) for ts, x in zip(stamps, xs, strict=True)]
        for order in (cands, cands[::-1]):
            summary = BuildSummary()
            (c,) = select(list(order), params, summary)
            assert c.timestamp == stamps[want] and c.pick["index"] == want
            assert c.pick["n"] == 5 and c.pick["rule"] == FRAME_RULE
            assert summary.dropped["another frame chosen for the description"] == 4
    picks = {select([_cand(ts, 5) for ts in stamps], BuildParams(dedupe_images=False, seed=s),
                    BuildSummary())[0].timestamp for s in range(12)}
    assert len(picks) >= 3  # the seed moves the pick


def test_build_writes_the_funnel_and_a_review_entry_per_instance(tmp_path):
    root, _ = knob_scene(tmp_path)
    s = build(root, tmp_path / "o", BuildParams(vo_max=1.0), progress=False)
    doc = json.loads((tmp_path / "o" / "build.json").read_text())
    assert (doc["visits"], doc["frames"], doc["descriptions"], doc["pairs"]) == (1, 2, 1, 2)
    assert (doc["candidates"], doc["kept"]) == (2, 1) == (s.candidates, s.kept)
    assert doc["dropped"] == {"another frame chosen for the description": 1}
    assert doc["frame_rule"] == FRAME_RULE and doc["params"]["vo_max"] == 1.0
    (entry,) = [json.loads(x) for x in (tmp_path / "o" / "review.jsonl").read_text().splitlines()]
    want = int.from_bytes(hashlib.sha256(b"100001|d1|0").digest()[:8], "big") % 2
    assert entry["id"] == "100001-d1" and entry["reasons"] == []
    assert entry["frame"] == {"rule": FRAME_RULE, "seed": 0, "n": 2, "index": want}
    # the default thresholds: every (frame, description) pair is a candidate or a drop
    s = build(root, tmp_path / "o2", progress=False)
    pair_drops = ("target behind the camera", "not inside the view (V)",
                  "not fully occluded (V_o)")
    assert s.pairs == s.candidates + sum(s.dropped[k] for k in pair_drops)
    assert s.candidates == s.kept + sum(v for k, v in s.dropped.items() if k not in pair_drops)


def test_repeated_instruction_and_missing_root(tmp_path):
    with pytest.raises(ValueError, match="not a directory|no SceneFun3D visits"):
        build(tmp_path / "nothing", tmp_path / "o", progress=False)


def test_cli_build_and_a_malformed_scan(tmp_path, run_main):
    root, _ = knob_scene(tmp_path)
    code, out, _ = run_main(["data", "build", "--scenefun3d", str(root), "--out",
                             str(tmp_path / "o")])
    assert code == 0 and "1 kept" in out and "not fully occluded (V_o)" in out
    assert "0 of 1 instances a person should review" in out
    # --seed reaches the frame pick: both frames pass with --vo-max 1, and the seeds pick both
    picks = set()
    for seed in range(6):
        run_main(["data", "build", "--scenefun3d", str(root), "--out", str(tmp_path / f"s{seed}"),
                  "--vo-max", "1", "--seed", str(seed)])
        (entry,) = [json.loads(x) for x in (tmp_path / f"s{seed}" / "review.jsonl").read_text()
                    .splitlines()]
        assert entry["frame"]["seed"] == seed
        picks.add(entry["frame"]["index"])
    assert picks == {0, 1}
    # the dataset card of a build output carries its funnel
    code, out, _ = run_main(["data", "stats", str(tmp_path / "o"), "--format", "md"])
    assert code == 0 and "| (frame, description) pairs | 2 |" in out
    assert "| candidates | 1 |" in out and "| kept | 1 |" in out
    assert "|   dropped: not fully occluded (V_o) | 1 |" in out
    (root / "100001" / "100001_annotations.json").write_text("{not json")
    code, _, err = run_main(["data", "build", "--scenefun3d", str(root), "--out",
                             str(tmp_path / "o2")])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "100001_annotations.json" in lines[0]


def test_review_decisions_survive_a_rebuild(tmp_path, run_main):
    """`unseen data review` keeps decisions by instance id in review.jsonl; a rebuild into
    the same folder keeps them, and a rejected instance stays out of instances.jsonl."""
    from unseen.evals.scenefunri.data.review import Build, Decision

    root, _ = knob_scene(tmp_path)
    out = tmp_path / "o"
    build(root, out, BuildParams(), progress=False)
    (iid,) = [x["id"] for x in Build(out).instances]
    Build(out).decide(iid, Decision(verdict="reject", reason="evidence", by="ann"))
    assert (out / "instances.jsonl").read_text() == ""
    code, text, _ = run_main(["data", "build", "--scenefun3d", str(root), "--out", str(out)])
    assert code == 0 and "1 kept" in text and "1 rejected in an earlier review, left out" in text
    assert (out / "instances.jsonl").read_text() == ""
    (entry,) = [json.loads(x) for x in (out / "review.jsonl").read_text().splitlines()]
    assert entry["decision"]["reason"] == "evidence" and entry["frame"]["seed"] == 0
    assert json.loads((out / "build.json").read_text())["rejected_in_review"] == 1
    Build(out).decide(iid, Decision(verdict="accept", by="ben"))  # a change of mind
    summary = build(root, out, BuildParams(), progress=False)
    assert summary.rejected_in_review == 0
    assert [json.loads(x)["id"] for x in (out / "instances.jsonl").read_text().splitlines()] == [iid]


@pytest.mark.parametrize("damage", [b"", b"\xff\xd8\xff\xe0 not really a jpeg " * 4])
@pytest.mark.parametrize("dedupe", [True, False])
def test_an_empty_or_undecodable_frame_is_one_line_naming_it(tmp_path, run_main, damage, dedupe):
    """The issue: a zero-byte or undecodable frame ended `data build` in a traceback."""
    root, _ = knob_scene(tmp_path)
    frame = next(p for p in root.rglob("*.jpg") if "1.000" in p.name)
    frame.write_bytes(damage)
    code, _, err = run_main(["data", "build", "--scenefun3d", str(root), "--out",
                             str(tmp_path / "o"), "--dedupe-images" if dedupe else
                             "--no-dedupe-images"])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert str(frame) in lines[0] and ("empty" in lines[0] or "not a readable" in lines[0])
