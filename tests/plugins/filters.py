"""A plugin filter as a user would write it in their own package (one file, one class).

`AgentWordBudgetFilter` refuses trajectories whose agent rambles: any assistant message longer
than `max_words` words. It declares its own reason, which trajforge's built-in list lacks.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from trajforge.schemas import Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult


class AgentWordBudgetFilter(FilterModel):
    name: ClassVar[str] = "agent_word_budget"
    reasons: ClassVar[tuple[str, ...]] = ("agent_too_verbose",)

    max_words: int = Field(ge=1)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        longest = max(
            (len((m.content or "").split()) for m in trajectory.messages if m.role == "assistant"),
            default=0,
        )
        if longest <= self.max_words:
            return FilterResult.ok()
        return FilterResult.reject(
            "agent_too_verbose", f"an agent message has {longest} words > {self.max_words}"
        )


class NotAFilter:
    """Has no name, reasons or check: the config must refuse it."""
