"""The data classes and exceptions of vLLM 0.31 that the stand-in (vllm_standin.py) copies,
each with the signature of the vLLM class named beside it (checked against the record in
tests/backends/test_vllm_interfaces.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# vllm/engine/arg_utils.py (0.31.0): the public fields of EngineArgs, then AsyncEngineArgs' own
ENGINE_ARGS_FILE = Path(__file__).parent / "data" / "vllm_0.31.0_engine_args.txt"
ENGINE_ARG_FIELDS = tuple(line for line in ENGINE_ARGS_FILE.read_text().splitlines()
                          if line and not line.startswith("#"))

# --- vllm/engine/arg_utils.py -------------------------------------------------------------

# AsyncEngineArgs: a dataclass of exactly these fields (EngineArgs' public ones in order, then
# AsyncEngineArgs' own); every default is None here, vLLM's are its configs' defaults
AsyncEngineArgs = make_dataclass(
    "AsyncEngineArgs", [(name, Any, field(default=None)) for name in ENGINE_ARG_FIELDS])


# --- vllm/sampling_params.py --------------------------------------------------------------


RequestOutputKind = enum.Enum("RequestOutputKind", {"CUMULATIVE": 0, "DELTA": 1, "FINAL_ONLY": 2})


@dataclass
class StructuredOutputsParams:
    json: str | dict | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: str | None = None
    structural_tag: str | None = None

    def __post_init__(self) -> None:  # as vLLM's: exactly one kind of constraint
        kinds = (self.json, self.regex, self.choice, self.grammar, self.json_object,
                 self.structural_tag)
        if sum(k is not None for k in kinds) != 1:
            raise VLLMValidationError("You must use exactly one kind of structured outputs constraint")


@dataclass
class SamplingParams:
    """The fields the backend sets, with vLLM's defaults (``max_tokens`` 16 among them)."""

    n: int = 1
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    max_tokens: int | None = 16
    logprobs: int | None = None
    skip_special_tokens: bool = True
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE
    structured_outputs: StructuredOutputsParams | None = None


# --- vllm/renderers/params.py -------------------------------------------------------------


@dataclass
class ChatParams:
    chat_template: str | None = None
    chat_template_content_format: str = "auto"
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    media_io_kwargs: dict[str, dict[str, Any]] | None = None
    mm_processor_kwargs: dict[str, Any] | None = None
    tool_choice: Any | None = None
    response_format: Any | None = None


@dataclass(frozen=True)
class TokenizeParams:
    add_special_tokens: bool = True

    def with_kwargs(self, **tokenization_kwargs: Any) -> TokenizeParams:
        return TokenizeParams(**{"add_special_tokens": self.add_special_tokens,
                                 **tokenization_kwargs})


# --- vllm/logprobs.py, vllm/outputs.py ----------------------------------------------------


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    routed_experts: Any = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


class RequestOutput:
    def __init__(self, request_id: str, prompt: str | None, prompt_token_ids: list[int] | None,
                 prompt_logprobs: Any, outputs: list[CompletionOutput], finished: bool,
                 **kwargs: Any):
        self.request_id = request_id
        self.prompt = prompt
        self.prompt_token_ids = prompt_token_ids
        self.prompt_logprobs = prompt_logprobs
        self.outputs = outputs
        self.finished = finished


# --- vllm/exceptions.py, vllm/v1/engine/exceptions.py -------------------------------------


class VLLMError(Exception): ...
class VLLMClientError(VLLMError): ...
class VLLMServerError(VLLMError): ...
class VLLMValidationError(VLLMClientError): ...
class GracefulHTTPError(VLLMError): ...
class QueueOverflowError(GracefulHTTPError): ...
class EngineDeadError(VLLMServerError): ...


class EngineGenerateError(Exception):
    """AsyncLLM.generate raises this for any unexpected failure, with an empty message and
    the failure as its cause (vllm/v1/engine/async_llm.py: ``raise EngineGenerateError() from e``)."""


# --- vllm/entrypoints/openai/chat_completion/protocol.py ----------------------------------


class ChatCompletionRequest(BaseModel):  # the fields a reasoning parser may read
    messages: list[Any]
    model: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    skip_special_tokens: bool = True
    include_reasoning: bool = True
