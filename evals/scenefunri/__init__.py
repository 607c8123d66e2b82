"""SceneFunRI: data, prompts' truth side, metrics and comparison tables."""

from .dataset import Dataset, DatasetError, load_dataset
from .metrics import aggregate, cacc, dist, iou, score
from .report import render, summarize
from .scoring import scorer

__all__ = [
    "Dataset", "DatasetError", "aggregate", "cacc", "dist", "iou",
    "load_dataset", "render", "score", "scorer", "summarize",
]
