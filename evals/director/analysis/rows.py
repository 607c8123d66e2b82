"""The rows a Director study's analysis reads: one per reply of a run directory, its
measures (``task.measures.score``, stored by the run) joined with those derived from them and
with the measures of its coded reasoning trace.

Derived when the rows are read (:func:`derived`, so runs scored before they existed have them):

* ``hidden_listed``: a hidden-block choice whose report lists the hidden block (Table 9:
  "all with reports that list the hidden block as visible"), where the reply has a report;
* ``hidden_left_out``: among the replies whose report leaves the hidden block out, a
  hidden-block choice (Table 12: "Among the replies that leave it out, ... still choose it").

Replies whose reasoning trace has been coded (``unseen director code``) also carry the
trace measures of :func:`..coding.items.code_measures`: ``own_view``, ``dv_reading``,
``digit_reading``, ``prior_reading``, ``works_out`` and ``hidden_unseen``.

The analysis holds them as :class:`Rows`, columns filled in one pass over the journal that
parses the steps of real models' replies only (their token counts, for costs).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ....engine.journal import iter_heads
from ....engine.rundir import RunDir, kind_of
from ...costs import record_usage
from ..coding.items import trace_measures
from ..study.study_file import reply_row, run_model_names

#: A row's fields other than its measures, in the order :func:`rows` gives them.
FIELDS = ("model", "backend", "batch", "condition", "set", "scene", "sample", "simulated",
          "answered", "error", "length_stops", "served_model", "usage")


class _Absent:
    """A measure that does not apply to a reply (absent from its dict row)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
_NUMBERS = {0.0: 0.0, 1.0: 1.0}


class Rows:
    """A study's rows as columns, one entry per reply in journal order: :data:`FIELDS` in
    ``cols``, each measure in ``measures`` (:data:`ABSENT` where it does not apply). Strings
    and numbers repeat across 170,000 replies, so the columns hold shared objects: tens of
    megabytes where a dict per reply took hundreds. Built by :class:`RowsBuilder`."""

    def __init__(self, cols: dict[str, list[Any]], measures: dict[str, list[Any]]) -> None:
        self.cols = cols
        self.measures = measures

    def __len__(self) -> int:
        return len(self.cols["model"])

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]]) -> Rows:
        """Dict rows (:func:`rows`' shape; those without a ``condition`` left out)."""
        out = RowsBuilder()
        for r in rows:
            if "condition" in r:
                out.add(tuple(out.text(v) if type(v) is str else v
                              for v in (r.get(f) for f in FIELDS)),
                        {k: v for k, v in r.items() if k not in FIELDS})
        return out.build()

    def take(self, idx: Iterable[int]) -> Rows:
        """The rows ``idx``, in that order."""
        idx = list(idx)
        return Rows({f: [col[i] for i in idx] for f, col in self.cols.items()},
                    {m: [col[i] for i in idx] for m, col in self.measures.items()})

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as a dict: the fields, then the measures that apply."""
        out = {f: col[i] for f, col in self.cols.items()}
        out.update((m, col[i]) for m, col in self.measures.items() if col[i] is not ABSENT)
        return out

    def cost_rows(self) -> Iterator[dict[str, Any]]:
        """What ``costs.model_costs`` reads of the rows a real model answered."""
        c = self.cols
        for i, (backend, sim) in enumerate(zip(c["backend"], c["simulated"], strict=True)):
            if kind_of(str(backend or ""), bool(sim)) == "model":
                yield {"model": c["model"][i], "backend": backend, "simulated": sim,
                       "served_model": c["served_model"][i], "usage": c["usage"][i]}


class RowsBuilder:
    """Rows added one at a time (a tuple of :data:`FIELDS` and a dict of measures), made
    columns once by :meth:`build`: a row costs a tuple, not an append to every column."""

    def __init__(self) -> None:
        self.fields: list[tuple[Any, ...]] = []
        self.values: list[tuple[tuple[str, ...], tuple[Any, ...]]] = []
        self._names: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._texts: dict[Any, Any] = {}

    def text(self, value: Any) -> Any:
        """``value`` as one object however many rows hold it (the fields' strings)."""
        return self._texts.setdefault(value, value)

    def add(self, fields: tuple[Any, ...], measures: dict[str, Any], at: int | None = None
            ) -> int:
        """Row ``at`` (a new one by default): its :data:`FIELDS` in order (strings repeated
        across rows best as one object: :meth:`text`), and its measures; returns its index."""
        names = tuple(measures)
        entry = (self._names.setdefault(names, names), _shared_numbers(measures.values()))
        if at is None:
            self.fields.append(fields)
            self.values.append(entry)
            return len(self.fields) - 1
        self.fields[at], self.values[at] = fields, entry
        return at

    def build(self) -> Rows:
        """The columns of the rows."""
        import numpy as np

        fields, values = self.fields, self.values
        self.fields, self.values = [], []  # the columns take their place
        cols: dict[str, list[Any]] = {}
        for f, col in zip(FIELDS, zip(*fields, strict=True) if fields else [()] * len(FIELDS),
                          strict=True):
            cols[f] = list(col)
        by_names: dict[tuple[str, ...], list[int]] = {}
        for i, (names, _) in enumerate(values):
            by_names.setdefault(names, []).append(i)
        arrays: dict[str, Any] = {}
        for names, rows in by_names.items():
            at = np.fromiter(rows, dtype=np.intp, count=len(rows))
            for m, column in zip(names, zip(*[values[i][1] for i in rows], strict=True),
                                 strict=True):
                if m not in arrays:
                    arrays[m] = np.full(len(values), ABSENT, dtype=object)
                arrays[m][at] = np.fromiter(column, dtype=object, count=len(column))
        return Rows(cols, {m: a.tolist() for m, a in arrays.items()})


def _shared_numbers(values: Iterable[Any]) -> tuple[Any, ...]:
    """The measures' values with 0 and 1 as one shared number each (not 170,000 floats)."""
    values = tuple(values)
    try:
        return tuple(map(_NUMBERS.get, values, values))
    except TypeError:  # a value that is no number (dict rows may hold anything)
        return values


def derived(row: dict[str, Any]) -> dict[str, float]:
    """The measures derived from a row's stored ones (module docstring)."""
    if "hidden" not in row or "report_excludes_hidden" not in row:
        return {}
    out = {"hidden_listed": float(row["hidden"] == 1 and row["report_excludes_hidden"] == 0)}
    if row["report_excludes_hidden"] == 1:
        out["hidden_left_out"] = float(row["hidden"])
    return out


def read_rows(run_dir: str | Path, *, usage: bool = False) -> Rows:
    """The rows of a study run (the last record of each key, where its key was first seen), in
    one pass over the journal: token counts (``usage``) for the replies of real models, or
    with ``usage`` for every reply. Not ``RunDir.records_with_steps``: that holds every
    record as a dict until the pass ends (a paper study's 174,600: over a gigabyte), where
    this keeps each as one row of shared strings and numbers as it goes. A record of
    another kind (no ``condition``) has no row; its key is never a reply's (the key holds
    the condition's label)."""
    run_dir = Path(run_dir)
    names = run_model_names(run_dir)
    coded = trace_measures(run_dir)
    out = RowsBuilder()
    at: dict[str, int] = {}

    def whole(head: dict[str, Any]) -> bool:  # the steps are read for their token counts
        return usage or kind_of(head["backend"], head["simulated"]) == "model"

    text = out.text
    with _acyclic():
        for rec in iter_heads(RunDir(run_dir).journal, whole):
            key, params = rec["key"], rec["params"]
            if "condition" not in params:  # not a study reply: no row
                continue
            err = rec["error"]
            where = reply_row(rec, names)  # type: ignore[arg-type]  # the head's fields
            fields = (text(where["model"]), text(where["backend"]), text(where["batch"]),
                      text(where["condition"]), text(where["set"]), text(where["scene"]),
                      where["sample"], bool(rec["simulated"]), rec["status"] == "answered",
                      text(err["kind"]) if err else None,
                      int(rec["notes"].get("length_stops", 0)), text(rec["model"]),
                      record_usage(rec) if "steps" in rec else None)
            measures = rec["metrics"]
            if coded:
                measures = {**measures, **coded.get(key, {})}
            if "report_excludes_hidden" in measures:
                measures = {**measures, **derived(measures)}
            at[key] = out.add(fields, measures, at.get(key))
        return out.build()


@contextmanager
def _acyclic() -> Iterator[None]:
    """The cyclic garbage collector paused: a study's pass keeps 350,000 tuples, none in a
    cycle, until its columns are built, and the collector would walk them over and over (a
    tenth of the pass)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def rows(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """One row per reply of a study run (the last record of each key).

    Keys: model, backend, simulated (a simulated respondent gave the reply), batch,
    condition, set, scene, sample, answered, error, the measures that apply (0.0/1.0), the
    derived ones, and the scene strata ``hidden_top_digit`` (the hidden block carries the
    largest digit on the table) and ``apparent_flag``; ``served_model`` (the backend's
    model, which a price is looked up by) and ``usage`` (the reply's token counts)."""
    table = read_rows(run_dir, usage=True)
    for i in range(len(table)):
        yield table.row(i)
