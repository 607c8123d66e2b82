"""Reading a choice among labels from a reply: now in :mod:`.kit` (kept for old imports)."""

from .kit import choice_confidence, read_choice

__all__ = ["choice_confidence", "read_choice"]
