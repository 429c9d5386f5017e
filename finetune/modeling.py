"""Loading a local model for training: device, precision, LoRA, gradient checkpointing, saving.

GPU features are guarded, not assumed: bf16 only where the device supports it, gradient
checkpointing only when asked or on a GPU, so the same code runs the CPU tests and GPU jobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajforge.finetune.config import SFTConfig


def pick_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(precision: str, device: str) -> Any:
    import torch

    if precision == "bf16" or (
        precision == "auto" and device == "cuda" and torch.cuda.is_bf16_supported()
    ):
        return torch.bfloat16
    return torch.float32


def load_for_training(cfg: SFTConfig, device: str) -> tuple[Any, Any]:
    """(model, tokenizer) from the local directory, LoRA-wrapped when `method` is lora."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=pick_dtype(cfg.precision, device))
    model.to(device)
    checkpointing = cfg.gradient_checkpointing == "on" or (
        cfg.gradient_checkpointing == "auto" and device == "cuda"
    )
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if cfg.method == "lora":
        model = with_lora(model, cfg, checkpointing)
    return model, tokenizer


def with_lora(model: Any, cfg: SFTConfig, checkpointing: bool) -> Any:
    """LoRA adapters on every linear layer (peft's "all-linear"); base weights frozen."""
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
    return get_peft_model(model, lora)


def trainable_state(model: Any) -> dict[str, Any]:
    """The parameters the optimizer updates (adapters only, under LoRA), detached on CPU."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: Any, state: dict[str, Any]) -> None:
    params = dict(model.named_parameters())
    missing = [n for n in state if n not in params]
    if missing:
        raise ValueError(f"checkpoint does not match the model: unknown parameters {missing[:3]}")
    import torch

    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))


def save_final(model: Any, tokenizer: Any, output: Path, family: str) -> Path:
    """A plain transformers model directory (LoRA merged in) that `trajforge eval` loads;
    the adapter alone is saved next to it under LoRA."""
    import json

    from trajforge.finetune.tiny import FAMILY_FILE

    target = output / "model"
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output / "adapter")
        merged = model.merge_and_unload()
    else:
        merged = model
    merged.save_pretrained(target)
    tokenizer.save_pretrained(target)
    (target / FAMILY_FILE).write_text(json.dumps({"family": family}))
    return target
