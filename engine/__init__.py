"""Runtime: core types, protocols, graph helpers, the runner, the journal and the reply cache."""

from .backend import Backend, Capabilities, ProviderError
from .box import CONVENTIONS, Box, BoxError, smart_resize
from .boxtext import BoxParseError, parse_box
from .cache import ReplyCache, request_key
from .graph import Parsed, StrategySpec, StrategyState, ask_node, backend_of
from .journal import iter_records, iter_trajectories, latest
from .runner import Runner, RunResult, trajectory_key
from .types import (
    Decoding,
    ErrorInfo,
    ImagePart,
    Instance,
    Message,
    Reply,
    Request,
    RunConfig,
    Step,
    TextPart,
    Trajectory,
    Usage,
)

__all__ = [
    "CONVENTIONS", "Backend", "Box", "BoxError", "BoxParseError", "Capabilities", "Decoding",
    "ErrorInfo", "ImagePart", "Instance", "Message", "Parsed", "ProviderError", "Reply",
    "ReplyCache", "Request", "RunConfig", "RunResult", "Runner", "Step", "StrategySpec",
    "StrategyState", "TextPart", "Trajectory", "Usage", "ask_node", "backend_of",
    "iter_records", "iter_trajectories", "latest", "parse_box", "request_key", "smart_resize",
    "trajectory_key",
]
