"""vllm-local: batching around LLM.chat, tested with a stand-in engine; real vLLM if present."""

import asyncio
import importlib.util
from types import SimpleNamespace

import pytest

from unseen.backends import make_backend
from unseen.backends.vllm_local import VLLMLocal, sampling_kwargs
from unseen.engine.types import Decoding, Message, Request, TextPart


class FakeLLM:
    """Records each batch; echoes each conversation's text so replies can be matched."""

    def __init__(self):
        self.batches = []

    def chat(self, conversations, sampling_params):
        self.batches.append((conversations, sampling_params))
        return [SimpleNamespace(prompt_token_ids=[1, 2, 3], outputs=[SimpleNamespace(
            text="echo " + c[0]["content"][0]["text"], token_ids=[7, 8], finish_reason="stop")])
            for c in conversations]


def req(text, **dec):
    return Request(messages=[Message(role="user", parts=[TextPart(text=text)])],
                   decoding=Decoding(**dec))


async def test_concurrent_requests_are_batched_and_matched():
    fake = FakeLLM()
    backend = VLLMLocal("some/model", spec="vllm-local:some/model", engine_factory=lambda: fake,
                        make_sampling=dict, window_s=0.05)
    replies = await asyncio.gather(*(backend.complete(req(f"q{i}")) for i in range(10)))
    assert [r.text for r in replies] == [f"echo q{i}" for i in range(10)]
    assert len(fake.batches) < 10 and sum(len(b[0]) for b in fake.batches) == 10
    assert replies[0].usage.input_tokens == 3 and replies[0].usage.output_tokens == 2
    await backend.aclose()


async def test_engine_failure_reaches_every_waiting_request():
    def broken():
        raise RuntimeError("CUDA out of memory")

    backend = VLLMLocal("m", spec="vllm-local:m", engine_factory=broken, make_sampling=dict)
    from unseen.engine.backend import ProviderError

    with pytest.raises(ProviderError, match="CUDA out of memory"):
        await backend.complete(req("x"))
    await backend.aclose()


def test_sampling_kwargs():
    kw = sampling_kwargs(req("x", temperature=0.0, seed=3, choices=["A", "B"], logprobs=True))
    assert kw == {"temperature": 0.0, "seed": 3, "max_tokens": 2048, "logprobs": 5,
                  "structured_outputs": {"choice": ["A", "B"]}}
    assert sampling_kwargs(req("x", json_schema={"type": "object"}))["structured_outputs"] == {
        "json": {"type": "object"}}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                    reason="vLLM is installed here; the missing-extra message does not apply")
async def test_without_vllm_the_error_says_how_to_install():
    backend = make_backend("vllm-local:/models/x")
    from unseen.engine.backend import ProviderError

    with pytest.raises(ProviderError, match=r"pip install 'unseen\[vllm\]'"):
        await backend.complete(req("x"))
    await backend.aclose()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                    reason="vLLM is not installed (optional extra 'vllm'; needs a GPU machine)")
def test_real_vllm_sampling_params_build():
    from unseen.backends.vllm_local import _vllm_sampling

    sp = _vllm_sampling({"temperature": 0.0, "max_tokens": 8, "structured_outputs": {"choice": ["A", "B"]}})
    assert sp.max_tokens == 8
