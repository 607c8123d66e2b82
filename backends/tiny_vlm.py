"""A tiny random-weight vision-language model, built on this machine: nothing is downloaded.

A Qwen2-VL config of a few layers (Qwen2VLForConditionalGeneration), a byte-level BPE
tokenizer trained on the spot on the project's own prompts, Qwen2-VL's processor and a
cut-down Qwen2-VL chat template, saved to a folder that ``hf:``, ``vllm-local:`` and ``vllm
serve`` load like any checkpoint. Its answers are nonsense, but the processor, template and
generate path are the real ones.

Qwen2-VL's processor in transformers 5 holds a video processor, which needs torchvision;
where torchvision does not import (CI: a CPU build of torch from a file cannot import PyPI's
torchvision, whose compiled ops need torch's CUDA libraries), the folder gets transformers'
PIL image processor and the processor without its video half (``hf_local.image_only``),
with the video processor's settings written beside it so a machine with torchvision loads
the whole processor.

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


def corpus() -> list[str]:
    """Text to train the tokenizer on: the project's prompt templates and some JSON."""
    root = Path(__file__).resolve().parents[1]  # the repository, or the installed package
    texts = [p.read_text(encoding="utf-8") for d in ("strategies/prompts", "evals/director/task/prompts")
             for p in sorted((root / d).rglob("*.txt"))]
    return texts + ['{"box": [12, 345, 678, 901]}', '{"choice": "A"}', "A B C 0123456789"]


def _tokenizer():
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:])
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


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
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

    tokenizer = _tokenizer()
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
    pixels = {"min_pixels": 8 * 28 * 28, "max_pixels": MAX_PATCHES * 28 * 28}
    from .hf_local import has_torchvision

    if has_torchvision():
        import transformers

        # declared by transformers only where torchvision is installed, so mypy on a machine
        # without it cannot see the names
        images = transformers.Qwen2VLImageProcessor(**pixels)  # type: ignore[attr-defined,unused-ignore]
        videos = transformers.Qwen2VLVideoProcessor()  # type: ignore[attr-defined,unused-ignore]
        processor = Qwen2VLProcessor(image_processor=images, tokenizer=tokenizer,
                                     video_processor=videos, chat_template=tokenizer.chat_template)
    else:  # transformers' PIL image processor, and the processor without its video half
        from transformers import Qwen2VLImageProcessorPil

        from .hf_local import image_only

        processor = image_only(Qwen2VLProcessor)(
            image_processor=Qwen2VLImageProcessorPil(**pixels), tokenizer=tokenizer,
            chat_template=tokenizer.chat_template)
    return Qwen2VLForConditionalGeneration, config, processor, tokenizer


def build_tiny_vlm(folder: Path, *, hidden: int = 64, layers: int = 2, dtype: str = "float32",
                   max_new_tokens: int | None = MAX_NEW_TOKENS) -> Path:
    """The random-weight model, its tokenizer and processor saved under ``folder``; seeded, so
    the same weights each time; ``max_new_tokens`` goes into its generation config."""
    import json

    import torch

    cls, config, processor, tokenizer = _qwen2_vl(hidden, layers)
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
    saved = folder / "processor_config.json"
    settings = json.loads(saved.read_text())
    if "video_processor" not in settings:  # built without torchvision: its defaults, by name
        settings["video_processor"] = {"video_processor_type": "Qwen2VLVideoProcessor"}
        saved.write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n")
    return folder
