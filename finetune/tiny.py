"""Tiny causal LMs built from a config, with a tokenizer trained locally: CPU tests and demos.

Why: the SFT and evaluation code paths are the GPU paths; to test them on CPU without any
download we need a real (small) model and tokenizer whose special tokens match a template
family. The tokenizer is a byte-level BPE trained on the given texts (rendered conversations),
with the family's control tokens as single special tokens, so masks and packing behave as with
the real tokenizer of that family.

    python -m trajforge.finetune.tiny --output runs/tiny-base --family qwen2.5 --data RUN_DIR
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from trajforge.finetune.copying import CopyCurriculum, pretrain_copying, space_variants
from trajforge.finetune.families import FAMILY_FILE, TemplateFamily, get_family, saved_family

PAD_TOKEN = "<|pad|>"
__all__ = ["FAMILY_FILE", "save_tiny", "saved_family", "tiny_model", "train_tokenizer"]


#: The pre-tokenizer split of the real models of a family (their tokenizer.json), so a tiny
#: model's tokens cut text where the real model's do. Why it matters: GPT-2's split (the
#: byte-level default) glues a space to the digits after it, so ` 553.31` and the `553.31` of
#: `"balance": "553.31"` become different tokens (`Ġ5 53` vs `5 53`, ` 117` one token vs
#: `11 7`), and copying a number from a tool result into a reply is a mapping to learn; the
#: Qwen2 tokenizers cut digits one by one (Llama 3: runs of up to three), with the space apart.
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_LLAMA3_SPLIT = _QWEN2_SPLIT.replace(r"|\p{N}|", r"|\p{N}{1,3}|")
PRE_TOKENIZER_SPLITS = MappingProxyType(
    {"qwen2.5": _QWEN2_SPLIT, "qwen3": _QWEN2_SPLIT, "llama3.1": _LLAMA3_SPLIT}
)


def _pre_tokenizer(family: TemplateFamily):
    """The family's split (`PRE_TOKENIZER_SPLITS`) then bytes, as its real tokenizer.json
    does; GPT-2's byte-level split for a family without one."""
    pattern = PRE_TOKENIZER_SPLITS.get(family.name)
    if pattern is None:
        return pre_tokenizers.ByteLevel(add_prefix_space=False)
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def train_tokenizer(texts: Iterable[str], family: TemplateFamily, vocab_size: int = 2000):
    """A byte-level BPE over `texts`, the family's control tokens kept whole, pre-tokenized
    as the family's real models are (`_pre_tokenizer`)."""
    # lazy, measured start-up cost: transformers ~560 ms
    from transformers import PreTrainedTokenizerFast

    specials = [PAD_TOKEN, *dict.fromkeys((*family.control_tokens, family.end_of_turn))]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = _pre_tokenizer(family)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD_TOKEN,
        eos_token=family.end_of_turn,
        bos_token=family.bos_token or None,
    )
    tokenizer.chat_template = family.template(training=False)
    return tokenizer


def tiny_model(vocab_size: int, seed: int = 0, hidden: int = 64, layers: int = 2):
    """A Llama-architecture model small enough to train in seconds on one CPU core."""
    # lazy, measured start-up cost: torch ~1.1 s, transformers ~560 ms
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config)


def save_tiny(
    output: Path,
    texts: Iterable[str],
    family: TemplateFamily,
    seed: int = 0,
    hidden: int = 64,
    layers: int = 2,
    vocab_size: int = 2000,
    copying: CopyCurriculum | None = None,
) -> Path:
    """Train a tokenizer on `texts`, build the model (pre-trained to copy when `copying` is
    given: see finetune/copying.py), save both (and the family) to `output`."""
    tokenizer = train_tokenizer(texts, family, vocab_size)
    model = tiny_model(len(tokenizer), seed=seed, hidden=hidden, layers=layers)
    model.config.eos_token_id = tokenizer.eos_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
    if copying is not None:
        first_id = max(tokenizer.all_special_ids) + 1
        variants = space_variants(tokenizer.get_vocab())
        report = pretrain_copying(model, copying, first_id, variants)
        print(
            f"copy pre-training: {report.steps} steps, final loss {report.final_loss:.3f}, "
            f"held-out copy accuracy {report.held_out_accuracy:.3f}"
        )
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    (output / FAMILY_FILE).write_text(json.dumps({"family": family.name}))
    return output


def _corpus(run_dir: str | None, family: TemplateFamily) -> list[str]:
    """Rendered conversations of `--data`'s *train* split only (or a fixed sentence when there is
    none): a tokenizer that saw validation or golden text would leak held-out strings (names,
    ids) into its merges, and an evaluation on them would flatter the model."""
    texts = ['The quick brown fox jumps over the lazy dog. 0123456789 {}[]:,"#']
    if run_dir:
        # lazy, measured start-up cost: render ~30 ms, sources ~50 ms
        from trajforge.finetune.render import mask_segments
        from trajforge.finetune.sources import load_training_conversations

        for conv in load_training_conversations(run_dir, "train"):
            texts.append("".join(s.text for s in mask_segments(conv.messages, conv.tools, family)))
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--family", default="qwen2.5")
    parser.add_argument(
        "--data", default=None, help="training data (as `finetune sft --data`) that trains the BPE"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    parser.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    parser.add_argument("--vocab-size", type=int, default=2000, help="BPE vocabulary (2000)")
    parser.add_argument(
        "--copy-steps",
        type=int,
        default=0,
        help="pre-train the base this many steps to copy from its context, as a pretrained base "
        "can (finetune/copying.py; random token ids, no text); 0: untrained (default)",
    )
    parser.add_argument(
        "--copy-learning-rate",
        type=float,
        default=CopyCurriculum.model_fields["learning_rate"].default,
        help="the copy pre-training's peak learning rate (default 1e-3; wider models may need "
        "less: a 256-wide base did not learn to copy at 1e-3)",
    )
    args = parser.parse_args(argv)
    if args.copy_steps < 0:
        parser.error(f"--copy-steps: {args.copy_steps} is negative; give 0 (none) or more steps")
    if args.copy_learning_rate <= 0:
        parser.error(f"--copy-learning-rate: {args.copy_learning_rate} must be > 0 (e.g. 1e-3)")
    family = get_family(args.family)
    texts = _corpus(args.data, family)
    copying = (
        CopyCurriculum(steps=args.copy_steps, learning_rate=args.copy_learning_rate, seed=args.seed)
        if args.copy_steps
        else None
    )
    path = save_tiny(
        Path(args.output),
        texts,
        family,
        args.seed,
        args.hidden,
        args.layers,
        args.vocab_size,
        copying,
    )
    print(f"tiny {family.name} model written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
