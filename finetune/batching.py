"""Micro-batches from tokenised samples: packed (padding-free) or padded.

Packed rows put several samples end to end in one row with `position_ids` restarting at 0 for
each; transformers turns restarting positions into a block-diagonal causal mask (sdpa, eager
and flash attention alike), so no token attends across samples and no compute is spent on
padding. Padded batches are the fallback for attention kernels that cannot do that. Labels are
the token ids where the mask trains them and -100 elsewhere; the loss shifts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trajforge.finetune.render import TokenizedSample

IGNORE = -100


@dataclass(frozen=True)
class Batch:
    """Tensors for one forward pass; `attention_mask` is None for packed rows."""

    input_ids: Any
    labels: Any
    position_ids: Any
    attention_mask: Any | None

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.numel())

    @property
    def num_trained(self) -> int:
        """Tokens whose prediction is trained (label shifted by one, as in the loss)."""
        return int((self.labels[:, 1:] != IGNORE).sum())

    def to(self, device: Any) -> Batch:
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return Batch(
            *(
                move(t)
                for t in (self.input_ids, self.labels, self.position_ids, self.attention_mask)
            )
        )


def truncate(sample: TokenizedSample, max_len: int) -> TokenizedSample:
    if len(sample.input_ids) <= max_len:
        return sample
    return sample.model_copy(
        update={"input_ids": sample.input_ids[:max_len], "trained": sample.trained[:max_len]}
    )


def _labels(sample: TokenizedSample) -> list[int]:
    """Trained ids, -100 elsewhere; a sample's first token is never a target (nothing in the
    sample predicts it, and in a packed row the previous sample must not)."""
    labels = [t if m else IGNORE for t, m in zip(sample.input_ids, sample.trained, strict=True)]
    return [IGNORE, *labels[1:]] if labels else labels


def pack_rows(samples: Sequence[TokenizedSample], row_tokens: int) -> list[list[TokenizedSample]]:
    """Greedy, order-keeping packing: start a new row when the next sample would not fit."""
    rows: list[list[TokenizedSample]] = []
    used = 0
    for sample in samples:
        n = len(sample.input_ids)
        if not rows or used + n > row_tokens:
            rows.append([])
            used = 0
        rows[-1].append(sample)
        used += n
    return rows


def packed_batch(samples: Sequence[TokenizedSample]) -> Batch:
    """All samples in one row, positions restarting per sample (padding-free)."""
    # lazy, measured start-up cost: torch ~1.8 s
    import torch

    ids = [t for s in samples for t in s.input_ids]
    labels = [t for s in samples for t in _labels(s)]
    positions = [p for s in samples for p in range(len(s.input_ids))]
    as_row = lambda xs: torch.tensor([xs], dtype=torch.long)  # noqa: E731
    return Batch(as_row(ids), as_row(labels), as_row(positions), None)


def padded_batch(samples: Sequence[TokenizedSample], pad_id: int) -> Batch:
    """One row per sample, right-padded to the longest, with an attention mask."""
    # lazy, measured start-up cost: torch ~1.8 s
    import torch

    width = max(len(s.input_ids) for s in samples)
    ids, labels, mask = [], [], []
    for s in samples:
        pad = width - len(s.input_ids)
        ids.append([*s.input_ids, *([pad_id] * pad)])
        labels.append([*_labels(s), *([IGNORE] * pad)])
        mask.append([1] * len(s.input_ids) + [0] * pad)
    positions = torch.arange(width).unsqueeze(0).expand(len(samples), -1)
    tensor = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
    return Batch(tensor(ids), tensor(labels), positions.contiguous(), tensor(mask))


def without_targets(batch: Batch) -> Batch:
    """The same inputs with no trained position: a forward and backward that moves no weight.

    Why: data-parallel wrappers (DDP's buffer broadcast and gradient all-reduce, FSDP's
    all-gathers) need every process to run the same number of forward and backward passes, so a
    process whose share of a step is short fills it with these (loss and gradients exactly 0)."""
    # lazy, measured start-up cost: torch ~1.8 s
    import torch

    return Batch(
        batch.input_ids,
        torch.full_like(batch.labels, IGNORE),
        batch.position_ids,
        batch.attention_mask,
    )


def share_of_step(micro: Sequence[Batch], rank: int, processes: int) -> list[Batch]:
    """Process `rank`'s micro-batches of one optimizer step (every `processes`-th, from `rank`),
    filled with target-free copies so that every process runs ceil(len(micro) / processes)."""
    if processes == 1:
        return list(micro)
    share = list(micro[rank::processes])
    each = -(-len(micro) // processes)
    return share + [without_targets(micro[0])] * (each - len(share))


def micro_batch_groups(
    samples: Sequence[TokenizedSample], *, packing: bool, tokens: int, batch_size: int
) -> list[list[TokenizedSample]]:
    """The samples of each micro-batch: packed rows of at most `tokens` tokens, or groups of
    `batch_size` samples. Cheap (no tensors), so a schedule can be counted without building it."""
    if packing:
        return pack_rows(samples, tokens)
    return [list(samples[i : i + batch_size]) for i in range(0, len(samples), batch_size)]


def to_batch(group: Sequence[TokenizedSample], *, packing: bool, pad_id: int) -> Batch:
    """One micro-batch's tensors: a packed row, or a padded group."""
    return packed_batch(group) if packing else padded_batch(group, pad_id)


def micro_batches(
    samples: Sequence[TokenizedSample], *, packing: bool, tokens: int, batch_size: int, pad_id: int
) -> list[Batch]:
    """Packed rows of at most `tokens` tokens, or padded groups of `batch_size` samples."""
    groups = micro_batch_groups(samples, packing=packing, tokens=tokens, batch_size=batch_size)
    return [to_batch(g, packing=packing, pad_id=pad_id) for g in groups]
