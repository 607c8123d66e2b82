"""The numpy rasterizer against geometry worked by hand."""

import math

import numpy as np
import pytest

from unseen.renderers import mesh as M
from unseen.renderers.camera import Camera
from unseen.renderers.raster import render
from unseen.renderers.textures import checker_texture, digit_texture

W, H = 200, 150
F = 150.0  # focal length in pixels


def forward_camera(eye=(0.0, 0.0, 0.0), w=W, h=H, f=F, near=0.01) -> Camera:
    """Looking along world +y with z up: camera x = world x, camera y = world -z."""
    K = np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]])
    w2c = np.eye(4)
    w2c[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]
    w2c[:3, 3] = -w2c[:3, :3] @ np.asarray(eye, float)
    return Camera(K, w2c, w, h, near=near)


def pixel_centres(mask):
    rows, cols = np.nonzero(mask)
    return cols + 0.5, rows + 0.5


# --- camera ---------------------------------------------------------------------------


def test_look_at_conventions_and_round_trip():
    cam = Camera.look_at((1, -2, 1.5), (0, 0, 0.5), fov_y_deg=60, width=W, height=H)
    np.testing.assert_allclose(cam.camera_center, (1, -2, 1.5), atol=1e-12)
    uv, z = cam.project([(0, 0, 0.5)])
    np.testing.assert_allclose(uv[0], (W / 2, H / 2), atol=1e-9)
    assert z[0] == pytest.approx(math.sqrt(1 + 4 + 1))
    assert cam.K[1, 1] == pytest.approx((H / 2) / math.tan(math.radians(30)))
    assert cam.project([(0, 0, 0.8)])[0][0, 1] < H / 2  # world up is image up (v grows downwards)
    right = np.cross(np.array([0, 0, 0.5]) - (1, -2, 1.5), (0, 0, 1))
    assert cam.project([np.array([0, 0, 0.5]) + 0.1 * right])[0][0, 0] > W / 2
    pts = np.random.default_rng(0).uniform(-1, 1, (20, 3))
    uv, z = cam.project(pts)
    np.testing.assert_allclose(cam.unproject(uv[:, 0], uv[:, 1], z), pts, atol=1e-9)
    uv2, z2 = cam.scaled(3).project(pts)
    np.testing.assert_allclose(uv2, 3 * uv, atol=1e-9)
    np.testing.assert_allclose(z2, z)
    assert np.isnan(cam.project([(4, -8, 3)])[0]).all()  # behind the camera


# --- meshes and textures ----------------------------------------------------------------


@pytest.mark.parametrize(
    "mesh, n_faces",
    [
        (M.box((1, 2, 3), (0.3, 0.5, 0.7), yaw_deg=33), 12),
        (M.cube((0, 0, 1), 0.1, 10), 12),
        (M.cylinder((0.5, 0, 0), 0.2, 0.6, segments=24), 96),
        (M.ellipsoid((0, 1, 1), (0.1, 0.2, 0.3), segments=16), 224),
    ],
)
def test_closed_primitives_wind_outwards(mesh, n_faces):
    assert mesh.n_faces == n_faces
    centre = (mesh.vertices.min(0) + mesh.vertices.max(0)) / 2
    centroids = mesh.vertices[mesh.faces].mean(axis=1)
    assert (np.einsum("ij,ij->i", mesh.face_normals(), centroids - centre) > 0).all()


def test_plane_faces_up_and_merge_offsets_textures():
    assert (M.plane((0, 0, 0), (2, 1), yaw_deg=40).face_normals()[:, 2] > 0.999).all()
    assert (M.vertical_plane((0, 0, 0), 1, 1).face_normals()[:, 1] < -0.999).all()
    a = M.cube((0, 0, 0), 1, texture=digit_texture(1), object_id=3)
    b = M.cube((2, 0, 0), 1, texture=digit_texture(2), object_id=4)
    m = M.merge([M.box((5, 5, 5), (1, 1, 1)), a, b])
    assert m.n_faces == 36 and len(m.textures) == 2
    assert set(m.texture_index[:12]) == {-1}
    assert set(m.texture_index[12:24]) == {-1, 0} and set(m.texture_index[24:]) == {-1, 1}
    np.testing.assert_array_equal(m.vertices[m.faces[24:]], b.vertices[b.faces])


def test_digit_texture_is_centred_ink_on_transparent():
    tex = digit_texture("4", size=128)
    assert tex.shape == (128, 128, 4) and tex.dtype == np.uint8
    ink = tex[..., 3] > 128
    rows, cols = np.nonzero(ink)
    assert 0.6 < (rows.max() - rows.min() + 1) / 128 < 0.8  # ~70 % of the tile
    assert abs((rows.min() + rows.max()) / 2 - 63.5) <= 2
    assert abs((cols.min() + cols.max()) / 2 - 63.5) <= 2
    assert tex[0, 0, 3] == 0 and (tex[ink][:, :3] == 20).all()
    assert digit_texture("4", bg=(255, 255, 255))[0, 0].tolist() == [255, 255, 255, 255]


# --- geometry of the image -----------------------------------------------------------------


def test_cube_silhouette_matches_projected_corners():
    cam = Camera.look_at((0.7, -1.2, 0.9), (0, 0, 0.1), fov_y_deg=45, width=W, height=H)
    cube = M.cube((0.05, 0.02, 0.1), 0.3, yaw_deg=25, object_id=7)
    uv, _ = cam.project(cube.vertices)
    for r in (render(cube, cam, ids_only=True), render(cube, cam, supersample=3)):
        if r.color is None:
            u, v = pixel_centres(r.ids == 7)
        else:  # any pixel the cube touches differs from the background
            u, v = pixel_centres((r.color != 235).any(axis=2))
        assert abs(u.min() - uv[:, 0].min()) <= 1 and abs(u.max() - uv[:, 0].max()) <= 1
        assert abs(v.min() - uv[:, 1].min()) <= 1 and abs(v.max() - uv[:, 1].max()) <= 1


def test_depth_of_frontal_and_tilted_planes():
    cam = forward_camera()
    r = render(M.vertical_plane((0.1, 2.0, 0.0), 1.0, 0.8, object_id=1), cam, ids_only=True)
    covered = r.ids == 1
    assert covered.sum() > 1000
    np.testing.assert_allclose(r.depth[covered], 2.0, rtol=1e-6)
    assert np.isinf(r.depth[~covered]).all() and (r.ids[~covered] == -1).all()

    # A quad tilted 50 degrees away about the vertical: its depth varies across the image.
    a = math.radians(50)
    right, up = np.array([math.cos(a), math.sin(a), 0]), np.array([0, 0, 1.0])
    c = np.array([0, 3, 0])
    corners = [c - right - up * 0.5, c + right - up * 0.5, c + right + up * 0.5, c - right + up * 0.5]
    r = render(M.quad(corners, object_id=2), cam, ids_only=True)
    normal = np.cross(right, up)  # plane n.x = n.c, in camera coordinates:
    n_cam = cam.rotation @ normal
    u, v = pixel_centres(r.ids == 2)
    rays = np.stack([(u - W / 2) / F, (v - H / 2) / F, np.ones_like(u)], axis=1)
    expected = (n_cam @ (cam.rotation @ c)) / (rays @ n_cam)
    got = r.depth[r.ids == 2]
    assert got.min() < 2.5 and got.max() > 3.5
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_ids_at_an_occlusion_boundary():
    cam = forward_camera()
    near = M.box((0.0, 2.15, 0.0), (0.5, 0.3, 0.5), object_id=1)  # front face at y = 2
    far = M.box((0.0, 4.5, 0.0), (2.0, 1.0, 0.6), object_id=2)  # front face at y = 4
    r = render([far, near], cam, ids_only=True)
    row = H // 2
    edge = W / 2 + F * -0.25 / 2.0  # near box's left edge: u = 81.25
    left = math.ceil(edge - 0.5) - 1  # last pixel whose centre is left of the edge
    assert r.ids[row, left] == 2 and r.ids[row, left + 1] == 1
    edge = W / 2 + F * 0.25 / 2.0
    right = math.floor(edge - 0.5) + 1
    assert r.ids[row, right] == 2 and r.ids[row, right - 1] == 1
    assert r.ids[0, 0] == -1 and r.ids[row, 0] == -1
    assert r.depth[row, left] == pytest.approx(4.0) and r.depth[row, left + 1] == pytest.approx(2.0)
    # exclude_ids takes the occluder out: the far box shows through.
    assert r.ids[row, W // 2] == 1
    assert render([far, near], cam, ids_only=True, exclude_ids=[1]).ids[row, W // 2] == 2


def test_back_faces_are_culled():
    cam = forward_camera()
    corners = [(-0.5, 2, -0.5), (0.5, 2, -0.5), (0.5, 2, 0.5)]  # counter-clockwise from -y
    front = M.Mesh(corners, [[0, 1, 2]], (0.5, 0.5, 0.5), 1)
    back = M.Mesh(corners, [[0, 2, 1]], (0.5, 0.5, 0.5), 1)
    assert (render(front, cam, ids_only=True).ids == 1).sum() > 100
    r = render(back, cam)
    assert (r.ids == -1).all() and (r.color == 235).all()


def test_near_clipping_keeps_a_floor_that_passes_behind_the_camera():
    cam = forward_camera(eye=(0, 0, 0.3), near=0.05)
    floor = M.plane((0, 0, 0), (100, 100), (0.4, 0.6, 0.4), object_id=5)
    r = render(floor, cam, supersample=2)
    assert (r.ids[H // 2 + 1:] == 5).all()  # everything below the horizon is floor
    assert (r.ids[: H // 2 - 1] == -1).all()
    # Depth along a bottom-row ray matches the ray's hit on the floor 0.3 m down.
    v = H - 0.5
    assert r.depth[-1, 0] == pytest.approx(0.3 * F / (v - H / 2), rel=1e-5)
    assert np.isfinite(r.depth[r.ids == 5]).all() and not np.isnan(r.depth).any()
    assert (r.color[-1] != 235).any(axis=-1).all()
    behind = M.Mesh([(-1, -1, 0), (1, -1, 0), (0, -2, 1)], [[0, 1, 2], [0, 2, 1]], (1, 0, 0), 3)
    r = render(behind, cam)
    assert (r.ids == -1).all() and (r.color == 235).all()


# --- textures ---------------------------------------------------------------------------


def test_digit_on_a_cube_face():
    cam = forward_camera()
    red = (0.8, 0.1, 0.1)
    cube = M.cube((0, 1.0, 0), 0.4, color=red, texture=digit_texture("1"), object_id=1)
    r = render(cube, cam, light_dir=(0, -1, 0), supersample=2)
    # Front face at y = 0.8 spans u, v in 100 +- 37.5, 75 +- 37.5 and is fully lit (shade 1).
    face = r.color[75 - 37:75 + 37, 100 - 37:100 + 37].astype(int)
    middle = face[22:52, 22:52]
    dark = (middle.max(axis=2) < 60).mean()
    assert dark > 0.15  # the digit's stroke
    border = np.concatenate([face[:4].reshape(-1, 3), face[-4:].reshape(-1, 3)])
    np.testing.assert_allclose(border, [[204, 26, 26]] * len(border), atol=1)


def test_texture_interpolation_is_perspective_correct():
    cam = forward_camera(eye=(0, 0, 0.5))
    tex = np.full((64, 64, 4), 255, np.uint8)
    tex[:32, :, :3] = 0  # top half (far end on the floor) black, bottom half white
    floor = M.quad([(-1, 1, 0), (1, 1, 0), (1, 9, 0), (-1, 9, 0)], texture=tex, object_id=1)
    r = render(floor, cam, supersample=1, light_dir=(0, 0, 1), ambient=0.0)
    column = r.color[:, W // 2, 0].astype(float)
    rows = np.flatnonzero(r.ids[:, W // 2] == 1)
    lum = column[rows]
    # Where the colour crosses half way between black and white, interpolated between rows.
    k = np.flatnonzero((lum[:-1] < 127.5) & (lum[1:] >= 127.5))[0]
    crossing = rows[k] + 0.5 + (127.5 - lum[k]) / (lum[k + 1] - lum[k])
    v_mid = cam.project([(0, 5, 0)])[0][0, 1]  # the quad's midpoint, y = 5
    v_near, v_far = cam.project([(0, 1, 0), (0, 9, 0)])[0][:, 1]
    assert abs(crossing - v_mid) < 1.0
    assert abs((v_near + v_far) / 2 - v_mid) > 10  # the screen-space midpoint is far off


def test_checker_texture():
    tex = checker_texture(cells=4, size=8)
    assert tex[0, 0, :3].tolist() == [0, 0, 0] and tex[0, 2, :3].tolist() == [255, 255, 255]
    assert tex[2, 2, :3].tolist() == [0, 0, 0] and (tex[..., 3] == 255).all()


# --- shading, shadows, determinism ----------------------------------------------------------


def test_contact_shadow_darkens_near_the_base_only():
    cam = Camera.look_at((0, -1.0, 1.0), (0, 0, 0), fov_y_deg=50, width=W, height=H)
    table = M.plane((0, 0, 0), (2, 2), (0.6, 0.5, 0.4), object_id=1)
    cube = M.cube((0, 0, 0.05), 0.1, color=(0.2, 0.3, 0.8), object_id=2)
    disc = (0, 0, 0, 0.06, 0.6)
    lit = render([table, cube], cam)
    shaded = render([table, cube], cam, contact_shadows=[disc])
    (u_near, v_near), (u_far, v_far) = cam.project([(0.065, 0, 0), (0.4, 0, 0)])[0]
    near, far = (int(v_near), int(u_near)), (int(v_far), int(u_far))
    assert lit.ids[near] == 1 and lit.ids[far] == 1
    assert (shaded.color[near].astype(int) < lit.color[near].astype(int) - 10).all()
    np.testing.assert_array_equal(shaded.color[far], lit.color[far])
    np.testing.assert_array_equal(lit.color[near], lit.color[far])  # flat shading
    # The cube itself is untouched (its faces are not horizontal surfaces at z = 0).
    assert (lit.ids == 2).sum() > 100
    np.testing.assert_array_equal(shaded.color[lit.ids == 2], lit.color[lit.ids == 2])


def scene():
    cam = Camera.look_at((0.4, -1.1, 1.0), (0, 0, 0.2), fov_y_deg=50, width=W, height=H)
    meshes = [
        M.plane((0, 0, 0), (3, 3), (0.5, 0.5, 0.45), object_id=0),
        M.box((0, 0, 0.15), (0.8, 0.5, 0.3), 0, (0.6, 0.45, 0.3), object_id=1),
        M.cube((0.15, 0, 0.35), 0.1, 20, (0.8, 0.2, 0.2), object_id=2),
        M.ellipsoid((-0.2, 0.1, 0.4), 0.08, (0.9, 0.8, 0.6), object_id=3, segments=12),
        M.cylinder((0.0, 0.4, 0.3), 0.05, 0.3, (0.3, 0.4, 0.7), object_id=4, segments=12),
    ]
    return meshes, cam


def test_deterministic_and_supersampling_agrees_away_from_edges():
    meshes, cam = scene()
    textured = meshes + [M.cube((-0.2, -0.15, 0.35), 0.1, -10, (0.9, 0.8, 0.2),
                                object_id=5, texture=digit_texture("6"))]
    shadows = [(0.15, 0, 0.3, 0.06, 0.5)]
    a = render(textured, cam, contact_shadows=shadows)
    b = render(textured, cam, contact_shadows=shadows)
    assert a.color.tobytes() == b.color.tobytes()
    assert a.ids.tobytes() == b.ids.tobytes() and a.depth.tobytes() == b.depth.tobytes()
    ids_only = render(textured, cam, ids_only=True)
    assert ids_only.color is None
    np.testing.assert_array_equal(ids_only.ids, a.ids)
    np.testing.assert_array_equal(ids_only.depth, a.depth)

    one = render(meshes, cam, supersample=1)
    two = render(meshes, cam, supersample=2)
    # Away from edges (also between the faces of one object) a pixel's 3x3 neighbourhood is
    # uniform in the 1x render, and flat shading gives the 2x render the same colour there.
    c = np.pad(one.color, ((1, 1), (1, 1), (0, 0)), mode="edge")
    interior = np.ones((H, W), bool)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            interior &= (c[dy:dy + H, dx:dx + W] == one.color).all(axis=2)
    assert interior.mean() > 0.8
    diff = np.abs(one.color.astype(int) - two.color.astype(int)).max(axis=2)
    assert diff[interior].max() <= 1
    assert diff[~interior].max() > 10  # edges do differ: the 2x render is antialiased


def test_a_finely_split_plane_has_no_cracks():
    # A frontal grid whose vertices project exactly onto pixel centres: every shared edge,
    # diagonals included, runs through pixel centres, and none of them may be lost.
    cam, z = forward_camera(), 2.0
    cols, rows = np.arange(20.5, 181, 4), np.arange(15.5, 136, 4)
    uu, vv = np.meshgrid(cols, rows)
    pts = np.stack([(uu - W / 2) * z / F, np.full_like(uu, z), -(vv - H / 2) * z / F], axis=-1)
    ny, nx = uu.shape
    k = np.arange(ny * nx).reshape(ny, nx)
    bl, br, tl, tr = k[1:, :-1], k[1:, 1:], k[:-1, :-1], k[:-1, 1:]  # v grows down the image
    faces = np.concatenate([np.stack([bl, br, tr], -1), np.stack([bl, tr, tl], -1)]).reshape(-1, 3)
    grid = M.Mesh(pts.reshape(-1, 3), faces, (0.5, 0.5, 0.5), 1)
    assert grid.n_faces == 2 * 40 * 30
    covered = render(grid, cam, ids_only=True).ids == 1
    expected = np.zeros((H, W), bool)
    expected[15:136, 20:181] = True
    np.testing.assert_array_equal(covered, expected)
    # The same rectangle as one quad (rasterized per triangle, not in batches) matches.
    quad = M.quad(pts[[-1, -1, 0, 0], [0, -1, -1, 0]], object_id=1)
    np.testing.assert_array_equal(render(quad, cam, ids_only=True).ids == 1, expected)


def test_a_flipped_box_is_a_room_seen_from_inside():
    cam = Camera.look_at((0.3, -0.5, 1.5), (1, 2, 1), width=80, height=60)
    room = M.box((0, 0, 1.5), (4, 5, 3), object_id=9)
    assert (render(room, cam, ids_only=True).ids == -1).all()  # outward faces are culled
    r = render(room.flipped(), cam, ids_only=True)
    assert (r.ids == 9).all() and np.isfinite(r.depth).all()
