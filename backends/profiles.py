"""Model profiles: the box convention and decoding quirks of each model family.

The first pattern that matches the model name wins; ``--box-format`` overrides the
convention for a run. Sources: REFERENCE.md ("Box conventions of model families").
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    family: str
    box_format: str
    # reasoning models reject temperature and seed; they are dropped, and run.json says so
    sampling_params: bool = True
    note: str = ""


_TABLE: list[tuple[str, Profile]] = [
    (r"gemini", Profile("gemini", "gemini", note="box_2d [y1,x1,y2,x2] in 0-1000")),
    (r"gemma", Profile("gemma", "gemini", note="no documented grounding; asked Gemini-style")),
    (r"qwen2\.5-?vl|qwen2_5_vl", Profile("qwen2.5-vl", "qwen2.5", note="pixels of the smart-resized input")),
    (r"qwen2-?vl", Profile("qwen2-vl", "norm1000")),
    (r"qwen3(\.5)?", Profile("qwen3-vl", "norm1000", note="relative 0-1000")),
    (r"internvl", Profile("internvl", "norm1000")),
    (r"^(o1|o3|o4)|gpt-5", Profile("openai-reasoning", "norm1000", sampling_params=False,
                                   note="no native grounding; asked for 0-1000")),
    (r"gpt-4", Profile("gpt-4", "norm1000", note="no native grounding; asked for 0-1000")),
]
DEFAULT = Profile("default", "norm1000", note="unknown model; asked for 0-1000")


def profile_for(model: str) -> Profile:
    """The profile of the first family whose pattern occurs in the model name."""
    name = model.lower().rsplit("/", 1)[-1]
    for pattern, profile in _TABLE:
        if re.search(pattern, name):
            return profile
    return DEFAULT
