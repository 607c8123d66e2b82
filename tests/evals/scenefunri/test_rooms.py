"""Procedural SceneFun3D rooms: determinism, annotations, hidden targets checked by ray
casting (independent of the rasterizer that chose the views), and the files on disk."""

import json

import numpy as np
import pytest

from unseen.evals.scenefunri.data.rooms import (
    MARGIN_FRAC,
    annot_id,
    build_visit,
    laser_to_arkit,
    make_room,
    sample_scan,
    write_rooms,
)
from unseen.evals.scenefunri.data.scenefun3d import read_visit
from unseen.renderers.mesh import merge
from unseen.renderers.rooms3d import LABELS, room_meshes

pytestmark = pytest.mark.slow  # a fixture or every test takes seconds: `-m 'not slow'` skips

N_ROOMS = 8
SIZE = (320, 240)


@pytest.fixture(scope="module")
def builds():
    """The rooms with the views chosen and checked at SIZE; colour is not needed here."""
    return [build_visit(i, 0, SIZE, color=False) for i in range(N_ROOMS)]


def to_laser(points, l2a):
    """ARKit → laser: the inverse of transform.npy, as SceneFun3D/scenefun3d's
    examples/show_annotations.py moves its ARKit mesh."""
    inv = np.linalg.inv(l2a)
    return points @ inv[:3, :3].T + inv[:3, 3]


def segments_blocked(eye, points, tris, before_m=0.01):
    """Whether each segment eye→point crosses a triangle at least ``before_m`` before the
    point (Möller–Trumbore, both faces count)."""
    d = points - eye
    length = np.linalg.norm(d, axis=1)
    stop = 1 - before_m / length
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    s = eye - tris[:, 0]
    pvec = np.cross(d[:, None, :], e2[None])
    det = np.einsum("ntk,tk->nt", pvec, e1)
    ok = np.abs(det) > 1e-15
    inv = 1 / np.where(ok, det, 1)
    u = np.einsum("ntk,tk->nt", pvec, s) * inv
    q = np.cross(s, e1)
    v = np.einsum("nk,tk->nt", d, q) * inv
    t = np.einsum("tk,tk->t", e2, q)[None] * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9) & (t < stop[:, None])
    return hit.any(axis=1)


def independently_hidden(build, pair) -> bool:
    """Project the annotated points with the frame's own intrinsics and pose, untransformed
    (the toolkit's frames: scan and hires poses share the laser frame): all inside the frame
    with the margin, and every eye→point segment blocked by a triangle of the ARKit mesh,
    brought into the laser frame, that is not part of the target."""
    visit, video = build.visit, build.visit.videos[0]
    frame = next(f for f in video.frames if f.timestamp == pair.timestamp)
    ann = next(a for a in visit.annotations if a.annot_id == pair.annot_ids[0])
    pts = visit.points[ann.indices]
    w2c = np.linalg.inv(frame.camera_to_world)
    cam = pts @ w2c[:3, :3].T + w2c[:3, 3]
    k = frame.intrinsics
    if not (cam[:, 2] > 0).all():
        return False
    u, v = k.fx * cam[:, 0] / cam[:, 2] + k.cx, k.fy * cam[:, 1] / cam[:, 2] + k.cy
    m = MARGIN_FRAC * k.width
    if u.min() < m or v.min() < m or u.max() > k.width - m or v.max() > k.height - m:
        return False
    target = next(it for it in build.layout.functional
                  if annot_id(build.layout, it.name) == ann.annot_id)
    tris = to_laser(video.mesh_vertices, video.laser_to_arkit)[video.mesh_faces]
    own = target.contains(tris.reshape(-1, 3), tol=0.002).reshape(-1, 3).all(axis=1)
    eye = frame.camera_to_world[:3, 3]
    lo, hi = np.minimum(pts.min(0), eye), np.maximum(pts.max(0), eye)
    near = (tris.max(1) >= lo).all(1) & (tris.min(1) <= hi).all(1) & ~own  # cull far ones
    return bool(segments_blocked(eye, pts, tris[near]).all())


def test_same_seed_same_room_and_scan():
    a, b = make_room(5, 3), make_room(5, 3)
    assert a == b
    assert make_room(5, 4) != a
    scans = [sample_scan(room_meshes(r), r, np.random.default_rng(1)) for r in (a, b)]
    np.testing.assert_array_equal(scans[0][0], scans[1][0])
    np.testing.assert_array_equal(scans[0][1], scans[1][1])
    assert [x.annot_id for x in scans[0][2]] == [x.annot_id for x in scans[1][2]]
    assert all((x.indices == y.indices).all() for x, y in zip(scans[0][2], scans[1][2],
                                                               strict=True))


def test_laser_to_arkit_is_rigid_and_never_the_identity():
    for s in range(20):
        t = laser_to_arkit(np.random.default_rng(s))
        np.testing.assert_allclose(t[:3, :3] @ t[:3, :3].T, np.eye(3), atol=1e-12)
        assert np.linalg.det(t[:3, :3]) == pytest.approx(1)
        assert not np.allclose(t, np.eye(4), atol=1e-3)


def test_annotations_index_their_part(builds):
    """The scan is in the room's frame (the laser frame): each annotation's points lie on
    its part (inside its box)."""
    for b in builds:
        v = b.visit
        pts = v.points
        labels = {a.annot_id: a for a in v.annotations}
        assert sum(a.label == "exclude" for a in v.annotations) == 1
        sockets = 0
        for it in b.layout.functional:
            a = labels[annot_id(b.layout, it.name)]
            assert a.label == it.affordance in LABELS
            assert len(a.indices) >= 150
            assert it.contains(pts[a.indices], tol=1e-4).all(), it.name
            sockets += it.kind == "socket"
        assert sockets >= 2


def test_mesh_is_written_in_the_arkit_frame(builds):
    """The mesh file holds the room's mesh with transform.npy (laser → ARKit) applied; its
    inverse gives back the room in the laser frame, where the scan and the poses are."""
    for b in builds[:2]:
        video = b.visit.videos[0]
        room = merge(room_meshes(b.layout))
        np.testing.assert_allclose(to_laser(video.mesh_vertices, video.laser_to_arkit),
                                   room.vertices, atol=1e-9)
        assert np.abs(video.mesh_vertices - room.vertices).max() > 0.5


def test_descriptions_name_existing_annotations(builds):
    for b in builds:
        ids = {a.annot_id for a in b.visit.annotations}
        texts = [d.text for d in b.visit.descriptions]
        assert len(set(texts)) == len(texts)  # SceneFunRI drops repeated instructions
        for d in b.visit.descriptions:
            assert d.annot_ids and set(d.annot_ids) <= ids
        for t in b.layout.tasks:  # the named reference exists in the room
            assert all(b.layout.item(r) for r in t.reference)


def test_intended_views_hidden_by_an_independent_check(builds):
    ok, rooms, keys = 0, set(), set()
    for b in builds:
        key_of = {t.text: t.key for t in b.layout.tasks}
        for pair in b.intended:
            assert pair.text in key_of
            if independently_hidden(b, pair):
                ok += 1
                rooms.add(b.visit.visit_id)
                keys.add(key_of[pair.text])
    total = sum(len(b.intended) for b in builds)
    assert ok >= 60 and ok == total, (ok, total)
    assert len(rooms) >= 8
    assert len(keys) >= 6  # templates
    # the generic views are there for the pipeline to reject
    assert all(len(b.visit.videos[0].frames) > len(b.intended) for b in builds)


def test_write_rooms_layout(tmp_path):
    ids = write_rooms(tmp_path, n_rooms=1, seed=0, size=SIZE, workers=1)
    assert ids == ["100000"]
    vdir = tmp_path / "100000"
    for name in ("laser_scan.ply", "crop_mask.npy", "annotations.json", "descriptions.json"):
        assert (vdir / f"100000_{name}").is_file()
    video = vdir / "40000000"
    for name in ("hires_poses.traj", "40000000_transform.npy", "40000000_arkit_mesh.ply"):
        assert (video / name).is_file()
    jpgs = sorted((video / "hires_wide").glob("40000000_*.jpg"))
    assert jpgs and jpgs[0].name == "40000000_1000.000.jpg"
    for j in jpgs:
        ts = j.stem.split("_", 1)[1]
        assert (video / "hires_wide_intrinsics" / f"40000000_{ts}.pincam").is_file()
        assert (video / "hires_depth" / f"40000000_{ts}.png").is_file()
    doc = json.loads((vdir / "100000_descriptions.json").read_text())
    assert doc["visit_id"] == "100000" and doc["descriptions"]
    visit = read_visit(tmp_path, "100000")
    assert len(visit.videos) == 1 and len(visit.videos[0].frames) == len(jpgs)
    assert not np.allclose(visit.videos[0].laser_to_arkit, np.eye(4))
    k = visit.videos[0].frames[0].intrinsics
    assert (k.width, k.height) == SIZE
