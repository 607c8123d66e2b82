"""How ``unseen show``, ``tui``, ``export`` and ``compare`` show pointing runs.

The generic views (``unseen.views.GenericViews``) show any benchmark's runs from the
run directory alone: a table of the scorer's metrics per (model, strategy), each trajectory
step by step with the images the model saw, the TUI's tree, the HTML page. Their verdict
is the first metric that is 0 or 1, here ``hit``. Without the ``unseen.views`` entry point
they would show pointing runs as they are; these views keep all of it and add one section:
after the summary's table, the misses, farthest first.
"""

from __future__ import annotations

from rich import box as rich_box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from unseen.engine.rundir import RunDir, who
from unseen.views import Filters, GenericViews, narrow


class PointingViews(GenericViews):
    def __init__(self) -> None:
        super().__init__("pointing")  # the benchmark's name, as run.json records it
        self.title = "Pointing"  # how headings, pages and messages name it

    def summary(self, run: RunDir, console: Console, filters: Filters) -> None:
        """The generic summary, then the answered trajectories whose box missed the block,
        the farthest first (``--worst``-many at most)."""
        super().summary(run, console, filters)
        heads = narrow(run.heads(), filters, str(run.path), get=getattr)
        misses = sorted((h for h in heads if h.answered and h.metrics.get("hit") == 0),
                        key=lambda h: -h.metrics.get("dist", 0.0))
        if not misses:
            console.print("no misses: every answered box's centre lies in its block")
            return
        shown = misses[: filters.worst]
        table = Table(title=f"misses, farthest first ({len(shown)} of {len(misses)})",
                      title_justify="left", box=rich_box.SIMPLE_HEAD,
                      caption="dist: centre to centre, as a fraction of the image's diagonal",
                      caption_justify="left")
        for column in ("instance", "model", "strategy", "dist"):
            table.add_column(column, justify="right" if column == "dist" else "left")
        for h in shown:
            table.add_row(escape(h.instance_id), escape(who(h.model, h.kind)),
                          escape(h.strategy), f"{h.metrics.get('dist', 0.0):.3f}")
        console.print(table)


VIEWS = PointingViews()
