"""The stand-in engine (vllm_standin.py) has vLLM 0.31's signatures, as recorded here from the
0.31.0 source; where vLLM is installed, the recorded signatures are checked against it too.

Recorded from vllm-0.31.0 (the version the ``vllm`` extra pins), file by file:
vllm/v1/engine/async_llm.py (AsyncLLM), vllm/engine/arg_utils.py (EngineArgs,
AsyncEngineArgs), vllm/sampling_params.py (SamplingParams, StructuredOutputsParams,
RequestOutputKind), vllm/renderers/base.py (BaseRenderer), vllm/renderers/params.py
(ChatParams, TokenizeParams), vllm/reasoning/abs_reasoning_parsers.py (ReasoningParser,
ReasoningParserManager), vllm/config/model.py (ModelConfig), vllm/logprobs.py (Logprob),
vllm/outputs.py (CompletionOutput, RequestOutput).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import tomllib
from pathlib import Path

import pytest
import vllm_standin as si

ROOT = Path(__file__).resolve().parents[2]  # tests/backends/ → the repository

# method -> its parameters, as ``inspect.signature`` lists them ("*" marks keyword-only)
METHODS = {
    "vllm.v1.engine.async_llm:AsyncLLM.from_engine_args":
        (si.AsyncLLM.from_engine_args, "engine_args start_engine_loop usage_context stat_loggers"),
    "vllm.v1.engine.async_llm:AsyncLLM.generate": (
        si.AsyncLLM.generate,
        "self prompt sampling_params request_id * prompt_text lora_request tokenization_kwargs "
        "trace_headers priority data_parallel_rank session_id kv_hints reasoning_ended "
        "reasoning_parser_kwargs"),
    "vllm.v1.engine.async_llm:AsyncLLM.shutdown": (si.AsyncLLM.shutdown, "self timeout"),
    "vllm.v1.engine.async_llm:AsyncLLM.get_tokenizer": (si.AsyncLLM.get_tokenizer, "self"),
    "vllm.renderers:BaseRenderer.render_chat_async": (
        si.Renderer.render_chat_async,
        "self conversations chat_params tok_params * prompt_extras skip_mm_cache"),
    "vllm.renderers:TokenizeParams.with_kwargs":
        (si.TokenizeParams.with_kwargs, "self **tokenization_kwargs"),
    "vllm.reasoning:ReasoningParser.__init__":
        (si.ReasoningParser.__init__, "self tokenizer *args **kwargs"),
    "vllm.reasoning:ReasoningParser.extract_reasoning":
        (si.ReasoningParser.extract_reasoning, "self model_output request"),
    "vllm.reasoning:ReasoningParser.is_reasoning_end":
        (si.ReasoningParser.is_reasoning_end, "self input_ids"),
    "vllm.reasoning:ReasoningParser.count_reasoning_tokens":
        (si.ReasoningParser.count_reasoning_tokens, "self token_ids"),
    "vllm.reasoning:ReasoningParserManager.get_reasoning_parser":
        (si.ReasoningParserManager.get_reasoning_parser, "name"),
    "vllm.reasoning:ReasoningParserManager.list_registered":
        (si.ReasoningParserManager.list_registered, ""),
    "vllm.config.model:ModelConfig.get_diff_sampling_param":
        (si.ModelConfig.get_diff_sampling_param, "self"),
}

# class -> the fields the stand-in has, with vLLM's defaults (REQUIRED: no default)
REQUIRED = object()
FIELDS = {
    "vllm.sampling_params:SamplingParams": (si.SamplingParams, {
        "n": 1, "presence_penalty": 0.0, "frequency_penalty": 0.0, "repetition_penalty": 1.0,
        "temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "seed": None,
        "max_tokens": 16, "logprobs": None, "skip_special_tokens": True,
        "output_kind": "CUMULATIVE",
        "structured_outputs": None}),
    "vllm.sampling_params:StructuredOutputsParams": (si.StructuredOutputsParams, {
        "json": None, "regex": None, "choice": None, "grammar": None, "json_object": None,
        "disable_any_whitespace": False, "disable_additional_properties": False,
        "whitespace_pattern": None, "structural_tag": None}),
    "vllm.renderers:ChatParams": (si.ChatParams, {
        "chat_template": None, "chat_template_content_format": "auto",
        "chat_template_kwargs": "{}", "media_io_kwargs": None, "mm_processor_kwargs": None,
        "tool_choice": None, "response_format": None}),
    "vllm.logprobs:Logprob": (si.Logprob, {"logprob": REQUIRED, "rank": None,
                                           "decoded_token": None}),
    "vllm.outputs:CompletionOutput": (si.CompletionOutput, {
        "index": REQUIRED, "text": REQUIRED, "token_ids": REQUIRED,
        "cumulative_logprob": REQUIRED, "logprobs": REQUIRED, "routed_experts": None,
        "finish_reason": None, "stop_reason": None}),
}
REQUEST_OUTPUT = "request_id prompt prompt_token_ids prompt_logprobs outputs finished"
OUTPUT_KINDS = {"CUMULATIVE": 0, "DELTA": 1, "FINAL_ONLY": 2}

has_vllm = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(
    not has_vllm, reason="vLLM is not installed (the 'vllm' extra needs a GPU machine); the "
                         "stand-in is checked against the recorded 0.31.0 signatures only")


def params(fn) -> str:
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in out and not any(o.startswith("*") for o in out):
            out.append("*")
        out.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
    return " ".join(out)


def defaults(cls) -> dict[str, object]:
    """Field -> default of a dataclass or msgspec Struct (vLLM's SamplingParams is one)."""
    if dataclasses.is_dataclass(cls):
        out = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = repr(f.default_factory())
            else:
                out[f.name] = REQUIRED
        return out
    msgspec = importlib.import_module("msgspec") if importlib.util.find_spec("msgspec") else None
    if msgspec is not None and isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return {f.name: REQUIRED if f.required else (
            f.default if f.default is not msgspec.NODEFAULT else repr(f.default_factory()))
            for f in msgspec.structs.fields(cls)}
    sig = inspect.signature(cls)
    return {n: (REQUIRED if p.default is p.empty else p.default)
            for n, p in sig.parameters.items()}


def normal(value: object) -> object:
    return value.name if hasattr(value, "name") and hasattr(value, "value") else value


def resolve(path: str):
    module, _, qual = path.partition(":")
    obj = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(METHODS))
def test_stand_in_methods_have_the_recorded_signatures(name):
    fn, recorded = METHODS[name]
    assert params(fn) == recorded


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_stand_in_classes_have_the_recorded_fields_and_defaults(name):
    cls, recorded = FIELDS[name]
    assert {k: normal(v) for k, v in defaults(cls).items()} == recorded


def test_stand_in_small_pieces():
    assert {k.name: k.value for k in si.RequestOutputKind} == OUTPUT_KINDS
    assert params(si.RequestOutput.__init__).startswith("self " + REQUEST_OUTPUT)
    fields = [f.name for f in dataclasses.fields(si.AsyncEngineArgs)]
    assert fields == list(si.ENGINE_ARG_FIELDS) and len(fields) == 251
    for name in ("tensor_parallel_size", "data_parallel_size", "max_model_len",
                 "limit_mm_per_prompt", "distributed_executor_backend", "reasoning_parser",
                 "generation_config", "enable_log_requests"):
        assert name in fields


def test_the_extra_pins_the_version_the_stand_in_copies():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["vllm"]
    assert extra == ["vllm>=0.31,<0.32"]
    assert si.MODULES["vllm"]["__version__"].startswith("0.31.")


@needs_vllm
@pytest.mark.parametrize("name", sorted(METHODS))
def test_real_vllm_methods_match_the_record(name):
    assert params(resolve(name)) == METHODS[name][1]


@needs_vllm
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_real_vllm_fields_match_the_record(name):
    real = {k: normal(v) for k, v in defaults(resolve(name)).items()}
    for key, value in FIELDS[name][1].items():
        assert key in real, key
        if value is not REQUIRED and value != "{}":
            assert real[key] == value, key


@needs_vllm
def test_real_vllm_engine_args_and_modules():
    import vllm

    from unseen.backends.vllm_local import load_vllm

    assert vllm.__version__.startswith("0.31.")
    real = [f.name for f in dataclasses.fields(resolve("vllm.engine.arg_utils:AsyncEngineArgs"))
            if not f.name.startswith("_")]
    assert real == list(si.ENGINE_ARG_FIELDS)
    assert {k.name: k.value for k in resolve("vllm.sampling_params:RequestOutputKind")} == OUTPUT_KINDS
    api = load_vllm()  # the backend's own imports resolve to these classes
    assert api.AsyncLLM is resolve("vllm.v1.engine.async_llm:AsyncLLM")
    assert "qwen3" in api.ReasoningParserManager.list_registered()
    assert params(resolve("vllm.outputs:RequestOutput.__init__")).startswith("self " + REQUEST_OUTPUT)
