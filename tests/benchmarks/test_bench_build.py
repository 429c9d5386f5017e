"""bench_build's pure parts: the config it writes loads, the critical path and the marginal CPU."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_build import BuildSpec, longest_chain, marginal_cpu, write_config  # noqa: E402

from trajforge.pipelines.config import load_config  # noqa: E402


def test_written_config_is_a_valid_build(tmp_path):
    spec = BuildSpec(mode="rollout", num_tasks=400, concurrency=64)
    path = write_config(spec, "http://127.0.0.1:1/v1", tmp_path)
    cfg = load_config(str(path))
    assert cfg.num_tasks == 400 and cfg.concurrency.max_in_flight == 64
    assert not cfg.cache.enabled and not cfg.quality.dedup.semantic.enabled


def test_longest_chain_counts_the_slowest_rollout():
    spec = BuildSpec(mode="rollout", num_tasks=2)
    trajectories = [
        {"messages": [{"role": "assistant"}] * 3 + [{"role": "user"}]},
        {"messages": [{"role": "assistant"}] * 5},
    ]
    assert longest_chain(spec, trajectories) == 6  # 5 agent calls + the no-tool baseline
    assert longest_chain(BuildSpec(mode="blueprint", num_tasks=2), []) == 3


def test_marginal_cpu_cancels_the_fixed_cost():
    rows = [
        {"spec": {"mode": "rollout", "num_tasks": 400}, "cpu_s": 10.0},
        {"spec": {"mode": "rollout", "num_tasks": 1600}, "cpu_s": 34.0},
    ]
    assert marginal_cpu(rows) == {"rollout": 20.0}
