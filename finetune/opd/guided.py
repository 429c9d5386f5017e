"""Guided OPD: early in training the teacher takes some turns itself, as context.

A weak student derails multi-turn rollouts early (a wrong call changes every later
observation), so at step s the teacher takes each agent turn with probability p(s), decaying
to exactly zero at `end_step`. Teacher turns are context only: their tokens are never trained
(the loss is on student-sampled tokens). Whether a turn is the teacher's is a deterministic
draw from `derive_seed(record id, "guided", step, turn)`, so a resumed run makes the same
choices.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trajforge.schemas import derive_seed


class GuidedSchedule(BaseModel):
    """p(step): `start_p` at step 0, decaying (linear or cosine) to 0 at `end_step` and after."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_p: float = Field(
        default=0.5, ge=0.0, le=1.0, description="teacher-turn probability at step 0"
    )
    end_step: int = Field(
        default=100, ge=1, description="first step at which the teacher takes no turn"
    )
    shape: Literal["linear", "cosine"] = "linear"

    def probability(self, step: int) -> float:
        """The teacher-turn probability at optimizer step `step` (0 from `end_step` on)."""
        if step >= self.end_step:
            return 0.0
        frac = max(step, 0) / self.end_step
        decay = 1.0 - frac if self.shape == "linear" else 0.5 * (1.0 + math.cos(math.pi * frac))
        return self.start_p * decay


def teacher_takes_turn(
    schedule: GuidedSchedule | None, step: int, record_id: str, turn: int
) -> bool:
    """Whether the teacher acts for agent turn `turn` of rollout `record_id` at this step."""
    if schedule is None:
        return False
    p = schedule.probability(step)
    if p <= 0.0:
        return False
    draw = derive_seed(record_id, "guided", step, turn) / float(1 << 63)
    return draw < p
