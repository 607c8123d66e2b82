"""The Director Task: scene layouts, rendered scene sets with answer keys checked two ways."""

from .layout import Layout, LayoutError, make_layout, make_set
from .scenes import SceneError, render_scene
from .sets import SETS, build_set

__all__ = ["SETS", "Layout", "LayoutError", "SceneError", "build_set", "make_layout", "make_set",
           "render_scene"]
