"""Procedural furnished rooms written as SceneFun3D visits, the raw material of SceneFunRI.

Each room (``make_room``) places furniture groups along its walls; each group brings
functional parts (sockets, switches, knobs, handles, a valve, a foot switch) and, for most,
an occluder that hides one of them from a standing person: the socket behind a bedside
table, the bottom drawer's knob behind an armchair, the switch behind an open door leaf...
Every group adds task descriptions that name a visible reference ("Unplug the lamp on the
bedside table") and the hidden part they are about.

``sample_scan`` turns the room into a laser scan (area-weighted points, functional parts
sampled densely and annotated), ``planned_views`` chooses cameras from which each hidden
target is inside the frame and fully occluded while its reference is seen, plus a few
generic views, and ``write_rooms`` renders them and writes the SceneFun3D layout. The
intended (description, frame) pairs are only kept in memory (``build_visit``): the files
carry nothing SceneFun3D does not have.

"Hidden" means no pixel of the target in the id buffer and, at every annotated point's
pixel and its 8 neighbours, a surface at least ``HIDE_GAP_M`` in front of the point: the
one-pixel margin keeps an exact ray test (and a renderer drawing both faces) in agreement.

The four jobs live in their own modules: ``furniture`` (with ``plan``) lays the room out,
``scan`` samples the laser scan, ``cameras`` chooses and checks the views, ``visits`` renders
and writes the visit.
"""

from __future__ import annotations

from .cameras import (
    FOV_Y_DEG,
    MARGIN_FRAC,
    MIN_BOX_FRAC,
    Check,
    View,
    check_hidden,
    make_camera,
    planned_views,
)
from .furniture import make_room
from .scan import annot_id, desc_id, part_points, sample_scan
from .visits import (
    Intended,
    RoomBuild,
    build_visit,
    laser_to_arkit,
    video_id,
    visit_id,
    write_rooms,
)

__all__ = [
    "FOV_Y_DEG", "MARGIN_FRAC", "MIN_BOX_FRAC", "Check", "Intended", "RoomBuild", "View",
    "annot_id", "build_visit", "check_hidden", "desc_id", "laser_to_arkit", "make_camera",
    "make_room", "part_points", "planned_views", "sample_scan", "video_id", "visit_id",
    "write_rooms",
]
