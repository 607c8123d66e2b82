"""The Director Task: scene layouts, rendered scene sets with answer keys checked two ways.

The public names load on first use, so loading the ``director`` strategy (``unseen
strategies`` lists it) does not pay for numpy, Pillow and the rasterizer.
"""

from __future__ import annotations

from ...engine.lazy import lazy_exports

_EXPORTS = {
    "Layout": ".layout", "LayoutError": ".layout", "make_layout": ".layout",
    "make_set": ".layout", "SceneError": ".scenes", "render_scene": ".scenes",
    "SETS": ".sets", "build_set": ".sets",
}

__all__ = ["SETS", "Layout", "LayoutError", "SceneError", "build_set", "make_layout", "make_set",
           "render_scene"]

__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)
