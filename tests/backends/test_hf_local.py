"""The ``hf`` backend: its formulas by hand, its spec, and a tiny random-weight model run end to
end on the CPU through transformers' real processor, chat template and generate
(backends/tiny_vlm.py builds it here: nothing is downloaded)."""

from __future__ import annotations

import asyncio
import importlib.util
import math

import pytest
from helpers import read_journal

import unseen
from unseen.backends import BackendConfigError, make_backend
from unseen.backends.hf_local import generate_kwargs, split_think, step_logprobs
from unseen.engine.types import Decoding, ImagePart, Message, Request, TextPart

HAS_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "transformers"))
needs_torch = pytest.mark.skipif(
    not HAS_TORCH, reason="torch and transformers are not installed: pip install -e '.[hf]' "
                          "(.ci/run installs them)")


def req(text: str = "hi", image: str | None = None, **decoding) -> Request:
    parts = ([ImagePart(path=image)] if image else []) + [TextPart(text=text)]
    return Request(messages=[Message(role="user", parts=parts)], decoding=Decoding(**decoding))


# ------------------------------------------------------------------------- by hand


def test_step_logprobs_by_hand():
    # logits 0 and ln 3: probabilities 1/4 and 3/4 (log_softmax = logit - log(1 + 3))
    lp, top = step_logprobs([0.0, math.log(3)], chosen=0)
    assert lp == pytest.approx(math.log(0.25))
    # the chosen token first, as vLLM lists it, then the others by rank
    assert [t for t, _ in top] == [0, 1]
    assert top[1][1] == pytest.approx(math.log(0.75))
    lp, top = step_logprobs([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], chosen=5, k=3)
    norm = math.log(sum(math.exp(v) for v in range(1, 7)))
    assert lp == pytest.approx(6.0 - norm) and [t for t, _ in top] == [5, 4, 3]
    assert step_logprobs([0.0, -1e6], chosen=1)[0] == -9999.0  # floored


def test_generate_kwargs_request_then_generation_config_then_cap():
    model = {"do_sample": True, "temperature": 0.7, "max_new_tokens": 32}
    assert generate_kwargs(req(), model, 1024) == {"max_new_tokens": 32}  # the model's own
    assert generate_kwargs(req(), {}, 1024) == {"max_new_tokens": 1024}  # the stated cap
    assert generate_kwargs(req(max_tokens=5), model, 1024)["max_new_tokens"] == 5
    assert generate_kwargs(req(temperature=0, seed=3), model, 9) == {
        "max_new_tokens": 32, "do_sample": False}  # greedy: no seed needed
    sampled = Request(messages=req().messages, decoding=Decoding(temperature=0.5, seed=3),
                      sample=2)
    assert generate_kwargs(sampled, {}, 9) == {"max_new_tokens": 9, "do_sample": True,
                                               "temperature": 0.5, "seed": 5}
    assert generate_kwargs(req(seed=1), model, 9)["seed"] == 1  # the model samples
    assert generate_kwargs(req(logprobs=True), {}, 9)["output_logits"] is True


def test_split_think():
    assert split_think("<think>plan</think>\n\nA") == ("plan", "A")
    assert split_think("A") == (None, "A")
    assert split_think("</think>B") == (None, "B")


@needs_torch
def test_spec_errors_are_one_config_error():
    with pytest.raises(BackendConfigError, match="did you mean device_map"):
        make_backend("hf:/m/x,devce_map=auto")
    with pytest.raises(BackendConfigError, match="batch_size"):
        make_backend("hf:/m/x,batch_size=0")
    with pytest.raises(BackendConfigError, match="think is true or false"):
        make_backend("hf:/m/x,think=maybe")
    with pytest.raises(BackendConfigError, match="hf needs a model path"):
        make_backend("hf:")
    b = make_backend("hf:/m/x,device_map=auto,dtype=bfloat16,attn_implementation=sdpa,"
                     "revision=abc,batch_size=4,max_new_tokens=64")
    assert b.load_args == {"device_map": "auto", "dtype": "bfloat16",
                           "attn_implementation": "sdpa", "revision": "abc"}
    assert (b.batch_size, b.cap, b.enable_thinking) == (4, 64, False)


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here: the missing-extra message "
                                      "does not apply")
def test_without_torch_says_how_to_install(run_main, tmp_path):
    code, _, err = run_main(["run", "--backend", "hf:/m/x", "--limit", "1",
                             "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 2 and "pip install 'unseen[hf]'" in err and err.count("\n") == 1


# ------------------------------------------------------------- the tiny model, on the CPU


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    if not HAS_TORCH:
        pytest.skip("torch and transformers are not installed: pip install -e '.[hf]'")
    from unseen.backends.tiny_vlm import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("models") / "tiny-vlm")


@pytest.fixture(scope="module")
def image(instances):
    return str(instances[0].image)


async def test_a_batch_answers_what_each_request_alone_answers(tiny, image):
    """Left-padded batches on Qwen2-VL (its mrope positions read the padding): greedy replies
    in a batch of 3 prompts of different lengths are the replies of each alone."""
    batched = make_backend(f"hf:{tiny},box_format=norm1000")
    single = make_backend(f"hf:{tiny},box_format=norm1000,batch_size=1")
    reqs = [req("where is it?", image, temperature=0), req("pick A or B", temperature=0),
            req("a longer question about the room and its chairs", image, temperature=0)]
    together = await asyncio.gather(*(batched.complete(r) for r in reqs))
    alone = [await single.complete(r) for r in reqs]
    assert batched.batches == [3] and single.batches == [1, 1, 1]
    assert [r.text for r in together] == [r.text for r in alone]
    assert [r.usage for r in together] == [r.usage for r in alone]
    # random weights never reach EOS: the model's generation config caps them at 32 tokens
    assert all(r.usage.output_tokens == 32 and r.finish_reason == "length" for r in together)
    assert together[0].usage.input_tokens > together[1].usage.input_tokens  # image tokens
    assert together[0].served["architecture"] == "Qwen2VLForConditionalGeneration"
    assert together[0].served["device"] == "cpu" and "transformers" in together[0].served
    await batched.aclose()
    await single.aclose()


async def test_logprobs_and_caps_from_the_real_generate(tiny):
    backend = make_backend(f"hf:{tiny},box_format=norm1000")
    reply = await backend.complete(req("A or B?", temperature=0, logprobs=True, max_tokens=5))
    assert reply.usage.output_tokens == 5 and len(reply.logprobs) == 5
    for tok in reply.logprobs:
        # greedy: the chosen token is the most likely one, listed first
        assert tok["top"][0]["token"] == tok["token"]
        assert tok["logprob"] == max(t["logprob"] for t in tok["top"])
        assert sum(math.exp(t["logprob"]) for t in tok["top"]) <= 1 + 1e-6
    assert "".join(t["token"] for t in reply.logprobs) == reply.text
    await backend.aclose()


def test_think_tags_are_not_special_in_the_tiny_tokenizer(tiny):
    """A decode that skips special tokens (hf's, vLLM's default) keeps <think> and </think>,
    so a reasoning parser still sees them; the chat tokens go."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    ids = tokenizer.encode("<think>plan</think>A<|im_end|>", add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=True) == "<think>plan</think>A"
    assert tokenizer.decode(ids, skip_special_tokens=False) == "<think>plan</think>A<|im_end|>"


def test_qwen2_vl_processor_without_torchvision(tiny):
    """transformers 5's Qwen2VLProcessor needs a video processor, which needs torchvision: hf
    loads the same processor without it, images through the PIL image processor."""
    import json

    from transformers import AutoProcessor

    from unseen.backends.hf_local import has_torchvision, load_processor

    if has_torchvision():
        pytest.skip("torchvision imports here: AutoProcessor loads the whole processor")
    with pytest.raises(Exception, match="(?i)torchvision"):
        AutoProcessor.from_pretrained(tiny)
    processor = load_processor(str(tiny))
    assert type(processor).__name__ == "Qwen2VLProcessor"
    assert type(processor.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    assert not hasattr(processor, "video_processor")
    # the folder names the video processor for a machine that has torchvision
    saved = json.loads((tiny / "processor_config.json").read_text())
    assert saved["video_processor"]["video_processor_type"] == "Qwen2VLVideoProcessor"
    assert saved["image_processor"]["image_processor_type"] == "Qwen2VLImageProcessor"


async def test_chat_template_gets_only_the_variables_it_reads(tiny):
    """transformers 5.17 takes a keyword its template does not read for the processor's own
    and logs a warning on every call; hf sends the template what it reads."""
    import logging

    from unseen.backends.hf_local import template_variables

    assert template_variables("{{ a }}{% if b %}{{ c.d }}{% endif %}") == {"a", "b", "c"}
    assert template_variables(None) is None
    assert template_variables("{% generation %}x{% endgeneration %}") is None  # hf's own tag
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Keep(logging.WARNING)
    logging.getLogger("transformers").addHandler(handler)
    backend = make_backend(f"hf:{tiny},box_format=norm1000")
    try:
        reply = await backend.complete(req("A or B?", reasoning_effort="low", max_tokens=2))
    finally:
        logging.getLogger("transformers").removeHandler(handler)
        await backend.aclose()
    assert reply.usage.output_tokens == 2
    assert not [m for m in seen if "processor_kwargs" in m], seen


@needs_torch
async def test_a_failed_load_is_one_typed_config_error(tmp_path):
    from unseen.backends import Reliable

    backend = Reliable(make_backend(f"hf:{tmp_path / 'missing'},box_format=norm1000"),
                       max_attempts=3, backoff_base_s=0.01)
    for _ in range(2):
        reply = await backend.complete(req())
        assert reply.error.kind == "config" and reply.error.attempts == 1
    await backend.aclose()


@needs_torch
async def test_new_weights_in_the_folder_change_the_cache_key(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"v1")
    one = await make_backend(f"hf:{folder}").identify()
    (folder / "model.safetensors").write_bytes(b"v2, longer")
    two = await make_backend(f"hf:{folder}").identify()
    assert one["files"] != two["files"] and one["load"] == two["load"]
    assert (await make_backend(f"hf:{folder},dtype=bfloat16").identify())["load"] != one["load"]


def test_direct_spoe_and_a_director_condition_end_to_end(tiny, sample_data, tmp_path):
    """The run pipeline on the real model: every trajectory answered or failed typed (random
    weights answer nonsense: parse failures), never an internal error; provenance journaled."""
    from unseen.commands.director_run import run_study
    from unseen.evals.director.study.design import Design

    spec = f"hf:{tiny},box_format=norm1000"
    res = unseen.run(sample_data, ["direct", "spoe:T=2"], [spec], out=tmp_path / "run", limit=2,
                     cache=False, progress=False, max_attempts=1)
    assert res.done == 4
    rows = read_journal(tmp_path / "run")
    assert {r["strategy"].split(":")[0] for r in rows} == {"direct", "spoe"}
    steps = [s for r in rows for s in r["steps"]]
    assert steps and all(s["reply"]["usage"]["output_tokens"] > 0 for s in steps)
    assert all(s["reply"]["served"]["model"] == str(tiny) for s in steps)
    kinds = {(r.get("error") or {}).get("kind") for r in rows if r["status"] != "answered"}
    assert "internal" not in kinds and "config" not in kinds
    design = Design.model_validate({"name": "hf-check", "size": "512x384",
                                    "sets": {"main": {"n": 2}},
                                    "batch": [{"name": "b", "conditions": ["move"]}]})
    run_study(design, [spec], tmp_path / "director", progress=False, cache=False,
              max_attempts=1)
    rows = read_journal(tmp_path / "director")
    assert rows and all(r["backend"] == spec for r in rows)
    assert all(s["reply"]["served"]["architecture"] for r in rows for s in r["steps"])
    kinds = {(r.get("error") or {}).get("kind") for r in rows if r["status"] != "answered"}
    assert "internal" not in kinds and "config" not in kinds
