"""The SFT loss: mean over trained tokens of one optimizer step, across gradient accumulation.

Why not average per micro-batch: micro-batches hold different numbers of trained tokens, so a
mean of means weights a token by 1/(its micro-batch's count) and 2 micro-batches x accumulation
would not equal one big batch. Instead each micro-batch contributes its *sum* of token losses
divided by the step's total trained-token count, which is known before the first backward.

Across processes (data parallel) the same holds: every process computes the whole step's
micro-batch schedule (a pure function of the seed), so each knows the step's trained-token count
over all processes without communicating, and scales its share's loss sums by
processes / that count; the wrapper's gradient average over processes then gives exactly the
gradient of the mean over all the step's trained tokens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from trajforge.finetune.batching import IGNORE, Batch
from trajforge.finetune.modeling import Precision, autocast_for


def token_loss_sum(model: Any, batch: Batch, precision: Precision | None = None) -> Any:
    """Sum of next-token cross-entropy over trained positions (a scalar tensor). The forward
    runs under the precision's autocast; the cross-entropy always in fp32."""
    # lazy, measured start-up cost: torch ~1.2 s
    import torch.nn.functional as F

    kwargs = {"input_ids": batch.input_ids, "position_ids": batch.position_ids}
    if batch.attention_mask is not None:
        kwargs["attention_mask"] = batch.attention_mask
    with autocast_for(precision, batch.input_ids):
        logits = model(**kwargs, use_cache=False).logits[:, :-1, :]
    targets = batch.labels[:, 1:]
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        targets.reshape(-1),
        ignore_index=IGNORE,
        reduction="sum",
    )


class GradientSync(Protocol):
    """How backward passes reach the other processes (accelerate's `Accelerator` is one): a
    backward, and a context in which a backward only accumulates, without synchronising."""

    def backward(self, loss: Any) -> None: ...

    def no_sync(self, model: Any) -> AbstractContextManager: ...


class LocalSync:
    """One process: a plain backward; nothing to hold back."""

    def backward(self, loss: Any) -> None:
        loss.backward()

    def no_sync(self, model: Any) -> AbstractContextManager:
        return contextlib.nullcontext()


def backward_share(
    model: Any,
    share: Sequence[Batch],
    step_trained: int,
    *,
    processes: int = 1,
    sync: GradientSync | None = None,
    device: Any = "cpu",
    precision: Precision | None = None,
) -> float:
    """Forward and backward this process's micro-batches of one optimizer step; returns the
    sum of their token losses. Each backward gets loss sum x processes / step_trained (the
    wrapper averages over processes); only the share's last backward synchronises."""
    sync = sync or LocalSync()
    loss_sum = 0.0
    for i, batch in enumerate(share):
        last = i == len(share) - 1
        with contextlib.nullcontext() if last else sync.no_sync(model):
            loss = token_loss_sum(model, batch.to(device), precision)
            sync.backward(loss * processes / step_trained)
        loss_sum += float(loss.detach())
    return loss_sum


def accumulate_step(
    model: Any, micro: Sequence[Batch], device: Any = "cpu", precision: Precision | None = None
) -> tuple[float, int]:
    """Forward and backward every micro-batch of one optimizer step in this process;
    (mean loss, trained tokens). Gradients equal those of the mean loss over all trained
    tokens of the step."""
    total = sum(b.num_trained for b in micro)
    if total == 0:
        return 0.0, 0
    trained = [b for b in micro if b.num_trained]
    loss_sum = backward_share(model, trained, total, device=device, precision=precision)
    return loss_sum / total, total


def loss_sums(
    model: Any, batches: Sequence[Batch], device: Any = "cpu", precision: Precision | None = None
) -> tuple[float, int]:
    """(sum of token losses, trained tokens) over batches without gradients: the parts of a
    mean that processes evaluating shards of a split add up."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            if batch.num_trained:
                total += float(token_loss_sum(model, batch.to(device), precision))
                count += batch.num_trained
    return total, count


def mean_loss(
    model: Any, batches: Sequence[Batch], device: Any = "cpu", precision: Precision | None = None
) -> float:
    """Mean token loss over batches without gradients (validation)."""
    total, count = loss_sums(model, batches, device, precision)
    return total / count if count else float("nan")
