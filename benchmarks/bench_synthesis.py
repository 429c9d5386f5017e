"""CPU per task of the synchronous task stages in one process, without Beam (issue 14).

Retail synthesis, task verification and one more initial state (what the rollout builds) for
`--tasks` seeds of build seed 1, timed with `time.process_time` (this thread's CPU). The digest
of every task's JSON is printed so two trees can be checked to produce the same tasks.

Usage:
  python benchmarks/bench_synthesis.py --tasks 150
  python benchmarks/bench_synthesis.py --tasks 100 --compare 18249bd --repeats 3
  python -m cProfile -s cumtime benchmarks/bench_synthesis.py --tasks 60   # where it goes

`--compare REF` runs this benchmark alternately on this tree and on commit REF (extracted by
bench_build.py's `checkout`), each in a fresh process, so both see the same load; it prints
every run, the fastest of each tree and whether the task digests agree. `--gc-threshold N`
runs with `gc.set_threshold(N, 10, 10)`: at Python's default (700) full collections, which walk
every cached world, cost about a third of synthesis.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import re
import sys
import time
from pathlib import Path

from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.schemas import derive_seed


def seed_of(index: int) -> int:
    return derive_seed(1, index, "synthesize", 0)


def timed(spent: dict[str, float], stage: str, fn, *args):
    """`fn(*args)`, its CPU time added to `spent[stage]` (also when it raises)."""
    started = time.process_time()
    try:
        return fn(*args)
    finally:
        spent[stage] += time.process_time() - started


def compare(ref: str, tasks: int, repeats: int, extra: list[str]) -> None:
    """Alternate runs on this tree and on `ref`; the fastest synthesis of each, and digests."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_build import alternate  # the same extracted trees the build benchmark uses

    runs = alternate(__file__, ["--tasks", str(tasks), *extra], ref, repeats)
    for label, lines in runs.items():
        best = min(float(re.search(r"synthesize ([0-9.]+) ms", line)[1]) for line in lines)
        print(f"{label}: fastest synthesis {best:.2f} ms per task")
    digests = {re.search(r"digest (\w+)", line)[1] for lines in runs.values() for line in lines}
    print("task digests agree" if len(digests) == 1 else f"task digests DIFFER: {digests}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=150)
    parser.add_argument("--compare", metavar="REF", help="also run commit REF, alternating")
    parser.add_argument("--repeats", type=int, default=3, help="runs per tree with --compare")
    parser.add_argument(
        "--gc-threshold",
        type=int,
        metavar="N",
        help="gc.set_threshold(N, 10, 10) before the run (Python's default is 700, 10, 10)",
    )
    args = parser.parse_args()
    if args.compare:
        extra = ["--gc-threshold", str(args.gc_threshold)] if args.gc_threshold else []
        compare(args.compare, args.tasks, args.repeats, extra)
        return
    if args.gc_threshold:
        gc.set_threshold(args.gc_threshold, 10, 10)
    n = args.tasks
    domain, digest = RetailDomain(), hashlib.sha256()
    spent = {"synthesize": 0.0, "verify": 0.0, "initial_state": 0.0}
    for index in range(n):
        persona = sample_persona(derive_seed(1, index, "persona"))
        try:
            task = timed(spent, "synthesize", domain.synthesize_task, persona, seed_of(index))
            task = timed(spent, "verify", verify_task, domain, task)
        except TaskRejected as err:
            digest.update(err.reason.encode())
            continue
        timed(spent, "initial_state", domain.initial_state, task.initial_state)
        digest.update(task.model_dump_json().encode())
    per_task = ", ".join(f"{k} {1000 * v / n:.2f} ms" for k, v in spent.items())
    print(f"{n} tasks: {per_task}; tasks digest {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
