"""pass@k and pass^k over repeated attempts per task (tau2-bench definitions).

With n attempts of a task and c successes:
- pass^k = C(c, k) / C(n, k): the chance that k attempts drawn without replacement *all*
  succeed (reliability; tau2-bench's headline metric);
- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k succeeds.
Both are averaged over tasks; k must not exceed n.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

from pydantic import BaseModel, ConfigDict


def pass_hat_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


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
