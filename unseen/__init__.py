"""unseen: test, and improve, how vision-language models reason about what they cannot see."""

from .api import run, run_async
from .backends import connect
from .engine.box import Box
from .engine.types import Instance, Reply, Request, Step, Trajectory
from .evals.scenefunri import load_dataset
from .strategies import strategy

__all__ = ["Box", "Instance", "Reply", "Request", "Step", "Trajectory", "connect",
           "load_dataset", "run", "run_async", "strategy"]
