"""The processes SFT runs in: one, or data-parallel (DDP) through accelerate's `Accelerator`.

`accelerate launch --num_processes N ... trajforge finetune sft ...` starts N processes; each
builds the same step schedule, runs its share of every step's micro-batches, and DDP averages
the gradients. Without a launcher (no world size in the environment) SFT runs as one process on
the GPU if there is one, else the CPU, exactly as before, and creates no accelerate state: an
`Accelerator`'s state is process-wide, so a TRL Trainer made earlier in the same process (a
notebook, a test session) would impose its mixed precision on ours, and one process needs none
of it.

Why only DDP for now: the loop scales each loss by the step's trained tokens itself (loss.py)
and saves trainable weights from the unwrapped model; FSDP and DeepSpeed shard weights and
optimizer state (saving needs their gathered state dicts) and DeepSpeed steps its own engine
inside `backward`. Refusing them is better than a run that silently saves a shard or applies
one step per micro-batch.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from typing import Any, Protocol

from trajforge.finetune.config import FinetuneConfigError
from trajforge.finetune.loss import LocalSync
from trajforge.finetune.modeling import pick_device

SUPPORTED = ("NO", "MULTI_CPU", "MULTI_GPU")
# what launchers set: torchrun / accelerate launch, then MPI's (accelerate's CPU multi-process)
WORLD_SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


class Processes(Protocol):
    """What the SFT loop needs of the processes it runs in; accelerate's `Accelerator` is one."""

    device: Any
    num_processes: int
    process_index: int
    is_main_process: bool

    def prepare(self, *objects: Any) -> Any: ...

    def backward(self, loss: Any) -> None: ...

    def no_sync(self, model: Any) -> AbstractContextManager: ...

    def clip_grad_norm_(self, parameters: Any, max_norm: float) -> Any: ...

    def reduce(self, tensor: Any, reduction: str = "sum") -> Any: ...

    def wait_for_everyone(self) -> None: ...


class OneProcess(LocalSync):
    """Not launched: this process alone, with the plain torch calls the loop always made."""

    num_processes = 1
    process_index = 0
    is_main_process = True

    def __init__(self) -> None:
        self.device = pick_device()

    def prepare(self, *objects: Any) -> tuple[Any, ...]:
        return objects

    def clip_grad_norm_(self, parameters: Any, max_norm: float) -> Any:
        # lazy, measured start-up cost: torch ~1.1 s
        import torch

        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def reduce(self, tensor: Any, reduction: str = "sum") -> Any:
        return tensor

    def wait_for_everyone(self) -> None:
        return None


def launched_world_size() -> int:
    """The number of processes a launcher started (1 when none did)."""

    for name in WORLD_SIZE_VARS:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


def start_processes() -> Processes:
    """accelerate's `Accelerator` under a launcher with more than one process, else one process."""
    return start_accelerator() if launched_world_size() > 1 else OneProcess()


def start_accelerator() -> Any:
    """The `Accelerator` of this process (environment set by `accelerate launch`, or one
    process). Precision stays trajforge's own `--precision` (autocast in the loss), so the
    launcher's mixed precision must be off; the scheduler is stepped once per optimizer step
    (accelerate would step it once per process)."""
    # lazy, measured start-up cost: accelerate ~1.3 s
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


def sum_over_processes(accelerator: Processes, value: float) -> float:
    """`value` summed over every process (float64); `value` itself with one process."""
    if accelerator.num_processes == 1:
        return value
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    tensor = torch.tensor([value], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(tensor, reduction="sum")[0])
