"""A tiny random-weight vision-language model, built on this machine: nothing is downloaded.

A transformers config of a few layers, a byte-level BPE tokenizer trained on the spot on the
project's own prompts, the architecture's image processor and a cut-down Qwen2-VL chat
template, saved to a folder that ``hf:``, ``vllm-local:`` and ``vllm serve`` load like any
checkpoint. Its answers are nonsense, but the processor, template and generate path are the
real ones. Two architectures (:data:`ARCHS`):

- ``qwen2-vl`` (Qwen2VLForConditionalGeneration): what the GPU and device checks run. Its
  processor in transformers 5 holds a video processor, which needs torchvision;
- ``llava`` (LlavaForConditionalGeneration: a CLIP vision tower, a Qwen2 language model): the
  same tokenizer and template with an image-only processor, for machines without torchvision
  (a CPU build of torch from a file cannot import PyPI's torchvision): CI's.

``<think>`` and ``</think>`` are ordinary (non-special) tokens, as in Qwen3's tokenizer, so a
decode that skips special tokens keeps them and a reasoning parser still sees them.
"""

from __future__ import annotations

from pathlib import Path

#: special tokens: Qwen2-VL's control tokens; the think tags are added as ordinary tokens
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
            "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
THINK = ["<think>", "</think>"]
# Qwen2-VL's chat template, cut to what these requests use (text and images in user turns);
# enable_thinking=false writes an empty think block, as Qwen3's does
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif 'text' in content %}"
    "{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
#: at most this many merged 28x28 patches an image: small prompts, well inside the context
MAX_PATCHES = 64
#: the cap on new tokens the saved generation config sets: random weights almost never emit
#: EOS (p 0.0010 a step), so an uncapped reply would run to the end of the context
MAX_NEW_TOKENS = 32
VOCAB = 2000
HEADS = 4
#: the LLaVA tower's square input: 4 x 4 patches of 14 pixels, 16 image tokens
LLAVA_SIDE = 56


def corpus() -> list[str]:
    """Text to train the tokenizer on: the project's prompt templates and some JSON."""
    root = Path(__file__).resolve().parents[1]  # the repository, or the installed package
    texts = [p.read_text(encoding="utf-8") for d in ("strategies/prompts", "evals/director/task/prompts")
             for p in sorted((root / d).rglob("*.txt"))]
    return texts + ['{"box": [12, 345, 678, 901]}', '{"choice": "A"}', "A B C 0123456789"]


def _tokenizer(image_token: str):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = SPECIALS + ([image_token] if image_token not in SPECIALS else [])
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=specials[1:])
    tokenizer.chat_template = template(image_token)
    return tokenizer


def template(image_token: str) -> str:
    """The chat template with this image placeholder (Qwen2-VL's, or LLaVA's ``<image>``)."""
    qwen = "<|vision_start|><|image_pad|><|vision_end|>"
    return CHAT_TEMPLATE if image_token == "<|image_pad|>" else CHAT_TEMPLATE.replace(
        qwen, image_token)


def _text_config(tokenizer, hidden: int, layers: int) -> dict:
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_end|>")}
    half = hidden // HEADS // 2  # mrope splits the rotary half over time, height and width
    return {
        "vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers, "num_attention_heads": HEADS, "num_key_value_heads": 2,
        "max_position_embeddings": 4096, "max_window_layers": layers,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                            "mrope_section": [half // 4, 3 * half // 8,
                                              half - half // 4 - 3 * half // 8]},
        "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"], "tie_word_embeddings": False,
    }


def _qwen2_vl(hidden: int, layers: int):
    # needs torchvision: transformers declares it only where torchvision is installed
    import transformers
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
    )
    # declared by transformers only where torchvision is installed, so mypy on a machine
    # without it cannot see the name (and reports a multi-line import on its first line)
    video_processor = transformers.Qwen2VLVideoProcessor  # type: ignore[attr-defined,unused-ignore]

    tokenizer = _tokenizer("<|image_pad|>")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    text = _text_config(tokenizer, hidden, layers)
    config = Qwen2VLConfig(
        text_config=text,
        vision_config={"depth": layers, "embed_dim": 32, "hidden_size": hidden, "num_heads": 4,
                       "mlp_ratio": 2, "patch_size": 14, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    config.architectures = ["Qwen2VLForConditionalGeneration"]
    # small images: at most MAX_PATCHES merged patches each, well inside the context
    images = Qwen2VLImageProcessor(min_pixels=8 * 28 * 28, max_pixels=MAX_PATCHES * 28 * 28)
    processor = Qwen2VLProcessor(image_processor=images, tokenizer=tokenizer,
                                 video_processor=video_processor(),
                                 chat_template=tokenizer.chat_template)
    return Qwen2VLForConditionalGeneration, config, processor, tokenizer


def _llava(hidden: int, layers: int):
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        Qwen2Config,
    )

    tokenizer = _tokenizer("<image>")
    text = _text_config(tokenizer, hidden, layers)
    text.pop("rope_parameters")  # plain rotary: mrope is Qwen2-VL's
    side = LLAVA_SIDE
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                              num_attention_heads=4, image_size=side, patch_size=14)
    config = LlavaConfig(vision_config=vision, text_config=Qwen2Config(**text),
                         # the config takes it (its __init__ reads **kwargs); mypy sees
                         # transformers' declared signature only
                         image_token_id=tokenizer.convert_tokens_to_ids("<image>"),  # type: ignore[call-arg]
                         vision_feature_layer=-1, vision_feature_select_strategy="default")
    config.architectures = ["LlavaForConditionalGeneration"]
    images = CLIPImageProcessor(size={"shortest_edge": side},
                                crop_size={"height": side, "width": side})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=tokenizer.chat_template, image_token="<image>")
    return LlavaForConditionalGeneration, config, processor, tokenizer


ARCHS = {"qwen2-vl": _qwen2_vl, "llava": _llava}


def default_arch() -> str:
    """``qwen2-vl`` where torchvision imports (its processor needs it), else ``llava``."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # absent, or a build that does not match this torch
        return "llava"
    return "qwen2-vl"


def build_tiny_vlm(folder: Path, *, arch: str | None = None, hidden: int = 64, layers: int = 2,
                   dtype: str = "float32", max_new_tokens: int | None = MAX_NEW_TOKENS) -> Path:
    """A random-weight model of ``arch`` (:data:`ARCHS`; :func:`default_arch` when None), its
    tokenizer and processor saved under ``folder``; seeded, so the same weights each time;
    ``max_new_tokens`` goes into its generation config."""
    import torch

    arch = arch or default_arch()
    if arch not in ARCHS:
        raise ValueError(f"unknown tiny architecture {arch!r}; known: {', '.join(ARCHS)}")
    cls, config, processor, tokenizer = ARCHS[arch](hidden, layers)
    torch.manual_seed(0)
    model = cls(config).to(getattr(torch, dtype))
    gen = model.generation_config
    gen.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    gen.pad_token_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    if max_new_tokens is not None:
        gen.max_new_tokens = max_new_tokens
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
