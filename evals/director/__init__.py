"""The Director Task, by job: ``scenes`` (layouts, rendered scene sets with answer keys
checked two ways), ``task`` (prompts, the strategy, reading and scoring a reply), ``sim``
(the simulated respondent), ``study`` (designs and the order of their calls), ``coding``
(coding reasoning traces), ``analysis`` (estimators, tables, plots, power) and ``paper`` (the
paper's numbered tables and figures). ``benchmark`` and ``sim_tasks`` wire them to the
engine; each package imports only those before it in this list (``analysis`` reads the
codes).

The public names load on first use, so loading the ``director`` strategy (``unseen
strategies`` lists it) does not pay for numpy, Pillow and the rasterizer.
"""

from __future__ import annotations

from ...engine.lazy import lazy_exports

_EXPORTS = {
    "Layout": ".scenes.layout", "LayoutError": ".scenes.layout",
    "make_layout": ".scenes.layout", "make_set": ".scenes.layout",
    "SceneError": ".scenes.render", "render_scene": ".scenes.render",
    "SETS": ".scenes.sets", "build_set": ".scenes.sets",
}

__all__ = ["SETS", "Layout", "LayoutError", "SceneError", "build_set", "make_layout", "make_set",
           "render_scene"]

__getattr__ = lazy_exports(__name__, globals(), _EXPORTS)
