"""``python -m unseen_pointing DIR [--n N] [--seed S]`` (or ``unseen-pointing``, installed):
write a pointing data set. A bad argument is one line on stderr and exit status 2, as
unseen's own commands do."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unseen.engine.errors import UnseenError

from .data import load, make


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints the usage too: one line only
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    parser = _Parser(prog="unseen-pointing", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder to write pointing.jsonl and images/ into")
    parser.add_argument("--n", type=int, default=12, help="pictures (1 to 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the same seed, the same data set")
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 1000:
        parser.error(f"--n must be from 1 to 1000, got {args.n}")
    try:
        instances, fingerprint = load(make(args.folder, args.n, args.seed))
    except (UnseenError, OSError) as exc:
        parser.error(str(exc))
    print(f"wrote {len(instances)} instances to {args.folder} (fingerprint {fingerprint})")
