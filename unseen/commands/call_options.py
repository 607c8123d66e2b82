"""The options ``unseen run`` and ``director run`` share: how calls are sent, paced,
batched, cached and priced. Each has a one-line help in a help panel, so that ``--help``
reads as one line per option at 80 columns; the README's "`unseen run`'s options" gives
them in full."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

REQUESTS, IMAGES, PACE = "Requests", "Images and boxes", "Pace"
BATCHES, COST, CACHE = "Batches", "Cost and planning", "Reply cache"

Profiles = Annotated[Path | None, typer.Option(rich_help_panel=REQUESTS, help="Profile file (default: $UNSEEN_PROFILES).")]
BaseUrl = Annotated[list[str] | None, typer.Option(metavar="URL", rich_help_panel=REQUESTS, help="Endpoint; repeat it to spread the calls.")]
Timeout = Annotated[float, typer.Option(metavar="SECONDS", rich_help_panel=REQUESTS, help="Per call, then a retry.")]
MaxImageSide = Annotated[int | None, typer.Option(min=1, metavar="PIXELS", rich_help_panel=IMAGES, help="Shrink images to this longer side.")]
Concurrency = Annotated[int, typer.Option(min=1, metavar="N", rich_help_panel=PACE, help="Calls in flight per backend.")]
FixedConcurrency = Annotated[bool, typer.Option("--fixed-concurrency", rich_help_panel=PACE, help="Never adapt to rate limits.")]
Batch = Annotated[bool, typer.Option("--batch", rich_help_panel=BATCHES, help="Through the batch API: cheaper, within 24 h.")]
BatchWindow = Annotated[float, typer.Option(min=0.0, metavar="SECONDS", rich_help_panel=BATCHES, help="Idle time before sending.")]
BatchPoll = Annotated[float, typer.Option(min=0.1, metavar="SECONDS", rich_help_panel=BATCHES, help="Between looks at a batch.")]
MaxCost = Annotated[float | None, typer.Option("--max-cost", metavar="DOLLARS", rich_help_panel=COST, help="Stop once --out has spent this (exit 3).")]
Prices = Annotated[Path | None, typer.Option("--prices", rich_help_panel=COST, help="Price file (default: $UNSEEN_PRICES).")]
DryRun = Annotated[bool, typer.Option("--dry-run", rich_help_panel=COST, help="Count calls, tokens and dollars; call nothing.")]
Format = Annotated[str, typer.Option("--format", rich_help_panel=COST, help="With --dry-run: table or json.")]
NoCache = Annotated[bool, typer.Option("--no-cache", rich_help_panel=CACHE, help="Neither read nor write the reply cache.")]
CacheDir = Annotated[Path | None, typer.Option(rich_help_panel=CACHE, help="Default: the user cache folder.")]
CacheTag = Annotated[str | None, typer.Option(rich_help_panel=CACHE, help="Added to every cache key (a new checkpoint).")]
