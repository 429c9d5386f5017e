"""A task's difficulty from k attempts: pass rate and tau2-bench's pass^k (and pass@k).

With n attempts of a task and c successes:
- pass^k = C(c, k) / C(n, k): the chance that k attempts drawn without replacement *all*
  succeed (reliability; tau2-bench's headline metric), an unbiased estimate from c of n;
- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k succeeds.

They live here, below both `pipelines` (builds label each task with them) and `finetune`
(evaluation scores agents with them), so the two never compute difficulty differently.
"""

from __future__ import annotations

from math import comb

from trajforge.schemas.base import Record


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k estimated from c successes in n attempts (all k succeed)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k estimated from c successes in n attempts (at least one of k succeeds)."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


class Difficulty(Record):
    """How hard a task was for the build's agent: c of n attempts passed every gate.

    `pass_hat_k[j - 1]` is pass^j for j = 1..n, so `pass_hat_k[0] == pass_rate` and the last
    entry is pass^n (1.0 only when every attempt passed)."""

    attempts: int
    successes: int
    pass_rate: float
    pass_hat_k: tuple[float, ...]

    @classmethod
    def of(cls, attempts: int, successes: int) -> Difficulty:
        _check(attempts, successes, 1)
        return cls(
            attempts=attempts,
            successes=successes,
            pass_rate=successes / attempts,
            pass_hat_k=tuple(pass_hat_k(attempts, successes, j) for j in range(1, attempts + 1)),
        )
