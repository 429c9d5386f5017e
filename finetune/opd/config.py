"""The typed config of `trajforge finetune opd` (flags or a YAML file with the same names)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from trajforge.finetune.config import _Config, _known_family
from trajforge.finetune.opd.guided import GuidedSchedule
from trajforge.finetune.opd.selective import SelectiveConfig
from trajforge.generators.llm.factory import BackendConfig


class OPDConfig(_Config):
    """Student, teacher, where tasks come from, and the OPD schedule."""

    student: str  # local model directory (transformers format), trained in place of a copy
    teacher: str  # local model directory with the student's tokenizer; never trained
    output: str
    family: str | None = None  # chat-template family; None: detected from the student
    tasks: str | None = None  # run directory: tasks of `split`; None: fresh tasks of `domain`
    split: str = "train"
    domain: str = "retail"
    num_tasks: int = Field(default=16, ge=1)  # fresh training tasks when `tasks` is None
    steps: int = Field(default=20, ge=1)
    rollouts_per_step: int = Field(default=4, ge=1)
    learning_rate: float = Field(default=1e-5, gt=0)
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    temperature: float = Field(default=1.0, gt=0, le=2)
    max_new_tokens: int = Field(default=256, ge=1)
    max_turns: int = Field(default=8, ge=1)
    max_tool_steps: int = Field(default=16, ge=1)
    user: BackendConfig | None = None  # LLM simulated user; None: the scripted user
    guided: GuidedSchedule | None = None
    selective: SelectiveConfig | None = None
    eval_every: int | None = Field(default=None, ge=1)  # None: only before and after training
    eval_rollouts: int = Field(default=4, ge=1)  # held-out rollouts for the reverse KL
    eval_tasks: int = Field(default=4, ge=1)  # held-out tasks for pass^k through `evaluate`
    eval_pass_k: bool = True  # also run `trajforge eval`'s evaluation of the student
    save_every: int | None = Field(default=None, ge=1)  # None: only at the end
    sampler: Literal["transformers", "vllm"] = "transformers"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # as SFT's: auto is bf16-mixed on a GPU with bf16 (the student's weights in fp32, its
    # forward in bf16; the teacher, never trained, in bf16), else fp32
    precision: Literal["auto", "fp32", "bf16-mixed", "bf16"] = "auto"
    seed: int = 0
    resume: bool = False

    _family = field_validator("family")(classmethod(lambda cls, v: _known_family(v)))

    @model_validator(mode="after")
    def _paths_exist(self) -> OPDConfig:
        for field in ("student", "teacher"):
            if not Path(getattr(self, field)).is_dir():
                raise ValueError(
                    f"{field}: {getattr(self, field)} is not a directory; give a local "
                    "transformers model directory (nothing is downloaded)"
                )
        if self.tasks is not None and not Path(self.tasks).is_dir():
            raise ValueError(f"tasks: {self.tasks} is not a directory; give a finished run dir")
        return self
