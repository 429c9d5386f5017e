"""Loading a local model for training: device, precision, LoRA, gradient checkpointing, saving.

GPU features are guarded, not assumed: bf16 only where the device supports it, gradient
checkpointing only when asked or on a GPU, so the same code runs the CPU tests and GPU jobs.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajforge.finetune.config import SFTConfig
from trajforge.finetune.families import FAMILY_FILE


def pick_device() -> str:
    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def on_gpu(device: Any) -> bool:
    """Whether `device` ("cuda", "cuda:1" under data parallel, a torch.device) is a GPU."""
    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    return torch.device(device).type == "cuda"


@dataclass(frozen=True)
class Precision:
    """How a model trains: the dtype its weights load in, and the dtype its forward autocasts to.

    `bf16-mixed` keeps the weights the optimizer updates in fp32 and runs the forward in bf16:
    AdamW moves a weight by about the learning rate, and at 1e-5 that is below bf16's resolution
    for any weight larger than ~0.003 (8 mantissa bits), so pure-bf16 full fine-tuning silently
    drops most updates. Under LoRA a bf16 base stays bf16 (frozen: half the memory) and peft
    keeps the adapters in fp32. `bf16` is pure bf16 (least memory), for users who accept that loss.
    """

    name: str
    load_dtype: Any
    autocast_dtype: Any | None

    def save_dtype(self, model_dir: str | Path) -> Any | None:
        """The dtype to save a trained model in: after mixed precision the checkpoint's own
        (`declared_dtype` of the directory it was loaded from), not the fp32 masters; else
        None, as trained."""
        return declared_dtype(model_dir) if self.autocast_dtype is not None else None


def inference_dtype(precision: Precision) -> Any:
    """The dtype of a model that is never trained under `precision` (a teacher, an evaluated
    model): bf16 wherever the forward runs in bf16 anyway, else the weights' dtype."""
    return precision.autocast_dtype or precision.load_dtype


def autocast_for(precision: Precision | None, tensor: Any) -> Any:
    """The precision's bf16 autocast on the device `tensor` lives on; nothing without a
    precision or when it has no autocast."""

    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    if precision is None or precision.autocast_dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=tensor.device.type, dtype=precision.autocast_dtype)


def resolve_precision(
    precision: str, device: str, method: str = "full", declared: Any | None = None
) -> Precision:
    """`auto` is bf16-mixed on a GPU that supports bf16, else fp32. Under LoRA the frozen base
    loads in bf16 only when its checkpoint is bf16 (`declared`): the merged model keeps the
    base's own weights, so an fp32 or fp16 base must not be rounded to bf16 on the way."""
    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    if precision == "auto":
        gpu_bf16 = on_gpu(device) and torch.cuda.is_bf16_supported()
        precision = "bf16-mixed" if gpu_bf16 else "fp32"
    if precision == "bf16":
        return Precision("bf16", torch.bfloat16, None)
    if precision == "bf16-mixed":
        bf16_base = method == "lora" and declared == torch.bfloat16
        return Precision(
            "bf16-mixed", torch.bfloat16 if bf16_base else torch.float32, torch.bfloat16
        )
    return Precision("fp32", torch.float32, None)


def load_for_training(cfg: SFTConfig, device: str) -> tuple[Any, Any, Precision]:
    """(model, tokenizer, precision) from the local directory on `device` (this process's,
    e.g. "cuda:1" under data parallel), LoRA-wrapped when `method` is lora."""
    # lazy, measured start-up cost: transformers ~560 ms
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    precision = resolve_precision(cfg.precision, device, cfg.method, declared_dtype(cfg.model))
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=precision.load_dtype)
    model.to(device)
    checkpointing = cfg.gradient_checkpointing == "on" or (
        cfg.gradient_checkpointing == "auto" and on_gpu(device)
    )
    if checkpointing:
        enable_checkpointing(model)
        model.config.use_cache = False
    if cfg.method == "lora":
        model = with_lora(model, cfg, checkpointing)
    return model, tokenizer, precision


def enable_checkpointing(model: Any) -> None:
    """Activation (gradient) checkpointing, non-reentrant: `activation_checkpointing_enable`
    where transformers has it (5.25 deprecates the old name, v6 removes it), else
    `gradient_checkpointing_enable` (the versions before)."""
    kwargs = {"use_reentrant": False}
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def with_lora(model: Any, cfg: SFTConfig, checkpointing: bool) -> Any:
    """LoRA adapters on every linear layer (peft's "all-linear"); base weights frozen."""
    # lazy, measured start-up cost: peft ~3.6 s
    from peft import LoraConfig, get_peft_model

    if checkpointing:
        model.enable_input_require_grads()
    lora = LoraConfig(
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.target_modules
        if isinstance(cfg.lora.target_modules, str)
        else list(cfg.lora.target_modules),
        task_type="CAUSAL_LM",
    )
    # adapters in fp32 even over a bf16 base: their small updates must not round away
    return get_peft_model(model, lora, autocast_adapter_dtype=True)


def trainable_state(model: Any) -> dict[str, Any]:
    """The parameters the optimizer updates (adapters only, under LoRA), detached on CPU."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: Any, state: dict[str, Any]) -> None:
    params = dict(model.named_parameters())
    missing = [n for n in state if n not in params]
    if missing:
        raise ValueError(f"checkpoint does not match the model: unknown parameters {missing[:3]}")
    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))


def declared_dtype(model_dir: str | Path) -> Any | None:
    """The dtype a checkpoint's config.json declares (`dtype`, or `torch_dtype` before
    transformers 5), as a torch dtype; None when it declares none."""

    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    try:
        config = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):  # no readable config: loading the model reports why
        return None
    name = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    value = getattr(torch, str(name), None) if name else None
    return value if isinstance(value, torch.dtype) else None


def save_final(
    model: Any, tokenizer: Any, output: Path, family: str, dtype: Any | None = None
) -> Path:
    """A plain transformers model directory (LoRA merged in) that `trajforge eval` loads;
    the adapter alone is saved next to it under LoRA. `dtype` casts the saved weights (after
    mixed precision: the base checkpoint's own dtype, not the fp32 master copy) without
    touching the model's own, which may go on training (OPD saves for each evaluation)."""

    target = output / "model"
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output / "adapter")
        merged = model.merge_and_unload()
    else:
        merged = model
    if dtype is not None and dtype != merged.dtype:
        merged.save_pretrained(target, state_dict=_cast_state(merged, dtype))
        _declare_dtype(target / "config.json", dtype)
    else:
        merged.save_pretrained(target)
    tokenizer.save_pretrained(target)
    (target / FAMILY_FILE).write_text(json.dumps({"family": family}))
    return target


def _cast_state(model: Any, dtype: Any) -> dict[str, Any]:
    """The model's floating-point tensors as `dtype` copies on the CPU (tied tensors stay one
    tensor, so saving deduplicates them as it would the model's own)."""
    copies: dict[tuple, Any] = {}
    state = {}
    for name, tensor in model.state_dict().items():
        if not tensor.is_floating_point():
            state[name] = tensor
            continue
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key not in copies:
            copies[key] = tensor.detach().to(device="cpu", dtype=dtype)
        state[name] = copies[key]
    return state


def _declare_dtype(config_path: Path, dtype: Any) -> None:
    """Set the saved config's dtype to the weights' (transformers writes the model's own)."""

    config = json.loads(config_path.read_text())
    name = str(dtype).removeprefix("torch.")
    config["dtype"] = name
    if "torch_dtype" in config:
        config["torch_dtype"] = name
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
