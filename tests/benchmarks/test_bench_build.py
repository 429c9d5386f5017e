"""bench_build's pure parts: the config it writes loads, the critical path and the marginal CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_build import (  # noqa: E402
    TOP_LEVEL,
    BuildSpec,
    build_command,
    compile_bytecode,
    longest_chain,
    marginal_cpu,
    spec_fields,
    write_config,
)
from stub_server import parse_cpus, pin_to  # noqa: E402

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


def test_ratios_pair_the_builds_of_one_spec_and_compare_their_outputs():
    from bench_build import ratios

    def row(tree: str, cpu_s: float, kept: str) -> dict:
        spec = {"mode": "rollout", "num_tasks": 400, "beam_args": [] if tree == "1proc" else ["x"]}
        return {
            "tree": tree,
            "repeat": 0,
            "spec": spec,
            "cpu_s": cpu_s,
            "cpu_ms_per_task": cpu_s * 2.5,
            "wall_s": cpu_s,
            "efficiency": 0.2,
            "outputs": {"kept": kept},
        }

    (same,) = ratios([row("beam", 12.0, "a"), row("1proc", 10.0, "a")], "1proc", "beam")
    assert same["cpu_speedup"] == 0.83 and same["outputs_identical"]
    (other,) = ratios([row("beam", 12.0, "b"), row("1proc", 10.0, "a")], "1proc", "beam")
    assert not other["outputs_identical"]


def test_output_digest_ignores_measured_latency_and_row_order(tmp_path):
    import json

    from build_outputs import outputs_digest, tree_rss_mb

    def write(run: Path, latencies: list[float]) -> None:
        (run / "rejected").mkdir(parents=True)
        lines = [
            json.dumps({"id": i, "payload_json": json.dumps({"cost": {"latency_s": s, "n": i}})})
            for i, s in enumerate(latencies)
        ]
        (run / "rejected" / "r.jsonl").write_text("\n".join(lines))

    write(tmp_path / "a", [0.1, 0.2])
    write(tmp_path / "b", [0.3, 0.4])
    assert outputs_digest(tmp_path / "a") == outputs_digest(tmp_path / "b")
    (tmp_path / "b" / "rejected" / "r.jsonl").write_text('{"id": 0, "payload_json": "{}"}')
    assert outputs_digest(tmp_path / "a")["rejected"] != outputs_digest(tmp_path / "b")["rejected"]
    import os

    assert tree_rss_mb(os.getpid()) > 10  # this test process at least


def test_cpu_lists_parse_and_name_the_bad_part():
    assert parse_cpus("0,1") == {0, 1}
    assert parse_cpus("2-4,7") == {2, 3, 4, 7}
    with pytest.raises(ValueError, match="'x-2' is not N or N-M"):
        parse_cpus("0,x-2")
    with pytest.raises(ValueError, match="names no core"):
        parse_cpus(",")
    assert pin_to(None) is None


def test_a_pinned_child_runs_on_the_given_core_only():
    core = min(os.sched_getaffinity(0))
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
        preexec_fn=pin_to(frozenset({core})),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"[{core}]"


def test_spec_fields_are_json_ready_and_the_build_runs_without_a_console_script(tmp_path):
    spec = BuildSpec(mode="rollout", num_tasks=2, build_cpus=frozenset({1, 0}))
    assert spec_fields(spec)["build_cpus"] == [0, 1] and spec_fields(spec)["stub_cpus"] is None
    command = build_command(tmp_path / "c.yaml", tmp_path / "run", None)
    script = Path(sys.executable).parent / "trajforge"
    if script.exists():
        assert command[0] == str(script)
    else:
        assert command[:3] == [sys.executable, "-m", "trajforge.pipelines.cli"]
    profiled = build_command(tmp_path / "c.yaml", tmp_path / "run", tmp_path / "p.prof")
    assert profiled[:4] == [sys.executable, "-m", "cProfile", "-o"]


def test_compile_bytecode_compiles_every_package_folder_of_a_tree(tmp_path):
    for top in TOP_LEVEL:
        (tmp_path / top).mkdir()
        (tmp_path / top / "mod.py").write_text("X = 1\n")
    compile_bytecode(tmp_path)
    for top in TOP_LEVEL:
        assert list((tmp_path / top / "__pycache__").glob("mod.*.pyc")), top
