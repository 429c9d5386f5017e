"""The SFT loss: mean over trained tokens of one optimizer step, across gradient accumulation.

Why not average per micro-batch: micro-batches hold different numbers of trained tokens, so a
mean of means weights a token by 1/(its micro-batch's count) and 2 micro-batches x accumulation
would not equal one big batch. Instead each micro-batch contributes its *sum* of token losses
divided by the step's total trained-token count, which is known before the first backward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajforge.finetune.batching import IGNORE, Batch
from trajforge.finetune.modeling import Precision, autocast_for


def token_loss_sum(model: Any, batch: Batch, precision: Precision | None = None) -> Any:
    """Sum of next-token cross-entropy over trained positions (a scalar tensor). The forward
    runs under the precision's autocast; the cross-entropy always in fp32."""
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


def accumulate_step(
    model: Any, micro: Sequence[Batch], device: Any = "cpu", precision: Precision | None = None
) -> tuple[float, int]:
    """Forward and backward every micro-batch of one optimizer step; (mean loss, trained tokens).

    Gradients equal those of the mean loss over all trained tokens of the step."""
    total = sum(b.num_trained for b in micro)
    if total == 0:
        return 0.0, 0
    loss_sum = 0.0
    for batch in micro:
        if batch.num_trained == 0:
            continue
        loss = token_loss_sum(model, batch.to(device), precision)
        (loss / total).backward()
        loss_sum += float(loss.detach())
    return loss_sum / total, total


def mean_loss(
    model: Any, batches: Sequence[Batch], device: Any = "cpu", precision: Precision | None = None
) -> float:
    """Mean token loss over batches without gradients (validation)."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            if batch.num_trained:
                total += float(token_loss_sum(model, batch.to(device), precision))
                count += batch.num_trained
    return total / count if count else float("nan")
