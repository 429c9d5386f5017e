"""Copy pre-training for tiny bases: in-context copying before any conversation is seen.

Why: every pretrained base a user fine-tunes can copy a string from its context (a name, an
email, an order id) into what it writes: induction heads form early in pre-training. A tiny
model built from a config has no pre-training, and fine-tuned on conversations alone it learns
the *distribution* of the training users' emails instead of copying the user's own: the
data-value benchmark counted 0 of 309 held-out lookups using the email the user gave. An
evaluation of such a base measures the missing pre-training, not the data.

The curriculum is the classic induction task with a cue: random filler, a cue token, a span of
random token ids, more filler, the cue again and the span again; the loss is on the repeat.
Some of the repeat's tokens are swapped for their *space variant* (`Ġjoss` <-> `joss`, both in
the vocabulary): a byte-level BPE writes a word after a space and after a quote as different
tokens, so a user's ` joss.kestrel1003@...` becomes `joss.kestrel1003@...` inside a tool call's
JSON; a pretrained base has learnt the two are the same word, a base built from a config has
not (measured: after fine-tuning, the email's later tokens were copied 97% of the time, its
first token, a space variant, 2%). It uses token *ids* only, never text: it cannot carry a
training or held-out string into the base, and the tokenizer (trained on the train split) is
untouched.

    python -m trajforge.finetune.tiny --output runs/base --data RUN_DIR --copy-steps 2500
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CopyCurriculum(BaseModel):
    """How the base learns to copy. With the defaults and 2,500 steps the data-value
    benchmark's 2-layer, 128-wide base reaches 0.53 held-out next-token accuracy on the repeats
    (~4-6 min on one CPU core; whether a token is swapped cannot be predicted, by design); that base
    then copies a golden email's first token 50 times in 60 after fine-tuning (2 untrained)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: int = Field(ge=1)
    batch_size: int = Field(default=32, ge=1)
    span: tuple[int, int] = (3, 12)  # tokens copied, inclusive bounds
    gap: tuple[int, int] = (0, 24)  # random filler tokens before the span and before its repeat
    variant_rate: float = Field(default=0.3, ge=0, le=1)  # repeat tokens swapped for a variant
    learning_rate: float = Field(default=1e-3, gt=0)
    warmup_steps: int = Field(default=30, ge=0)
    seed: int = 0

    @model_validator(mode="after")
    def _ordered_bounds(self) -> CopyCurriculum:
        for name in ("span", "gap"):
            low, high = getattr(self, name)
            if not 0 <= low <= high or (name == "span" and low < 2):
                raise ValueError(
                    f"{name}: bounds {low}..{high} must satisfy 0 <= low <= high"
                    + (
                        " and low >= 2 (a one-token span has nothing to copy)"
                        if name == "span"
                        else ""
                    )
                )
        return self


class CopyBatch(NamedTuple):
    input_ids: Any  # (rows, length) long
    attention_mask: Any  # 1 on real tokens, 0 on right padding
    loss_mask: Any  # True where the target is predictable by copying: the repeat, after its cue


class CopyReport(NamedTuple):
    steps: int
    final_loss: float
    held_out_accuracy: float  # next-token accuracy on the repeats of fresh batches


def space_variants(vocab: Mapping[str, int]) -> dict[int, int]:
    """id -> id of the same word with the leading space toggled (byte-level BPE writes a space
    as `Ġ`), for every token whose variant is also in `vocab`."""
    variants = {}
    for token, token_id in vocab.items():
        if token.startswith("Ġ") and len(token) > 1 and token[1:] in vocab:
            variants[token_id] = vocab[token[1:]]
            variants[vocab[token[1:]]] = token_id
    return variants


def copy_batch(
    generator: Any,
    first_id: int,
    vocab_size: int,
    curriculum: CopyCurriculum,
    rows: int,
    variants: Mapping[int, int] | None = None,
) -> CopyBatch:
    """`rows` sequences [filler | cue | span | filler | cue | span'], ids drawn from
    [first_id, vocab_size); span' is span with some tokens swapped for their `variants`."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    def draw(bounds: tuple[int, int]) -> int:
        return int(torch.randint(bounds[0], bounds[1] + 1, (1,), generator=generator))

    def ids(n: int) -> Any:
        return torch.randint(first_id, vocab_size, (n,), generator=generator)

    swapped = variants or {}
    sequences, heads = [], []  # a row's loss starts where its head (up to the second cue) ends
    for _ in range(rows):
        span, cue = ids(draw(curriculum.span)), ids(1)
        swap = torch.rand(len(span), generator=generator) < curriculum.variant_rate
        repeat = torch.tensor(
            [
                swapped.get(t, t) if s else t
                for t, s in zip(span.tolist(), swap.tolist(), strict=True)
            ]
        )
        head = torch.cat([ids(draw(curriculum.gap)), cue, span, ids(draw(curriculum.gap)), cue])
        sequences.append(torch.cat([head, repeat]))
        heads.append(len(head))
    length = max(len(s) for s in sequences)
    input_ids = torch.zeros(rows, length, dtype=torch.long)
    attention = torch.zeros(rows, length, dtype=torch.long)
    loss_mask = torch.zeros(rows, length, dtype=torch.bool)
    for i, (seq, head) in enumerate(zip(sequences, heads, strict=True)):
        input_ids[i, : len(seq)], attention[i, : len(seq)] = seq, 1
        loss_mask[i, head : len(seq)] = True
    return CopyBatch(input_ids, attention, loss_mask)


def copy_loss(model: Any, batch: CopyBatch) -> tuple[Any, float]:
    """Cross-entropy on the masked targets, and the share of them predicted exactly."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[:, :-1]
    targets, mask = batch.input_ids[:, 1:], batch.loss_mask[:, 1:]
    picked = logits[mask]
    loss = torch.nn.functional.cross_entropy(picked, targets[mask])
    return loss, float((picked.argmax(-1) == targets[mask]).float().mean())


def pretrain_copying(
    model: Any, curriculum: CopyCurriculum, first_id: int, variants: Mapping[int, int] | None = None
) -> CopyReport:
    """Train `model` in place on the copy curriculum; token ids below `first_id` (the special
    tokens) are never drawn, so the chat template's control tokens keep their untrained rows."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    vocab_size = model.config.vocab_size
    generator = torch.Generator().manual_seed(curriculum.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=curriculum.learning_rate, weight_decay=0)
    model.train()
    loss = torch.zeros(())
    for step in range(curriculum.steps):
        warm = min(1.0, (step + 1) / max(1, curriculum.warmup_steps))
        for group in optimizer.param_groups:
            group["lr"] = curriculum.learning_rate * warm
        batch = copy_batch(
            generator, first_id, vocab_size, curriculum, curriculum.batch_size, variants
        )
        loss, _ = copy_loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    held_out = torch.Generator().manual_seed(curriculum.seed + 1)
    with torch.no_grad():
        batch = copy_batch(held_out, first_id, vocab_size, curriculum, 64, variants)
        _, accuracy = copy_loss(model, batch)
    return CopyReport(curriculum.steps, float(loss.detach()), accuracy)
