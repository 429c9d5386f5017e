"""Fault-injection benchmark: a whole `trajforge build` against the stub with and without faults.

Why: the build's promise is that transient endpoint faults (429 with Retry-After, 500, hangs
that hit the client timeout) cost time and requests, never data. Two builds of the same config
run against a stub in its own process: a clean one, then one where ~20% of requests fail.
Reported: lost elements (inputs - kept - rejected - dead-lettered, must be 0), dead letters,
whether the kept rows are identical, extra requests (faulty - clean, and the per-cause retry
counters from the manifest) and the wall-time overhead.

    python benchmarks/bench_faults.py                      # 100 tasks, 8% 429 + 8% 500 + 4% hangs
    python benchmarks/bench_faults.py --tasks 200 --rate-429 0.1 --rate-500 0.1 --rate-hang 0.05
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stub_server import StubConfig, spawn_stub_process  # noqa: E402

CONFIG = """
name: fault-bench
domain: retail
num_tasks: {tasks}
seed: 7
mode: blueprint
roles:
  agent:
    kind: openai
    model: stub-model
    base_url: {base_url}
    needs_api_key: false
    timeout_s: {timeout_s}
    max_retries: {retries}
    backoff_base_s: 0.05
    backoff_max_s: 1.0
sampling: {{temperature: 0.0, max_tokens: 32}}
concurrency: {{max_in_flight: {in_flight}}}
cache: {{enabled: false}}
quality: {{dedup: {{semantic: {{enabled: false}}}}}}
"""


def kept_ids(run: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(
        row
        for f in sorted((run / "data").glob("*.parquet"))
        for row in pq.read_table(f)["id"].to_pylist()
    )


def build_once(args: argparse.Namespace, stub: StubConfig, workdir: Path, label: str) -> dict:
    """One build against a fresh stub process; the manifest, the stub's stats and wall time."""
    from trajforge.pipelines.cli import main

    with spawn_stub_process(stub) as server:
        cfg = workdir / f"{label}.yaml"
        cfg.write_text(
            CONFIG.format(
                tasks=args.tasks,
                base_url=server.base_url,
                timeout_s=args.timeout_s,
                retries=args.retries,
                in_flight=args.in_flight,
            )
        )
        out = workdir / label
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"])
        wall = time.perf_counter() - started
        stats = server.stats()
    manifest = json.loads((out / "manifest.json").read_text())
    acc = manifest["accounting"]
    retries: dict[str, int] = {}
    for role in manifest["llm"].values():
        for key, value in role.items():
            if key.startswith("retries."):
                retries[key[8:]] = retries.get(key[8:], 0) + value
    return {
        "exit_code": code,
        "wall_s": round(wall, 2),
        "inputs": acc["inputs"],
        "kept": acc["kept"],
        "rejected": acc["rejected"],
        "dead_lettered": acc["dead_lettered"],
        "lost": acc["inputs"] - acc["kept"] - acc["rejected"] - acc["dead_lettered"],
        "server_requests": stats["requests"],
        "manifest_requests": manifest["tokens"].get("requests", 0),
        "server_outcomes": stats["by_outcome"],
        "retries_by_cause": retries,
        "max_in_flight_at_server": stats["max_in_flight"],
        "kept_ids": kept_ids(out),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rate-429", type=float, default=0.08)
    parser.add_argument("--rate-500", type=float, default=0.08)
    parser.add_argument("--rate-hang", type=float, default=0.04)
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--retries", type=int, default=8)
    parser.add_argument("--in-flight", type=int, default=16)
    args = parser.parse_args(argv)
    clean_stub = StubConfig(latency_ms=args.latency_ms)
    faulty_stub = StubConfig(
        latency_ms=args.latency_ms,
        rate_429=args.rate_429,
        retry_after_s=0.2,
        rate_500=args.rate_500,
        rate_hang=args.rate_hang,
        hang_s=args.timeout_s * 3,
    )
    with tempfile.TemporaryDirectory(prefix="trajforge-faults-") as tmp:
        clean = build_once(args, clean_stub, Path(tmp), "clean")
        faulty = build_once(args, faulty_stub, Path(tmp), "faulty")
    # Hung requests never complete at the stub (the client times out first), so they show in
    # `requests` but not in `by_outcome`: injected = every request not answered normally.
    answered = sum(v for k, v in faulty["server_outcomes"].items() if k in ("ok", "tool_call"))
    injected = faulty["server_requests"] - answered
    report = {
        "tasks": args.tasks,
        "fault_rates": {"429": args.rate_429, "500": args.rate_500, "hang": args.rate_hang},
        "injected_faults": injected,
        "injected_fraction": round(injected / max(1, faulty["server_requests"]), 3),
        "lost_elements": faulty["lost"],
        "dead_lettered": faulty["dead_lettered"],
        "kept_identical_to_clean_run": faulty["kept_ids"] == clean["kept_ids"],
        "extra_requests": faulty["server_requests"] - clean["server_requests"],
        "extra_requests_pct": round(
            100 * (faulty["server_requests"] / max(1, clean["server_requests"]) - 1), 1
        ),
        "time_overhead_pct": round(100 * (faulty["wall_s"] / clean["wall_s"] - 1), 1),
        "clean": {k: v for k, v in clean.items() if k != "kept_ids"},
        "faulty": {k: v for k, v in faulty.items() if k != "kept_ids"},
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
