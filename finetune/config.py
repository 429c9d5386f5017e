"""Typed, validated configs for `trajforge finetune sft` and `trajforge eval`.

Configs come from CLI flags (or a YAML file with the same field names); a bad value fails on
load with the field's name and what to do, before any model is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trajforge.finetune.families import FAMILIES


class FinetuneConfigError(ValueError):
    """A config value is wrong; the message names the field and the fix."""


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _known_family(name: str | None) -> str | None:
    if name is not None and name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; use one of {', '.join(sorted(FAMILIES))}")
    return name


class LoraSettings(_Config):
    r: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, ge=1)
    dropout: float = Field(default=0.0, ge=0, lt=1)
    target_modules: str | tuple[str, ...] = "all-linear"


class SFTConfig(_Config):
    # Conversational data (finetune.sources): a run directory, a save_to_disk folder, a folder
    # of data/<split>-*.parquet, a JSONL file or a Hub id already in the local cache; rows in
    # TRL's format (`messages`, optional `tools`). Trains on `train`; eval loss on
    # `validation` when the source has it (a lone Dataset or JSONL file is all train).
    data: str
    model: str  # local model directory (transformers format); never a hub id
    output: str
    family: str | None = None  # chat-template family; None: detected (families.resolve_family)
    method: Literal["lora", "full"] = "lora"
    lora: LoraSettings = LoraSettings()
    learning_rate: float = Field(default=2e-4, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    warmup_steps: int = Field(default=0, ge=0)
    max_steps: int | None = Field(default=None, ge=1)
    epochs: int = Field(default=1, ge=1)
    max_seq_len: int = Field(default=8192, ge=16)
    packing: bool = True
    row_tokens: int = Field(default=8192, ge=16)  # packed row length (tokens per micro-batch)
    batch_size: int = Field(default=1, ge=1)  # samples per padded micro-batch
    grad_accum: int = Field(default=1, ge=1)
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    # auto: bf16-mixed on a GPU that has bf16 (fp32 weights, bf16 forward), else fp32;
    # bf16: pure bf16 weights (least memory; updates below bf16's resolution are lost)
    precision: Literal["auto", "fp32", "bf16-mixed", "bf16"] = "auto"
    gradient_checkpointing: Literal["auto", "on", "off"] = "auto"  # auto: on with a GPU
    seed: int = 0
    log_every: int = Field(default=1, ge=1)
    eval_every: int | None = Field(default=None, ge=1)  # None: only at the end
    save_every: int | None = Field(default=None, ge=1)  # None: only at the end
    resume: bool = False
    progress: bool = True

    _family = field_validator("family")(classmethod(lambda cls, v: _known_family(v)))

    @model_validator(mode="after")
    def _row_fits(self) -> SFTConfig:
        if self.packing and self.row_tokens < self.max_seq_len:
            raise ValueError(
                f"row_tokens ({self.row_tokens}) < max_seq_len ({self.max_seq_len}): a packed row "
                "must hold the longest sample; raise row_tokens or lower max_seq_len"
            )
        return self


def load_model_config(cls: type[_Config], values: dict[str, Any], yaml_path: str | None = None):
    """`cls` from a YAML file (if given) overlaid with explicit values, errors made readable."""
    raw: dict[str, Any] = {}
    if yaml_path:
        raw = yaml.safe_load(Path(yaml_path).read_text()) or {}
    raw.update({k: v for k, v in values.items() if v is not None})
    try:
        return cls.model_validate(raw)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in err.errors()
        )
        raise FinetuneConfigError(f"invalid {cls.__name__}: {problems}") from None
