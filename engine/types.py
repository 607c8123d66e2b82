"""Core records: what goes into a model, what comes out, and what the journal keeps.

Everything here is a pydantic v2 model because it is saved (journal, run.json, cache) or
configured. Images are referenced by path (and hashed when a digest is needed); pixels never
live in these records or in graph state.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .oracle import Truth, truth_of

#: The kind of instance every box strategy reads (a strategy's ``benchmark=``, a
#: benchmark's ``accepts``): an image, ``text["instruction"]`` and ``truth["box"]``.
BOX_INSTANCES = "box"


class Instance(BaseModel):
    """One item of a dataset: an image reference, the text a prompt needs, and the truth."""

    model_config = ConfigDict(frozen=True)

    id: str
    image: str  # absolute path
    width: int
    height: int
    text: dict[str, str] = Field(default_factory=dict)  # e.g. {"instruction": ...}
    truth: dict[str, Any] = Field(default_factory=dict)  # e.g. {"box": [x1, y1, x2, y2]}
    meta: dict[str, Any] = Field(default_factory=dict)


# --- requests ----------------------------------------------------------------------------


class TextPart(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image by reference: a file path, optionally an overlay spec drawn over it."""

    model_config = ConfigDict(frozen=True)
    type: Literal["image"] = "image"
    path: str
    overlay: dict[str, Any] | None = None  # renderer spec, regenerated deterministically


Part = TextPart | ImagePart


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["system", "user", "assistant"]
    parts: list[Part]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


#: the reasoning efforts a strategy may ask for: the OpenAI SDK's ``ReasoningEffort``, which
#: each backend maps to its provider's levels (an unknown word is refused before any call)
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
#: a strategy's sampling temperature: a finite number from 0 to 2, the range the providers
#: take (a negative or NaN one was sent as it was and failed, or was clamped, at the provider)
Temperature = Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False)]
#: a strategy's output cap: at least one token
MaxTokens = Annotated[int, Field(ge=1)]


class Decoding(BaseModel):
    """Decoding parameters; None means the provider's default."""

    model_config = ConfigDict(frozen=True)
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    json_schema: dict[str, Any] | None = None  # structured output, when the strategy asks
    choices: list[str] | None = None  # choose one of these strings
    logprobs: bool = False


class AnswerSpec(BaseModel):
    """The kind of answer a request asks for, for a respondent that is shown controls instead
    of reading the prompt's format sentence (a person: ``backends/human.py``). It says what
    the prompt already says in words, so it is never sent to a provider, never part of the
    cache key and never saved; it holds no part of the truth.

    ``kind``: ``box``, one box on the image in the pixels of a ``width`` x ``height`` frame
    (the image as the request shows it, a zoomed-in crop included); ``choice``, one of
    ``choices``; ``cells``, any of ``choices`` (grid cells to eliminate, at least one kept);
    ``fields``, a JSON object with ``fields`` (name → ``int`` or ``ints``, a list of
    integers); ``text``, free text.
    """

    model_config = ConfigDict(frozen=True)
    kind: Literal["box", "choice", "cells", "fields", "text"]
    choices: list[str] = Field(default_factory=list)
    fields: dict[str, Literal["int", "ints"]] = Field(default_factory=dict)
    width: int | None = None
    height: int | None = None


class Request(BaseModel):
    """One call to a model. ``oracle`` is a side channel for simulated and baseline
    respondents only, a typed truth (``engine.oracle``: ``BoxTruth``, ``ChoiceTruth``, ...; a
    mapping is validated as the kind its ``task`` names): real backends never read it, it is
    never sent, cached or logged.
    ``answer`` says what kind of answer the prompt asks for (see :class:`AnswerSpec`); a
    person's page reads it, nothing else does, and it is never sent, cached or logged."""

    model_config = ConfigDict(frozen=True)
    messages: list[Message]
    decoding: Decoding = Decoding()
    sample: int = 0
    # an independent draw beyond the sample index (a study batch): requests that differ only
    # here are separate samples, never one cached reply
    draw: str = ""
    oracle: Annotated[Truth | None, BeforeValidator(truth_of)] = Field(
        default=None, exclude=True, repr=False)
    answer: AnswerSpec | None = Field(default=None, exclude=True, repr=False)
    # notes for the journal (e.g. which commonsense entry a prompt used): never sent
    tags: dict[str, Any] = Field(default_factory=dict)

    @property
    def provider_seed(self) -> int | None:
        """The seed a provider gets: ``decoding.seed + sample``, so the samples of one
        request are separate draws even where the provider honours seeds; None unset."""
        return None if self.decoding.seed is None else self.decoding.seed + self.sample


# --- replies -----------------------------------------------------------------------------

ErrorKind = Literal[
    "rate_limit",  # 429, retried
    "quota",  # 429 with an exhausted quota (per day, billing): not retried
    "server",  # 5xx, retried
    "timeout",  # retried
    "connection",  # retried
    "client",  # other 4xx (bad request, auth): not retried
    "malformed",  # provider answered something that is not a reply: retried
    "empty",  # provider answered with no text: retried
    "config",  # missing key, unknown model, missing dependency
    "internal",  # a bug in unseen or a strategy
    "skipped",  # a person said "can't tell": unanswered, not an error, not retried
    # a reply the model gave that could not be used (engine.graph.ANSWER_REASONS): final
    "parse", "format_mismatch", "ambiguous", "length",
]
RETRYABLE: frozenset[str] = frozenset(
    {"rate_limit", "server", "timeout", "connection", "malformed", "empty"}
)


class ErrorInfo(BaseModel):
    """A typed failure; never a sentinel string that could be scored."""

    model_config = ConfigDict(frozen=True)
    kind: str
    message: str
    status: int | None = None
    attempts: int = 1


class Usage(BaseModel):
    """A reply's token counts as the provider bills them: ``input_tokens`` includes the
    ``cached_input_tokens`` (billed at the cached rate), ``output_tokens`` includes the
    ``reasoning_tokens`` (billed as output)."""

    model_config = ConfigDict(frozen=True)
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0


#: ``finish_reason`` values that mean the reply stopped at a length limit: Chat Completions'
#: and vLLM's ``length``, Gemini's ``MAX_TOKENS``, the Responses API's incomplete reason
#: ``max_output_tokens`` (openai_responses maps it to ``length``)
LENGTH_STOPS = frozenset({"length", "max_tokens", "max_output_tokens"})


class Reply(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str = ""
    reasoning: str | None = None
    usage: Usage = Usage()
    latency_s: float = 0.0
    finish_reason: str | None = None
    cached: bool = False
    logprobs: list[dict[str, Any]] | None = None  # per output token: token, logprob, top
    error: ErrorInfo | None = None
    # what the provider says it served: the response's model and system_fingerprint
    # (OpenAI), model_version (Gemini), a vLLM server's root and max_model_len
    served: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def cut(self) -> bool:
        """Whether the reply stopped at a length limit (:data:`LENGTH_STOPS`)."""
        return (self.finish_reason or "").lower() in LENGTH_STOPS


# --- what the journal keeps --------------------------------------------------------------


class Step(BaseModel):
    """What one node did: prompt, images, reply, parsed answer, region after the step."""

    index: int
    name: str
    prompt: str
    images: list[ImagePart] = Field(default_factory=list)
    messages: int = 1  # number of messages sent (multi-turn steps send more than one)
    reply: Reply
    parsed: Any = None
    parse_error: str | None = None
    region: list[float] | None = None  # pixel box after the step, for region strategies
    info: dict[str, Any] = Field(default_factory=dict)  # the request's tags
    seconds: float = 0.0


Status = Literal["answered", "unanswered"]


class Trajectory(BaseModel):
    """One line of the journal: a strategy run on one instance and one sample."""

    key: str
    run: str
    instance_id: str
    strategy: str
    params: dict[str, Any] = Field(default_factory=dict)
    backend: str
    model: str
    simulated: bool = False
    sample: int = 0
    status: Status
    error: ErrorInfo | None = None
    prediction: Any = None  # a pixel box [x1, y1, x2, y2] for SceneFunRI
    metrics: dict[str, float] = Field(default_factory=dict)
    # what the runner noticed beyond the status, before the steps so heads carry it:
    # ``length_stops`` (replies cut at a length limit, answered or not) and ``fallback``
    # (an answer kept from an earlier step when a later one gave none: cot-sr's first box)
    notes: dict[str, Any] = Field(default_factory=dict)
    steps: list[Step] = Field(default_factory=list)
    seconds: float = 0.0
    finished_at: str = ""


class RunConfig(BaseModel):
    """Everything needed to reproduce a run; saved as ``run.json`` (never a secret)."""

    run: str
    benchmark: str
    data: str
    dataset_fingerprint: str
    instances: int
    strategies: list[dict[str, Any]]  # {"name", "params"}
    backends: list[dict[str, Any]]  # {"spec", "model", "box_format", "simulated", ...}
    samples: int = 1
    limit: int | None = None
    # --instances / --sample (``engine.subset``): what was asked, and the ids it chose
    subset: dict[str, Any] | None = None
    concurrency: int = 8
    cache: bool = True
    scoring: dict[str, Any] = Field(default_factory=dict)
    package_version: str
    created_at: str
    # the project's git commit of each session that ran into this directory (a checkout)
    git_commits: list[str] = Field(default_factory=list)
    # what the directory's invocations planned: [backend spec, strategy label] pairs, each
    # over every instance and sample (SceneFunRI; `unseen run` adds the fixed rules' pairs
    # with the baseline strategy alone), or the count of a plan that is no such product
    # (the Director's calls); neither in a run written before they were recorded
    pairs: list[list[str]] = Field(default_factory=list)
    planned: int | None = None

    def planned_total(self) -> int | None:
        """The trajectories the run directory is meant to hold (None: not recorded)."""
        if self.planned is not None:
            return self.planned
        return self.instances * self.samples * len(self.pairs) if self.pairs else None
