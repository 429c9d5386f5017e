"""pass@k and pass^k over repeated attempts per task (tau2-bench definitions).

With n attempts of a task and c successes:
- pass^k = C(c, k) / C(n, k): the chance that k attempts drawn without replacement *all*
  succeed (reliability; tau2-bench's headline metric);
- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k succeeds.
Both are averaged over tasks; k must not exceed n. The per-task estimators live in
`trajforge.schemas.difficulty` (builds label tasks with the same functions).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from trajforge.schemas.difficulty import pass_at_k, pass_hat_k

__all__ = ["GroupScore", "pass_at_k", "pass_hat_k", "score"]


class GroupScore(BaseModel):
    """Scores of a group of tasks (all, one task type, one complexity)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: int
    attempts: int
    success: float  # mean over tasks of c/n
    pass_hat: dict[int, float]  # k -> pass^k
    pass_at: dict[int, float]  # k -> pass@k


def score(outcomes: Iterable[tuple[int, int]], k: int) -> GroupScore:
    """Scores of (n, c) pairs for every k' in 1..k."""
    pairs = list(outcomes)
    if not pairs:
        return GroupScore(tasks=0, attempts=0, success=0.0, pass_hat={}, pass_at={})
    mean = lambda xs: sum(xs) / len(pairs)  # noqa: E731
    return GroupScore(
        tasks=len(pairs),
        attempts=sum(n for n, _ in pairs),
        success=mean([c / n for n, c in pairs]),
        pass_hat={j: mean([pass_hat_k(n, c, j) for n, c in pairs]) for j in range(1, k + 1)},
        pass_at={j: mean([pass_at_k(n, c, j) for n, c in pairs]) for j in range(1, k + 1)},
    )
