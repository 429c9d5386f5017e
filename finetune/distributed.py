"""The processes SFT runs in: accelerate's `Accelerator`, one process or data-parallel (DDP).

`accelerate launch --num_processes N ... trajforge finetune sft ...` starts N processes; each
builds the same step schedule, runs its share of every step's micro-batches, and DDP averages
the gradients. Without a launcher this is one process on the GPU if there is one, else the CPU,
exactly as before.

Why only DDP for now: the loop scales each loss by the step's trained tokens itself (loss.py)
and saves trainable weights from the unwrapped model; FSDP and DeepSpeed shard weights and
optimizer state (saving needs their gathered state dicts) and DeepSpeed steps its own engine
inside `backward`. Refusing them is better than a run that silently saves a shard or applies
one step per micro-batch.
"""

from __future__ import annotations

from typing import Any

from trajforge.finetune.config import FinetuneConfigError

SUPPORTED = ("NO", "MULTI_CPU", "MULTI_GPU")


def start_accelerator() -> Any:
    """The `Accelerator` of this process (environment set by `accelerate launch`, or one
    process). Precision stays trajforge's own `--precision` (autocast in the loss), so the
    launcher's mixed precision must be off; the scheduler is stepped once per optimizer step
    (accelerate would step it once per process)."""
    from accelerate import Accelerator

    accelerator = Accelerator(step_scheduler_with_optimizer=False)
    kind = accelerator.distributed_type.name
    if kind not in SUPPORTED:
        raise FinetuneConfigError(
            f"accelerate distributed_type {kind} is not supported by finetune sft; launch with "
            "DDP (accelerate launch --multi_gpu, or --cpu for processes on the CPU)"
        )
    if accelerator.mixed_precision != "no":
        raise FinetuneConfigError(
            f"accelerate mixed_precision {accelerator.mixed_precision!r}: precision is "
            "finetune sft's own --precision (bf16-mixed, bf16, fp32); launch with "
            "--mixed_precision no"
        )
    return accelerator


def sum_over_processes(accelerator: Any, value: float) -> float:
    """`value` summed over every process (float64); `value` itself with one process."""
    if accelerator.num_processes == 1:
        return value
    import torch

    tensor = torch.tensor([value], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(tensor, reduction="sum")[0])
