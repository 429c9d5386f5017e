"""Confidence intervals of `trajforge eval` scores: Wilson for proportions, a seeded
percentile bootstrap over tasks for pass^k / pass@k."""

from __future__ import annotations

import pytest

from trajforge.finetune.metrics import bootstrap_interval, score, t_interval, wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (0, 10, (0.0, 0.2775)),  # textbook Wilson 95% intervals
        (5, 10, (0.2366, 0.7634)),
        (10, 10, (0.7225, 1.0)),
        (81, 263, (0.2553, 0.3662)),  # roots of (p_hat - p)^2 = z^2 p (1 - p) / n
    ],
)
def test_wilson_matches_textbook_values(successes, n, expected):
    low, high = wilson_interval(successes, n)
    assert (low, high) == pytest.approx(expected, abs=5e-4)
    assert 0.0 <= low <= successes / n <= high <= 1.0


def test_wilson_refuses_an_empty_or_impossible_count():
    for successes, n in ((0, 0), (3, 2), (-1, 4)):
        with pytest.raises(ValueError, match="successes"):
            wilson_interval(successes, n)


def test_bootstrap_of_constant_values_is_a_point():
    assert bootstrap_interval([0.5] * 7) == (0.5, 0.5)
    assert bootstrap_interval([1.0]) == (1.0, 1.0)


def test_bootstrap_is_seeded_contains_the_mean_and_narrows_with_more_tasks():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 1.0]
    low, high = bootstrap_interval(values)
    assert bootstrap_interval(values) == (low, high)  # fixed seed: reproducible
    assert bootstrap_interval(values, seed=1) != (low, high)
    assert low < sum(values) / len(values) < high
    wide = high - low
    low10, high10 = bootstrap_interval(values * 10)
    assert high10 - low10 < wide / 2  # ~1/sqrt(10) of the width
    with pytest.raises(ValueError):
        bootstrap_interval([])


def test_score_carries_every_interval_and_each_contains_its_estimate():
    pairs = [(3, 3), (3, 2), (3, 0), (3, 1), (3, 3), (3, 2)]
    s = score(pairs, k=3)
    assert set(s.ci) == {"success", "pass^1", "pass^2", "pass^3", "pass@1", "pass@2", "pass@3"}
    assert s.ci["success"] == s.ci["pass^1"] == s.ci["pass@1"] == wilson_interval(11, 18)
    estimates = {"success": s.success}
    estimates |= {f"pass^{j}": v for j, v in s.pass_hat.items()}
    estimates |= {f"pass@{j}": v for j, v in s.pass_at.items()}
    for name, (low, high) in s.ci.items():
        assert low <= estimates[name] + 1e-12 and estimates[name] <= high + 1e-12, name
        assert high > low, name  # mixed outcomes: no degenerate interval
    assert s.model_dump(mode="json")["ci"]["pass^2"] == list(s.ci["pass^2"])


def test_t_interval_over_training_runs_uses_students_t():
    """Three runs 1, 2, 3: mean 2, sd 1, half-width t(0.975, 2) / sqrt(3) = 4.303 / 1.732;
    with many runs it narrows toward the normal's 1.96."""
    low, high = t_interval([1.0, 2.0, 3.0])
    assert (low, high) == pytest.approx((2 - 4.303 / 3**0.5, 2 + 4.303 / 3**0.5))
    assert t_interval([0.5, 0.5]) == (0.5, 0.5)
    many = [float(i % 2) for i in range(100)]
    assert t_interval(many)[1] - 0.5 == pytest.approx(1.96 * 0.5025 / 10, rel=1e-3)
    with pytest.raises(ValueError, match="at least two runs"):
        t_interval([0.3])
