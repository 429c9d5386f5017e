"""Tiny chat models built from a config, with a tokenizer trained locally: CPU tests and demos.

Nothing is downloaded: a byte-level BPE tokenizer is trained on the domain's own texts (policy,
tool prompt, task scenarios), given a ChatML template (prefix-preserving, so OPD can carry
token ids forward), and a Qwen2-architecture model of a few layers is initialised from a seed.
`init_range` sets how peaked the random model's distributions are: a teacher with a large
range and a student with a small one are far apart in KL, which is what a distillation test
needs to measure progress.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trajforge.generators.llm.toolcall_text import render_tools_prompt
from trajforge.generators.personas import sample_persona
from trajforge.generators.prompts import agent_system_prompt
from trajforge.generators.tooling import Domain, TaskRejected

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


class TinyModelConfig(BaseModel):
    """Shape and initialisation of a tiny Qwen2-architecture chat model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hidden_size: int = Field(default=64, ge=8)
    num_layers: int = Field(default=2, ge=1)
    num_heads: int = Field(default=4, ge=1)
    intermediate_size: int = Field(default=128, ge=8)
    max_positions: int = Field(default=8192, ge=128)
    init_range: float = Field(default=0.02, gt=0, description="std of the initial weights")
    seed: int = 0


def domain_corpus(domain: Domain, num_tasks: int = 8) -> list[str]:
    """Texts a tokenizer for this domain should compress: prompts and task scenarios."""
    texts = [agent_system_prompt(domain.policy), render_tools_prompt(domain.toolbox.specs)]
    for seed in range(num_tasks):
        try:
            task = domain.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
        texts.append(task.scenario.reason_for_contact)
        texts.extend(f"{k}: {v}" for k, v in task.scenario.known_info.items())
        texts.append(task.to_json())
    return texts


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> Any:
    """A byte-level BPE tokenizer trained on `texts`, with ChatML special tokens and template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(list(texts), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_tiny_model(tokenizer: Any, config: TinyModelConfig) -> Any:
    """A randomly initialised Qwen2 causal LM sized for `tokenizer`, deterministic per seed."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(config.seed)
    model_config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=config.max_positions,
        initializer_range=config.init_range,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(model_config)


def save_tiny_pair(
    domain: Domain,
    out_dir: Path,
    *,
    student: TinyModelConfig | None = None,
    teacher: TinyModelConfig | None = None,
    vocab_size: int = 1024,
) -> tuple[Path, Path]:
    """Write `student/` and `teacher/` model directories sharing one tokenizer; return them."""
    tokenizer = train_tokenizer(domain_corpus(domain), vocab_size)
    student = student or TinyModelConfig(seed=1, init_range=0.02)
    teacher = teacher or TinyModelConfig(seed=2, init_range=0.5)
    paths = []
    for name, config in (("student", student), ("teacher", teacher)):
        path = out_dir / name
        build_tiny_model(tokenizer, config).save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths.append(path)
    return paths[0], paths[1]
