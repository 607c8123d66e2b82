"""SceneFun3D reader/writer: round trip, the pose convention, timestamp matching, bad files."""

import json
import math
import re

import numpy as np
import pytest
from plyfile import PlyData

from unseen.evals.scenefunri.data.scenefun3d import (
    list_visits,
    read_depth,
    read_mesh,
    read_motions,
    read_video,
    read_visit,
    usable_annotations,
    write_visit,
)
from unseen.evals.scenefunri.data.scenefun3d_types import (
    Annotation,
    Description,
    FrameData,
    Intrinsics,
    SceneFun3DError,
    VideoData,
    VisitData,
    angle_axis_to_matrix,
    matrix_to_angle_axis,
)

VISIT, VIDEO = "420673", "42445198"
W, H = 64, 48
K = Intrinsics(W, H, 50.5, 51.25, 31.7, 23.9)


def rot(axis, angle):
    a = np.asarray(axis, float)
    return angle_axis_to_matrix(a / np.linalg.norm(a) * angle)


def rigid(r, t):
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = r, t
    return m


def look_at(eye, target, up=(0.0, 1.0, 0.0)):
    """camera→world for a camera at ``eye`` looking at ``target`` (x right, y down, z fwd)."""
    z = np.subtract(target, eye, dtype=float)
    z /= np.linalg.norm(z)
    x = np.cross(-np.asarray(up, float), z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return rigid(np.stack([x, y, z], axis=1), eye)


def make_visit(rng, timestamps=("12345.678", "12345.778", "12345.878")):
    n = 300
    frames = []
    for i, ts in enumerate(timestamps):
        depth = rng.uniform(0.3, 5.0, (H, W))
        depth[0, :3] = [0.0, np.nan, np.inf]  # unknown
        frames.append(FrameData(
            timestamp=ts, rgb=rng.integers(0, 256, (H, W, 3), dtype=np.uint8), depth_m=depth,
            intrinsics=K,
            camera_to_world=rigid(rot(rng.normal(size=3), 0.4 + i), rng.normal(size=3))))
    mesh_v = rng.normal(size=(20, 3))
    video = VideoData(
        video_id=VIDEO, frames=frames,
        laser_to_arkit=rigid(rot([0.2, 1.0, -0.3], 1.1), [0.5, -2.0, 1.25]),
        mesh_vertices=mesh_v, mesh_faces=rng.integers(0, 20, (30, 3)),
        mesh_colors=rng.integers(0, 256, (20, 3), dtype=np.uint8))
    return VisitData(
        visit_id=VISIT,
        points=rng.normal(scale=3.0, size=(n, 3)),
        colors=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        crop_mask=rng.random(n) < 0.8,
        annotations=[Annotation("a-1", np.array([3, 4, 5, 299]), "rotate"),
                     Annotation("a-2", np.array([0, 7]), "exclude")],
        descriptions=[Description("d-1", ["a-1"], "Open the top drawer"),
                      Description("d-2", ["a-1", "a-2"], "Turn the knob — both")],
        videos=[video], motions={"motions": [{"annot_id": "a-1", "motion_type": "rot"}]})


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def written(tmp_path, rng):
    data = make_visit(rng)
    write_visit(tmp_path, data)
    return tmp_path, data


@pytest.mark.parametrize("ascii", [False, True])
def test_round_trip(tmp_path, rng, ascii):
    data = make_visit(rng)
    vdir = write_visit(tmp_path, data, ascii=ascii)
    assert vdir == tmp_path / VISIT and list_visits(tmp_path) == [VISIT]
    scan = PlyData.read(str(vdir / f"{VISIT}_laser_scan.ply"))
    assert scan.text is ascii and scan.byte_order in ("<", "=")
    skipped = {}
    v = read_visit(tmp_path, VISIT, skipped=skipped)
    assert skipped == {VIDEO: 0}
    np.testing.assert_allclose(v.points, data.points, rtol=1e-6, atol=1e-6)
    assert v.points.dtype == np.float64 and v.colors.dtype == np.uint8
    np.testing.assert_array_equal(v.colors, data.colors)
    np.testing.assert_array_equal(v.crop_mask, data.crop_mask)
    assert [(a.annot_id, a.indices.tolist(), a.label) for a in v.annotations] == \
        [(a.annot_id, a.indices.tolist(), a.label) for a in data.annotations]
    assert v.descriptions == data.descriptions
    assert [a.annot_id for a in usable_annotations(v)] == ["a-1"]
    assert read_motions(tmp_path, VISIT) == data.motions

    (video,) = v.videos
    vd = data.videos[0]
    np.testing.assert_allclose(video.laser_to_arkit, vd.laser_to_arkit, atol=1e-12)
    assert [f.timestamp for f in video.frames] == [f.timestamp for f in vd.frames]
    for got, want in zip(video.frames, vd.frames, strict=True):
        assert got.rgb.name == f"{VIDEO}_{want.timestamp}.jpg"
        assert got.intrinsics == want.intrinsics
        np.testing.assert_allclose(got.camera_to_world, want.camera_to_world, atol=1e-6)
        d = read_depth(got)
        assert d.dtype == np.float32 and d.shape == (H, W)
        assert np.isnan(d[0, :3]).all()  # 0, nan, inf written as 0 → read as NaN
        ok = np.isfinite(want.depth_m) & (want.depth_m > 0)
        assert np.abs(d[ok] - want.depth_m[ok]).max() <= 0.0005 + 1e-6
        assert np.isfinite(d[ok]).all()

    verts, faces, cols = read_mesh(video.mesh_path)
    np.testing.assert_allclose(verts, vd.mesh_vertices, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(faces, vd.mesh_faces)
    assert faces.dtype == np.int64 and verts.dtype == np.float64
    np.testing.assert_array_equal(cols, vd.mesh_colors)


def test_write_refuses_existing_folder_unless_overwrite(written):
    root, data = written
    with pytest.raises(FileExistsError):
        write_visit(root, data)
    data.videos[0].frames = data.videos[0].frames[:1]
    write_visit(root, data, overwrite=True)
    assert len(read_visit(root, VISIT).videos[0].frames) == 1


def test_optional_files_absent(tmp_path, rng):
    data = make_visit(rng)
    data.crop_mask, data.motions = None, None
    vd = data.videos[0]
    vd.mesh_vertices = vd.mesh_faces = vd.mesh_colors = None
    for f in vd.frames:
        f.depth_m = None
    write_visit(tmp_path, data)
    v = read_visit(tmp_path, VISIT)
    assert v.crop_mask is None and read_motions(tmp_path, VISIT) is None
    assert v.videos[0].mesh_path is None
    assert all(f.depth is None for f in v.videos[0].frames)
    with pytest.raises(SceneFun3DError, match="no depth"):
        read_depth(v.videos[0].frames[0])


def test_rodrigues_known_and_inverse(rng):
    np.testing.assert_allclose(angle_axis_to_matrix([0, 0, math.pi / 2]),
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    for a in [*rng.normal(size=(50, 3)), [math.pi, 0, 0], [0, 1e-13, 0], [0, 0, 0]]:
        r = angle_axis_to_matrix(a)
        np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(angle_axis_to_matrix(matrix_to_angle_axis(r)), r,
                                   atol=1e-12)


# --- the pose convention -----------------------------------------------------------


def test_projection_of_known_point(tmp_path, rng):
    eye, target = np.array([1.0, 1.5, -2.0]), np.array([0.3, 0.8, 1.0])
    c2w = look_at(eye, target)
    data = make_visit(rng, timestamps=("5.000",))
    data.videos[0].frames[0].camera_to_world = c2w
    write_visit(tmp_path, data)
    (f,) = read_visit(tmp_path, VISIT).videos[0].frames
    np.testing.assert_allclose(f.camera_to_world[:3, 3], eye, atol=1e-9)  # not inverted → fails
    x, y, z = c2w[:3, 0], c2w[:3, 1], c2w[:3, 2]
    for p, (du, dv) in [(target, (0, 0)),
                        (eye + 2.0 * z + 0.3 * x + 0.1 * y, (0.15, 0.05)),
                        (eye + 4.0 * z - 0.4 * x - 0.8 * y, (-0.1, -0.2))]:
        cam = f.world_to_camera @ np.append(p, 1.0)
        assert cam[2] > 0
        u, v = (f.intrinsics.K @ (cam[:3] / cam[2]))[:2]
        assert u == pytest.approx(K.cx + K.fx * du, abs=1e-6)
        assert v == pytest.approx(K.cy + K.fy * dv, abs=1e-6)


def test_traj_file_holds_world_to_camera(written):
    """Pins the file side: a hand-written line is inverted; the writer writes the inverse.
    Source: SceneFun3D/scenefun3d utils/data_parser.py, DataParser.TrajStringToMatrix (the
    line's angle-axis and translation make "extrinsics", and the pose is its inverse)."""
    root, data = written
    vdir = root / VISIT / VIDEO
    want = data.videos[0].frames[0]
    line = (vdir / "hires_poses.traj").read_text().splitlines()[0].split()
    assert line[0] == want.timestamp
    w2c = rigid(angle_axis_to_matrix([float(t) for t in line[1:4]]),
                [float(t) for t in line[4:]])
    np.testing.assert_allclose(w2c @ want.camera_to_world, np.eye(4), atol=1e-9)

    stamps = [f.timestamp for f in data.videos[0].frames]
    (vdir / "hires_poses.traj").write_text(
        f"{stamps[0]} 0 0 1.5707963267948966 1 0 0\n{stamps[1]} 0 0 0 1 2 3\n")
    frames = read_video(root / VISIT, VIDEO)[0].frames
    # world→camera = [Rz(90°) | (1,0,0)]  ⇒  camera→world = [Rz(-90°) | -Rz(-90°)(1,0,0)]
    np.testing.assert_allclose(frames[0].camera_to_world,
                               rigid([[0, 1, 0], [-1, 0, 0], [0, 0, 1]], [0, 1, 0]),
                               atol=1e-12)
    np.testing.assert_allclose(frames[1].camera_to_world[:3, 3], [-1, -2, -3])


def test_depth_png_holds_millimetres(written):
    """SceneFun3D/scenefun3d utils/data_parser.py, DataParser.read_depth_frame: the PNG's
    values divided by conversion_factor=1000 give metres."""
    from PIL import Image

    root, _ = written
    f = read_visit(root, VISIT).videos[0].frames[0]
    Image.fromarray(np.array([[1500, 0], [65535, 1]], dtype=np.uint16)).save(f.depth)
    d = read_depth(f)
    np.testing.assert_allclose(d[[0, 1, 1], [0, 0, 1]], [1.5, 65.535, 0.001], rtol=1e-6)
    assert np.isnan(d[0, 1])


# --- timestamps --------------------------------------------------------------------


def test_timestamps_match_text_first(tmp_path, rng):
    data = make_visit(rng, timestamps=("100.10", "100.1", "99.5"))
    write_visit(tmp_path, data)
    skipped = {}
    frames = read_visit(tmp_path, VISIT, skipped=skipped).videos[0].frames
    assert skipped == {VIDEO: 0}
    assert [f.timestamp for f in frames] == ["99.5", "100.1", "100.10"]  # numeric order
    by_ts = {f.timestamp: f for f in data.videos[0].frames}
    for f in frames:  # each to its own pose and depth, not its numeric twin's
        np.testing.assert_allclose(f.camera_to_world, by_ts[f.timestamp].camera_to_world,
                                   atol=1e-6)
        assert f.depth.name == f"{VIDEO}_{f.timestamp}.png"



def test_pose_of_a_frame_without_its_own_traj_line_is_the_nearest(tmp_path, rng):
    """As the toolkit finds a frame's pose (SceneFun3D/scenefun3d utils/data_parser.py,
    DataParser.get_nearest_pose, called with no time threshold by
    examples/project_rgb_on_laser_scan.py): the traj's keys are str(float(ts)), a frame's
    timestamp text is looked up as is, else the pose nearest in value is taken; outside
    the traj's first and last time there is none."""
    data = make_visit(rng, timestamps=("99.5", "100.500", "101.0", "101.2", "102.0",
                                             "103.0"))
    write_visit(tmp_path, data)
    by_ts = {f.timestamp: f.camera_to_world for f in data.videos[0].frames}
    traj = tmp_path / VISIT / VIDEO / "hires_poses.traj"
    lines = traj.read_text().splitlines()
    keep = [ln for ln in lines if ln.split()[0] in ("99.5", "100.500", "101.0", "102.0")]
    # the toolkit would key "100.500" as "100.5": rewrite it so, as the toolkit reads it
    keep = [ln.replace("100.500 ", "100.5 ", 1) for ln in keep]
    traj.write_text("\n".join(keep) + "\n")
    v, n = read_video(tmp_path / VISIT, VIDEO)
    got = {f.timestamp: f.camera_to_world for f in v.frames}
    # 103.0 lies past the last pose
    assert n == 1 and sorted(got) == ["100.500", "101.0", "101.2", "102.0", "99.5"]
    np.testing.assert_allclose(got["100.500"], by_ts["100.500"], atol=1e-6)  # same value
    np.testing.assert_allclose(got["101.2"], by_ts["101.0"], atol=1e-6)  # the nearest


def test_frame_without_intrinsics_is_skipped(written):
    root, data = written
    ts = data.videos[0].frames[1].timestamp
    (root / VISIT / VIDEO / "hires_wide_intrinsics" / f"{VIDEO}_{ts}.pincam").unlink()
    skipped = {}
    frames = read_visit(root, VISIT, skipped=skipped).videos[0].frames
    assert skipped == {VIDEO: 1} and ts not in [f.timestamp for f in frames]


# --- malformed input ---------------------------------------------------------------


def _scan(root):
    return root / VISIT / f"{VISIT}_laser_scan.ply"


def _json(root, kind):
    return root / VISIT / f"{VISIT}_{kind}.json"


def _edit_json(path, fn):
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=1))


def _vfile(root, name):
    return root / VISIT / VIDEO / name


def _pincam(root, data):
    return _vfile(root, f"hires_wide_intrinsics/{VIDEO}_{data.videos[0].frames[0].timestamp}"
                        ".pincam")


def _break_traj(root, data, line_no, text):
    p = _vfile(root, "hires_poses.traj")
    lines = p.read_text().splitlines()
    lines[line_no - 1] = text
    p.write_text("\n".join(lines) + "\n")


CASES = {
    "missing laser scan": (lambda r, d: _scan(r).unlink(),
                           f"{VISIT}_laser_scan.ply", None, "not found"),
    "scan not a PLY": (lambda r, d: _scan(r).write_bytes(b"hello\n"),
                       f"{VISIT}_laser_scan.ply", None, "not a readable PLY"),
    "PLY without z": (lambda r, d: _scan(r).write_text(
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
        "1 2 3 4 5\n"), f"{VISIT}_laser_scan.ply", None, "no z property"),
    "annotations bad JSON": (lambda r, d: _json(r, "annotations").write_text(
        '{"visit_id": "420673",\n "annotations": [}'), f"{VISIT}_annotations.json", "2:18",
        "bad JSON"),
    "missing annotations": (lambda r, d: _json(r, "annotations").unlink(),
                            f"{VISIT}_annotations.json", None, "not found"),
    "index out of range": (lambda r, d: _edit_json(
        _json(r, "annotations"), lambda doc: doc["annotations"][1]["indices"].append(300)),
        f"{VISIT}_annotations.json", None, "index 300 out of range of the 300-point scan"),
    "unknown label": (lambda r, d: _edit_json(
        _json(r, "annotations"), lambda doc: doc["annotations"][0].update(label="push")),
        f"{VISIT}_annotations.json", None, "unknown label 'push'"),
    "wrong visit id": (lambda r, d: _edit_json(
        _json(r, "annotations"), lambda doc: doc.update(visit_id="111111")),
        f"{VISIT}_annotations.json", None, "does not match"),
    "unknown annotation in description": (lambda r, d: _edit_json(
        _json(r, "descriptions"), lambda doc: doc["descriptions"][1]["annot_id"].append("zz")),
        f"{VISIT}_descriptions.json", None, "unknown annotation 'zz'"),
    "description without text": (lambda r, d: _edit_json(
        _json(r, "descriptions"), lambda doc: doc["descriptions"][0].pop("description")),
        f"{VISIT}_descriptions.json", None, "missing field 'description'"),
    "crop mask wrong length": (lambda r, d: np.save(r / VISIT / f"{VISIT}_crop_mask.npy",
                                                    np.ones(5, bool)),
                               f"{VISIT}_crop_mask.npy", None, "expected (300,)"),
    "traj line with 6 numbers": (lambda r, d: _break_traj(r, d, 2, "12345.778 0 0 0 1 2"),
                                 "hires_poses.traj", 2, "6 values, expected 7"),
    "traj non-number": (lambda r, d: _break_traj(r, d, 3, "12345.878 0 0 x 1 2 3"),
                        "hires_poses.traj", 3, "not a number"),
    "traj duplicate": (lambda r, d: _break_traj(r, d, 3, "12345.678 0 0 0 1 2 3"),
                       "hires_poses.traj", 3, "duplicate timestamp"),
    "missing traj": (lambda r, d: _vfile(r, "hires_poses.traj").unlink(),
                     "hires_poses.traj", None, "not found"),
    "pincam non-numbers": (lambda r, d: _pincam(r, d).write_text("64 48 fx 50 31 23\n"),
                           ".pincam", 1, "not a number"),
    "pincam too short": (lambda r, d: _pincam(r, d).write_text("\n64 48 50 50 31\n"),
                         ".pincam", 2, "5 values, expected 6"),
    "pincam fractional width": (lambda r, d: _pincam(r, d).write_text("64.5 48 1 1 1 1\n"),
                                ".pincam", 1, "positive integers"),
    "transform not 4x4": (lambda r, d: np.save(_vfile(r, f"{VIDEO}_transform.npy"),
                                               np.eye(3)),
                          f"{VIDEO}_transform.npy", None, "expected 4x4"),
    "missing transform": (lambda r, d: _vfile(r, f"{VIDEO}_transform.npy").unlink(),
                          f"{VIDEO}_transform.npy", None, "not found"),
    "frame name without video id": (
        lambda r, d: _vfile(r, f"hires_wide/{VIDEO}_12345.678.jpg").rename(
            _vfile(r, "hires_wide/12345678_12345.678.jpg")),
        "12345678_12345.678.jpg", None, "does not start with the video id"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_input(written, case):
    root, data = written
    breaker, name, line, why = CASES[case]
    breaker(root, data)
    with pytest.raises(SceneFun3DError) as exc:
        read_visit(root, VISIT)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg and why in msg, msg
    if line is not None:
        assert re.search(rf"{re.escape(name)}:{line}\b", msg), msg


def test_bad_mesh_and_depth(written):
    root, _ = written
    v = read_visit(root, VISIT)
    mesh = v.videos[0].mesh_path
    mesh.write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                    "property float y\nproperty float z\nelement face 1\n"
                    "property list uchar int vertex_indices\nend_header\n"
                    "0 0 0\n1 0 0\n0 1 0\n4 0 1 2 0\n")
    with pytest.raises(SceneFun3DError, match=r"arkit_mesh\.ply: face 0 has 4 vertices"):
        read_mesh(mesh)
    f = v.videos[0].frames[0]
    from PIL import Image
    Image.new("RGB", (W, H)).save(f.depth, format="PNG")
    with pytest.raises(SceneFun3DError, match=r"\.png: mode RGB"):
        read_depth(f)


def test_bad_ids_and_writer_checks(tmp_path, rng):
    with pytest.raises(SceneFun3DError, match="6 digits"):
        read_visit(tmp_path, "12345")
    with pytest.raises(SceneFun3DError, match="not found"):
        read_visit(tmp_path, "123456")
    data = make_visit(rng)
    data.descriptions.append(Description("d-3", ["nope"], "x"))
    with pytest.raises(SceneFun3DError, match="unknown annotation 'nope'"):
        write_visit(tmp_path, data)
    data = make_visit(rng)
    data.videos[0].frames[0].camera_to_world = np.diag([1.0, 1.0, -1.0, 1.0])
    with pytest.raises(SceneFun3DError, match="not a rigid transform"):
        write_visit(tmp_path, data)
    data = make_visit(rng, timestamps=("1 2",))
    with pytest.raises(SceneFun3DError, match="without whitespace"):
        write_visit(tmp_path, data)
    assert not (tmp_path / VISIT).exists()  # every check runs before anything is written
