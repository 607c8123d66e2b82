"""vllm-local against the stand-in engine (tests/vllm_standin.py, vLLM 0.31's interfaces):
engine arguments from the spec, continuous batching, the reasoning trace, log-probabilities,
usage, decoding defaults, typed errors. The stand-in's signatures are checked against vLLM's in
test_vllm_interfaces.py."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import math

import pytest
import vllm_standin
from helpers import read_journal
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from vllm_standin import EngineDeadError, QueueOverflowError, Scripted, VLLMValidationError

import unseen
from unseen.backends import BackendConfigError, Reliable, make_backend
from unseen.backends.vllm_args import parse_target, split_top
from unseen.engine.backend import ProviderError
from unseen.engine.types import Decoding, Message, Request, TextPart
from unseen.strategies.choice import choice_confidence

MODEL = "/models/Qwen3-VL-8B"


@pytest.fixture
def world(monkeypatch):
    return vllm_standin.install(monkeypatch)


def req(text: str, **decoding) -> Request:
    return Request(messages=[Message(role="user", parts=[TextPart(text=text)])],
                   decoding=Decoding(**decoding))


def backend_for(*args: str):
    return make_backend("vllm-local:" + ",".join([MODEL, *args]))


# ------------------------------------------------------------------------ engine arguments


async def test_engine_arguments_reach_async_engine_args(world):
    backend = backend_for("tensor_parallel_size=2", "data_parallel_size=2",
                          "max_model_len=32768", 'limit_mm_per_prompt={"image": 1, "video": 0}',
                          "distributed_executor_backend=ray", "reasoning_parser=qwen3",
                          "enforce_eager=true")
    # qwen3 with thinking on: an answer without </think> is all reasoning, as in vLLM
    assert (await backend.complete(req("hi"))).reasoning == "ok"
    (engine,) = world.engines
    args = engine.engine_args
    assert args.model == MODEL
    assert args.tensor_parallel_size == 2 and args.data_parallel_size == 2
    assert args.max_model_len == 32768
    assert args.limit_mm_per_prompt == {"image": 1, "video": 0}
    assert args.distributed_executor_backend == "ray"
    assert args.reasoning_parser == "qwen3" and args.enforce_eager is True
    assert args.gpu_memory_utilization is None  # unset: vLLM's own default
    assert backend.describe()["engine_args"]["tensor_parallel_size"] == 2
    await backend.aclose()
    assert engine.stopped


def test_unknown_engine_argument_is_one_config_error(world):
    with pytest.raises(BackendConfigError, match="did you mean tensor_parallel_size"):
        backend_for("tensor_paralel_size=2")
    with pytest.raises(BackendConfigError, match="not key=value"):
        backend_for("tensor_parallel_size")
    with pytest.raises(BackendConfigError, match="given twice"):
        backend_for("max_model_len=1", "max_model_len=2")
    with pytest.raises(BackendConfigError, match="not a model= argument"):
        backend_for("model=/other")
    with pytest.raises(BackendConfigError, match="no reasoning parser 'qwen9'; known: qwen3"):
        backend_for("reasoning_parser=qwen9")


def test_cli_bad_engine_argument_one_line_exit_2(world, run_main, tmp_path):
    code, _, err = run_main(["run", "--backend", f"vllm-local:{MODEL},tensor_paralel_size=2",
                             "--limit", "1", "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 2
    assert err.count("\n") == 1 and "tensor_parallel_size" in err and "Traceback" not in err


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                    reason="vLLM is installed here; the missing-extra message does not apply")
def test_without_vllm_connect_says_how_to_install(run_main, tmp_path):
    with pytest.raises(BackendConfigError, match=r"pip install 'unseen\[vllm\]'"):
        make_backend(f"vllm-local:{MODEL}")
    code, _, err = run_main(["run", "--backend", f"vllm-local:{MODEL}", "--limit", "1",
                             "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 2 and "pip install 'unseen[vllm]'" in err and err.count("\n") == 1


def test_split_and_parse_by_hand():
    assert split_top('a,b={"x": [1, 2]},c="p,q"') == ["a", 'b={"x": [1, 2]}', 'c="p,q"']
    path, args = parse_target('/m/X, max_model_len = 8192,dtype=float16,tp_hint=null')
    assert path == "/m/X" and args == {"max_model_len": 8192, "dtype": "float16", "tp_hint": None}


_KEY = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
_VALUE = st.one_of(
    st.integers(-10**6, 10**6), st.booleans(), st.none(),
    st.from_regex(r"[a-z][a-z0-9_.\-]{0,10}", fullmatch=True).filter(
        lambda s: s not in ("true", "false", "null", "nan", "infinity")),
    st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.integers(0, 9), max_size=3),
)


@given(st.dictionaries(_KEY, _VALUE, max_size=6))
def test_parse_target_round_trip(args):
    text = ",".join([MODEL] + [f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                               for k, v in args.items()])
    assert parse_target(text) == (MODEL, args)


@given(st.text(max_size=60))
def test_parse_target_never_crashes(text):
    with contextlib.suppress(BackendConfigError):  # anything else fails the test
        parse_target(text)


# ------------------------------------------------------------------- continuous batching


async def test_request_arriving_during_a_long_generation_finishes_first(world):
    """Continuous batching: the short request joins the running batch and leaves it when it
    is done, long before the long one (a batch-at-a-time engine would hold it to the end)."""
    world.respond = lambda prompt, params: (Scripted("long answer", steps=400) if "long" in prompt
                                            else Scripted("short"))
    backend = backend_for()
    long_call = asyncio.create_task(backend.complete(req("the long one")))
    while not world.engines or not world.engines[0].active:
        await asyncio.sleep(0)
    engine = world.engines[0]
    short = await backend.complete(req("a short one"))
    assert short.text == "short"
    assert not long_call.done() and len(engine.finished) == 1
    assert (await long_call).text == "long answer"
    assert engine.max_active == 2
    assert [r["params"].output_kind.name for r in engine.requests] == ["FINAL_ONLY"] * 2
    await backend.aclose()


async def test_many_concurrent_requests_each_get_their_own_reply(world):
    world.respond = lambda prompt, params: Scripted("echo " + prompt.split("\n")[1].split("<")[0],
                                                    steps=len(prompt) % 7)
    backend = backend_for()
    replies = await asyncio.gather(*(backend.complete(req(f"q{i}")) for i in range(30)))
    assert [r.text for r in replies] == [f"echo q{i}" for i in range(30)]
    assert len({r["request_id"] for r in world.engines[0].requests}) == 30
    await backend.aclose()


# --------------------------------------------------- reasoning, effort, usage, log-probs


async def test_reasoning_trace_usage_and_effort(world):
    world.respond = lambda prompt, params: Scripted('<think>plan</think>\n\n{"choice": "A"}')
    backend = backend_for("reasoning_parser=qwen3")
    assert backend.capabilities.reasoning
    reply = await backend.complete(req("pick", reasoning_effort="medium"))
    assert reply.reasoning == "plan"
    assert reply.text == '{"choice": "A"}'
    engine = world.engines[0]
    (conversations, chat_params, tok_params), = engine.renders
    # ChatCompletionRequest.build_chat_params: effort, and thinking on for any effort but none
    assert chat_params.chat_template_kwargs == {
        "add_generation_prompt": True, "continue_final_message": False,
        "reasoning_effort": "medium", "enable_thinking": True}
    assert tok_params.add_special_tokens is False  # offline_utils: the template adds them
    assert conversations == [[{"role": "user", "content": "pick"}]]
    (sent,) = engine.requests
    assert sent["reasoning_ended"] is False
    assert sent["reasoning_parser_kwargs"] == {"chat_template_kwargs": chat_params.chat_template_kwargs}
    # usage by hand: the prompt's 18 pieces (<|im_start|> system \n Reasoning : ␠ medium
    # <|im_end|> \n <|im_start|> user \n pick <|im_end|> \n <|im_start|> assistant \n); the
    # output's 14 (<think> plan </think> \n\n { " choice " : ␠ " A " }), 1 of them reasoning
    prompt = "<|im_start|>system\nReasoning: medium<|im_end|>\n<|im_start|>user\npick<|im_end|>\n<|im_start|>assistant\n"
    assert sent["prompt"]["prompt"] == prompt
    assert reply.usage.input_tokens == len(sent["prompt"]["prompt_token_ids"]) == 18
    assert reply.usage.output_tokens == 14 and reply.usage.reasoning_tokens == 1
    await backend.aclose()


async def test_effort_none_turns_thinking_off(world):
    world.respond = lambda prompt, params: Scripted("B")
    backend = backend_for("reasoning_parser=qwen3")
    reply = await backend.complete(req("pick", reasoning_effort="none"))
    assert reply.text == "B" and reply.reasoning is None
    (sent,) = world.engines[0].requests
    assert sent["prompt"]["prompt"].endswith("<think>\n\n</think>\n\n")
    assert sent["reasoning_ended"] is True  # the prompt already closed the think block
    await backend.aclose()


async def test_without_a_reasoning_parser_the_text_is_left_whole(world):
    world.respond = lambda prompt, params: Scripted("<think>x</think>B")
    backend = backend_for()
    reply = await backend.complete(req("pick"))
    assert reply.text == "<think>x</think>B" and reply.reasoning is None
    assert not backend.capabilities.reasoning
    assert world.engines[0].requests[0]["reasoning_ended"] is None
    await backend.aclose()


async def test_logprobs_give_spoe_its_confidence(world):
    world.respond = lambda prompt, params: Scripted(
        "A", top=[{"A": math.log(0.7), "B": math.log(0.2), "C": math.log(0.1)}])
    backend = backend_for()
    reply = await backend.complete(req("A or B?", choices=["A", "B"], logprobs=True))
    params = world.engines[0].requests[0]["params"]
    assert params.logprobs == 5
    assert params.structured_outputs.choice == ["A", "B"]
    (tok,) = reply.logprobs
    assert tok["token"] == "A" and tok["logprob"] == pytest.approx(math.log(0.7))
    assert [t["token"] for t in tok["top"]] == ["A", "B", "C"]
    assert choice_confidence(reply.logprobs, ["A", "B"], "A") == pytest.approx(0.7 / 0.9)
    await backend.aclose()


async def test_json_schema_goes_to_structured_outputs(world):
    schema = {"type": "object", "properties": {"box": {"type": "array"}}}
    backend = backend_for()
    await backend.complete(req("box?", json_schema=schema))
    params = world.engines[0].requests[0]["params"]
    assert params.structured_outputs.json == schema and params.structured_outputs.choice is None
    assert params.logprobs is None
    await backend.aclose()


# ------------------------------------------------------------------------- decoding


async def test_no_output_cap_by_default(world):
    long_text = " ".join(f"w{i}" for i in range(1500))  # 2,999 pieces: past the old 2,048 cap
    world.respond = lambda prompt, params: Scripted(long_text)
    backend = backend_for()
    reply = await backend.complete(req("talk"))
    assert reply.text == long_text and reply.finish_reason == "stop"
    assert reply.usage.output_tokens == 2999
    assert world.engines[0].requests[0]["params"].max_tokens is None
    capped = await backend.complete(req("talk", max_tokens=5))
    assert capped.usage.output_tokens == 5 and capped.finish_reason == "length"
    await backend.aclose()


async def test_sampling_follows_request_then_model_then_openai_defaults(world):
    # ChatCompletionRequest.to_sampling_params: user -> server default -> OpenAI default
    world.generation_config = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    backend = backend_for()
    await backend.complete(req("a"))
    await backend.complete(Request(messages=req("b").messages,
                                   decoding=Decoding(temperature=0.0, seed=3), sample=2))
    first, second = (r["params"] for r in world.engines[0].requests)
    assert (first.temperature, first.top_p, first.top_k, first.min_p) == (0.6, 0.95, 20, 0.0)
    assert first.seed is None and first.repetition_penalty == 1.0
    assert (second.temperature, second.top_p, second.seed) == (0.0, 0.95, 5)  # seed + sample
    await backend.aclose()


async def test_model_max_new_tokens_caps_like_the_server(world):
    world.generation_config = {"max_new_tokens": 7}  # get_diff_sampling_param: max_tokens
    backend = backend_for()
    await backend.complete(req("a"))
    await backend.complete(req("b", max_tokens=3))
    assert [r["params"].max_tokens for r in world.engines[0].requests] == [7, 3]
    await backend.aclose()


# ----------------------------------------------------------------------------- failures


async def test_engine_start_failure_is_one_typed_config_error(world):
    world.fail_start = RuntimeError("CUDA out of memory")
    backend = Reliable(backend_for(), max_attempts=3, backoff_base_s=0.01)
    for _ in range(2):
        reply = await backend.complete(req("x"))
        assert reply.error.kind == "config" and reply.error.attempts == 1
        assert "CUDA out of memory" in reply.error.message
    await backend.aclose()


@pytest.mark.parametrize(("exc", "kind"), [
    (VLLMValidationError("prompt too long"), "client"),
    (QueueOverflowError("queue full"), "rate_limit"),
    (EngineDeadError("dead"), "server"),
    (RuntimeError("boom"), "server"),
])
async def test_vllm_errors_are_typed(world, exc, kind):
    world.respond = lambda prompt, params: exc
    backend = backend_for()
    with pytest.raises(ProviderError) as info:
        await backend.complete(req("x"))
    assert info.value.kind == kind
    await backend.aclose()


async def test_start_up_does_not_count_against_the_call_timeout(world):
    class Slow:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        async def ready(self):
            await asyncio.sleep(0.3)  # loading a model: three call timeouts long
            await self.inner.ready()

    backend = Reliable(Slow(backend_for()), timeout_s=0.1, max_attempts=1)
    reply = await backend.complete(req("x"))
    assert reply.ok and reply.text == "ok"
    await backend.aclose()


# ------------------------------------------------------------------------ end to end


def test_run_direct_and_spoe_end_to_end(world, sample_data, instances, tmp_path):
    def respond(prompt, params):
        if params.structured_outputs is not None and params.structured_outputs.choice:
            # pieces: <think> left ␠ looks ␠ emptier </think> A: the answer is the 8th
            return Scripted("<think>left looks emptier</think>A",
                            top=[{}] * 7 + [{"A": math.log(0.8), "B": math.log(0.2)}])
        return Scripted('<think>it is by the door</think>{"bbox_2d": [100, 200, 300, 400]}')  # qwen3's key

    world.respond = respond
    spec = f"vllm-local:{MODEL},reasoning_parser=qwen3"
    res = unseen.run(sample_data, ["direct", "spoe:T=2"], [spec], out=tmp_path / "run", limit=2,
                     cache=False, progress=False)
    assert res.done == 4 and res.answered == 4
    rows = read_journal(tmp_path / "run")
    direct = [r for r in rows if r["strategy"] == "direct"]
    spoe = [r for r in rows if r["strategy"].startswith("spoe")]
    assert all(s["reply"]["reasoning"] == "it is by the door" for r in direct for s in r["steps"])
    assert all(r["prediction"] == pytest.approx([64.0, 96.0, 192.0, 192.0]) for r in direct)
    steps = [s for r in spoe for s in r["steps"]]
    assert len(steps) == 4 and all(s["parsed"]["confidence"] == pytest.approx(0.8) for s in steps)
    # every image went in whole: the engine decoded each data URL to the file's own size
    sizes = {Image.open(inst.image).size for inst in instances[:2]}
    for engine in world.engines:
        for sent in engine.requests:
            assert {im.size for im in sent["prompt"]["mm_kwargs"]["image"]} <= sizes


async def test_the_cache_key_holds_what_changes_the_engines_replies(world, tmp_path):
    """vllm-local's serving identity: the engine arguments that change replies (dtype,
    revision, quantization, max_model_len, chat template, mm_processor_kwargs, ...) and a
    model folder's files, so new weights in the same folder get no old replies."""
    base = await backend_for("dtype=float16").identify()
    assert base["engine"] == {"dtype": "float16"}
    assert await backend_for("dtype=bfloat16").identify() != base
    assert await backend_for("dtype=float16", "max_model_len=4096").identify() != base
    # an argument that changes nothing of the replies leaves the key alone
    assert await backend_for("dtype=float16", "gpu_memory_utilization=0.8").identify() == base
    folder = tmp_path / "qwen3-vl-8b"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1")
    one = await make_backend(f"vllm-local:{folder}").identify()
    (folder / "model.safetensors").write_bytes(b"weights v2, longer")
    assert (await make_backend(f"vllm-local:{folder}").identify())["files"] != one["files"]
    # Qwen2.5-VL's resize is the processor's, engine-wide: an option sets it
    qwen = make_backend("vllm-local:/models/Qwen2.5-VL-7B,max_pixels=1003520")
    assert qwen.engine_args["mm_processor_kwargs"] == {"max_pixels": 1003520}
    assert qwen.box_format.max_pixels == 1003520


# ------------------------------------------- where the stand-in once differed from vLLM


async def test_special_think_tags_still_reach_the_parser(world):
    """vLLM's server decodes with skip_special_tokens=False under a reasoning parser; a
    tokenizer whose think tags are special would lose them otherwise, and the parser with
    them the answer."""
    world.special = world.special | {"<think>", "</think>"}
    world.respond = lambda prompt, params: Scripted("<think>plan</think>B")
    backend = backend_for("reasoning_parser=qwen3")
    reply = await backend.complete(req("pick", reasoning_effort="low"))
    assert (reply.reasoning, reply.text) == ("plan", "B")
    assert world.engines[0].requests[0]["params"].skip_special_tokens is False
    plain = backend_for()  # no parser: vLLM's default decode, special pieces dropped
    assert (await plain.complete(req("pick"))).text == "planB"
    await backend.aclose()
    await plain.aclose()


async def test_a_model_that_does_not_think_keeps_its_answer(world):
    """qwen3's parser with thinking on puts output without </think> into reasoning: the
    answer is lost; enable_thinking=false (a model that does not think) keeps it."""
    world.respond = lambda prompt, params: Scripted('{"choice": "A"}')
    thinking = backend_for("reasoning_parser=qwen3")
    lost = await thinking.complete(req("pick", reasoning_effort="low"))
    assert lost.text == "" and lost.reasoning == '{"choice": "A"}'
    plain = backend_for("reasoning_parser=qwen3", "enable_thinking=false")
    kept = await plain.complete(req("pick", reasoning_effort="low"))
    assert kept.text == '{"choice": "A"}' and kept.reasoning is None
    (engine,) = world.engines  # the same model and engine arguments: one engine
    (_, chat_params, _) = engine.renders[1]
    assert chat_params.chat_template_kwargs["enable_thinking"] is False
    await thinking.aclose()
    await plain.aclose()


async def test_an_engine_generate_error_keeps_its_cause(world):
    world.respond = lambda prompt, params: RuntimeError("CUDA error: illegal memory access")
    backend = backend_for()
    with pytest.raises(ProviderError) as info:
        await backend.complete(req("x"))
    assert info.value.kind == "server"
    assert "EngineGenerateError" in str(info.value) and "illegal memory access" in str(info.value)
    await backend.aclose()


async def test_the_grammar_applies_only_after_the_reasoning_ends(world):
    """As vLLM's engine: with a reasoning parser, structured output constrains only what comes
    after </think>; a model that never writes it gets no grammar at all (and, thinking on,
    loses its answer to the reasoning), while a prompt whose think block is already closed
    (enable_thinking=false) is constrained from the first token."""
    world.respond = lambda prompt, params: Scripted("maybe C")
    thinking = backend_for("reasoning_parser=qwen3")
    free = await thinking.complete(req("pick", choices=["A", "B"]))
    assert (free.text, free.reasoning) == ("", "maybe C")  # unconstrained, all reasoning
    plain = backend_for("reasoning_parser=qwen3", "enable_thinking=false")
    forced = await plain.complete(req("pick", choices=["A", "B"]))
    assert (forced.text, forced.reasoning) == ("A", None)  # the grammar forced a choice
    (engine,) = world.engines
    assert [r["grammar_applied"] for r in engine.requests] == [False, True]
    # what unseen tells the engine, as vLLM's serving layer does: whether the prompt closed
    # the reasoning, and the parser's chat-template arguments (the stand-in works it out
    # alone when told nothing, so the gating above does not show that unseen says it)
    assert [r["reasoning_ended"] for r in engine.requests] == [False, True]
    assert [r["reasoning_parser_kwargs"]["chat_template_kwargs"].get("enable_thinking")
            for r in engine.requests] == [None, False]
    # reasoning text is never constrained; the answer after </think> is
    world.respond = lambda prompt, params: Scripted('<think>{not json</think>\n\nnot json')
    reply = await thinking.complete(req("box?", json_schema={"type": "object"}))
    assert (reply.reasoning, reply.text) == ("{not json", "{}")
    # without a reasoning parser the grammar applies from the start, think tags and all
    world.respond = lambda prompt, params: Scripted("<think>B</think>B")
    bare = backend_for()
    assert (await bare.complete(req("pick", choices=["A", "B"]))).text == "A"
    for backend in (thinking, plain, bare):
        await backend.aclose()


async def test_backends_of_one_model_share_one_engine(world):
    """One engine per model and engine arguments in an event loop: a second backend (the
    Director study after the SceneFunRI run in the GPU check) loads no second copy; the last
    one to close shuts it down; request ids never collide."""
    first, second = backend_for("max_model_len=4096"), backend_for("max_model_len=4096")
    other = backend_for("max_model_len=2048")
    await asyncio.gather(first.complete(req("a")), second.complete(req("b")),
                         other.complete(req("c")))
    shared, own = world.engines
    assert len(shared.requests) == 2 and len(own.requests) == 1
    ids = [r["request_id"] for e in world.engines for r in e.requests]
    assert len(set(ids)) == 3
    await first.aclose()
    assert not shared.stopped
    assert (await second.complete(req("d"))).text == "ok"
    await second.aclose()
    assert shared.stopped and not own.stopped
    await other.aclose()


async def test_spawn_is_set_before_the_engine_starts(world, monkeypatch):
    """vLLM forks its engine process unless told otherwise, and a parent that touched CUDA
    cannot fork (vllm-project/vllm#9469): spawn is in the environment the engine starts in,
    unless the user chose."""
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    backend = backend_for()
    await backend.complete(req("a"))
    assert world.engines[0].env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    await backend.aclose()
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    mine = backend_for("seed=1")
    await mine.complete(req("a"))
    assert world.engines[1].env["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"
    await mine.aclose()


async def test_override_generation_config_caps_outputs(world):
    """vLLM's ModelConfig.get_diff_sampling_param: override_generation_config updates the
    model's generation config, its max_new_tokens the default max_tokens of every request."""
    world.generation_config = {"max_new_tokens": 100, "temperature": 0.7}
    world.respond = lambda prompt, params: Scripted(" ".join(["w"] * 40))  # 79 pieces
    backend = backend_for('override_generation_config={"max_new_tokens": 32}')
    reply = await backend.complete(req("talk"))
    (engine,) = world.engines
    assert engine.engine_args.override_generation_config == {"max_new_tokens": 32}
    assert engine.requests[0]["params"].max_tokens == 32
    assert engine.requests[0]["params"].temperature == 0.7  # the model's own, not overridden
    assert reply.usage.output_tokens == 32 and reply.finish_reason == "length"
    await backend.aclose()
