"""What ``unseen run`` makes of its options before the run: decoding given once for every
strategy (``--temperature``, ``--max-tokens``) and the subset of instances."""

from __future__ import annotations

from typing import Any

from .common import UserError


def with_decoding(specs: list[str], **decoding: Any) -> list[str]:
    """Each strategy spec with the decoding parameters given on the command line added; a
    value the spec gives itself wins (``-s cot:temperature=0.3``). A strategy without such a
    parameter is refused, rather than run at a decoding it was not asked for."""
    from ..strategies.registry import get, parse_spec

    given = {k: v for k, v in decoding.items() if v is not None}
    if not given:
        return specs
    out = []
    for spec in specs:
        name, raw = parse_spec(spec)
        fields = get(name).params.model_fields
        for key in given:
            if key not in fields:
                flag = "--" + key.replace("_", "-")
                raise UserError(f"{flag}: strategy {name!r} has no {key} parameter (see "
                                "`unseen strategies`); run it in a separate command")
        extra = [f"{k}={v}" for k, v in given.items() if k not in raw]
        out.append(spec + ("," if ":" in spec else ":") + ",".join(extra) if extra else spec)
    return out


def baseline_label(baseline: str | None, specs: list[str], **decoding: Any) -> str | None:
    """The label the table pairs against: the benchmark's baseline at the run's decoding,
    where it is one of several strategies run (else None: no paired column)."""
    from ..strategies import build

    if not baseline or len(specs) < 2:
        return None
    label = build(with_decoding([baseline], **decoding)[0]).label
    return label if label in {build(s).label for s in specs} else None


def subset_of(instances: str | None, sample: int | None, seed: int | None,
              limit: int | None) -> dict[str, Any] | None:
    """``--instances ID,...`` or ``--sample N --seed S`` as ``engine.subset`` records it."""
    from ..engine.subset import describe

    ids = instances.split(",") if instances is not None else None
    if ids is not None and not any(i.strip() for i in ids):
        raise UserError("--instances names no instance id")
    return describe(ids, sample, seed, limit)
