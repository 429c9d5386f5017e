"""The noisy teacher's fault rates (`rollout.noise`) and the seeded draw of each fault.

Apart from the agent (generators/noisy_teacher.py) so the build config can validate the rates
without importing the agent and the blueprint planner it walks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trajforge.schemas import FaultClass, derive_seed

#: Every fault class, in the order they are drawn (the Literal's members).
FAULT_CLASSES: tuple[FaultClass, ...] = FaultClass.__args__  # type: ignore[attr-defined]


class NoiseConfig(BaseModel):
    """Per-class fault rates of the noisy teacher (`rollout.noise` in a build config).

    Each rate is the probability that the class is drawn for one rollout (0 never, 1 always
    where the task allows it). `repeat_count` is how many times a repeated read is made in a
    row: 3 by default, the loops filter's default `max_repeats`, so a repeat is a loop it sees.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    skip_confirmation: float = Field(default=0.15, ge=0, le=1)
    act_after_refusal: float = Field(default=0.15, ge=0, le=1)
    other_users_record: float = Field(default=0.15, ge=0, le=1)
    invented_value: float = Field(default=0.15, ge=0, le=1)
    repeated_calls: float = Field(default=0.15, ge=0, le=1)
    no_report: float = Field(default=0.15, ge=0, le=1)
    repeat_count: int = Field(default=3, ge=2, le=20)

    def rate(self, fault: FaultClass) -> float:
        return float(getattr(self, fault))

    @classmethod
    def only(cls, fault: FaultClass | None = None, rate: float = 1.0) -> NoiseConfig:
        """Every rate 0 except `fault`'s (all 0 when None): the tests' and probes' shorthand."""
        rates = {c: 0.0 for c in FAULT_CLASSES}
        if fault is not None:
            rates[fault] = rate
        return cls(**rates)


def fault_drawn(task_id: str, attempt: int, fault: FaultClass, rate: float) -> bool:
    """The seeded draw for one class: independent of the other classes and of the worker."""
    return derive_seed(task_id, "noisy", attempt, fault) / float(1 << 63) < rate
