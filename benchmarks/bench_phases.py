"""Where a whole build's wall time goes, phase by phase (issue 14, eighth round).

Runs `trajforge build` (rollout, the `bench_build.py` config) against the stub in a child that
times every Beam stage (`FnApiRunner._execute_bundle`) and the closing of the worker processes
(`WorkerHandlerManager.close_all`), while the stub's request count is polled every 50 ms.
Prints, in seconds from the child's start: the first stage's start, the first stage (where the
worker processes start), the fused stage with the first and last LLM call, the later stages,
closing the workers, and the exit.

`--imports` instead times importing the build's modules in a fresh interpreter from two
extracted copies of a commit, one with its bytecode compiled and one without, with
PYTHONDONTWRITEBYTECODE=1 (as on these machines), alternating.

Usage:
  python benchmarks/bench_phases.py --tasks 1600 --processes 2
  python benchmarks/bench_phases.py --imports --repeats 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_build import TOP_LEVEL, BuildSpec, compile_bytecode, write_config  # noqa: E402
from stub_server import StubConfig, spawn_stub_process  # noqa: E402

MARK = "PHASE"
TWO_PROCESSES = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")
IMPORTS = "import trajforge.pipelines.build, trajforge.generators.domains.retail.domain"


def child(argv: list[str]) -> None:
    """The build, with each stage's start and duration and the workers' closing printed."""
    started = time.perf_counter()
    from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                what = label(args)
                took = time.perf_counter() - t
                print(f"{MARK} {t - started:.3f} {took:.3f} {what}", file=sys.stderr, flush=True)

        setattr(owner, name, wrapper)

    timed(fn_runner.FnApiRunner, "_execute_bundle", lambda a: a[2].stage.name[:80])
    timed(worker_handlers.WorkerHandlerManager, "close_all", lambda a: "close workers")
    from trajforge.pipelines.cli import main

    sys.argv = ["trajforge", *argv]
    try:
        main()
    finally:
        print(f"{MARK} {time.perf_counter() - started:.3f} 0 exit", file=sys.stderr, flush=True)


def run_phases(tasks: int, processes: int, out: Path) -> dict[str, object]:
    out.mkdir(parents=True)
    spec = BuildSpec(mode="rollout", num_tasks=tasks)
    beam = TWO_PROCESSES if processes == 2 else ("--direct_running_mode=in_memory",)
    with spawn_stub_process(
        StubConfig(latency_ms=spec.latency_ms, tool_calls_per_episode=3)
    ) as stub:
        config = write_config(spec, stub.base_url, out)
        command = [sys.executable, __file__, "--child", "build", "--config", str(config)]
        command += ["--output", str(out / "run"), "--no-progress", "--overwrite", *beam]
        stub.reset_stats()
        t0 = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        polled: list[tuple[float, int]] = []

        def poll() -> None:
            while process.poll() is None:
                polled.append((time.perf_counter() - t0, stub.stats()["requests"]))
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        stderr = process.communicate()[1]
        poller.join()
        wall = time.perf_counter() - t0
        calls = stub.stats()["requests"]
    marks = [line.split(" ", 3)[1:] for line in stderr.splitlines() if line.startswith(MARK)]
    stages = [(float(t), float(d), name) for t, d, name in marks if name not in ("exit",)]
    bundles = [s for s in stages if s[2] != "close workers"]
    fused = max(bundles, key=lambda s: s[1])
    closing = [s for s in stages if s[2] == "close workers"]
    exit_at = next(float(t) for t, _, name in marks if name == "exit")
    first_call = next((t for t, n in polled if n > 0), float("nan"))
    last_call = next((t for t, n in polled if n >= calls), float("nan"))
    later = [s for s in bundles if s[0] > fused[0]]
    return {
        "wall_s": wall,
        "first_stage_at_s": bundles[0][0],
        "first_stage_s": bundles[0][1],
        "fused_stage_at_s": fused[0],
        "fused_stage_s": fused[1],
        "first_call_at_s": first_call,
        "last_call_at_s": last_call,
        "later_stages": len(later),
        "later_stages_s": sum(s[1] for s in later),
        "longest_later": ", ".join(
            f"{name.split(')')[0].lstrip('(')[:40]} {took:.2f}"
            for _, took, name in sorted(later, key=lambda s: -s[1])[:3]
        ),
        "calls_per_s_first_to_last": calls / (last_call - first_call),
        "close_workers_s": closing[0][1] if closing else 0.0,
        "exit_at_s": exit_at,
        "llm_calls": calls,
    }


def extracted(ref: str, root: Path, compiled: bool) -> Path:
    """`ref` extracted under `root`, importable as `trajforge.*` from the returned shim."""
    src, shim = root / "src", root / "shim" / "trajforge"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    shim.mkdir(parents=True)
    for top in TOP_LEVEL:
        (shim / top).symlink_to(src / top)
    if compiled:
        compile_bytecode(src)
    return shim.parent


def import_seconds(shim: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(shim), "PYTHONDONTWRITEBYTECODE": "1"}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1600)
    parser.add_argument("--processes", type=int, choices=(1, 2), default=2)
    parser.add_argument("--imports", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--ref", default="HEAD", help="commit for --imports")
    args = parser.parse_args()
    compile_bytecode(HERE.parent)
    with tempfile.TemporaryDirectory() as tmp:
        if args.imports:
            trees = {c: extracted(args.ref, Path(tmp) / str(c), c) for c in (False, True)}
            for _ in range(args.repeats):
                for compiled, shim in trees.items():
                    label = "compiled" if compiled else "not compiled"
                    print(f"import, {label}: {import_seconds(shim):.2f} s", flush=True)
            return
        for repeat in range(args.repeats):
            phases = run_phases(args.tasks, args.processes, Path(tmp) / f"r{repeat}")
            print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in phases.items()), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
