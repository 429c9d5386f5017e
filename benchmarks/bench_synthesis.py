"""CPU per task of the synchronous task stages in one process, without Beam (issue 14).

Retail synthesis, task verification and one more initial state (what the rollout builds) for
`--tasks` seeds of build seed 1, timed with `time.process_time` (this thread's CPU). The digest
of every task's JSON is printed so two trees can be checked to produce the same tasks.

Usage:
  python benchmarks/bench_synthesis.py --tasks 150
  python -m cProfile -s cumtime benchmarks/bench_synthesis.py --tasks 60   # where it goes
"""

from __future__ import annotations

import argparse
import hashlib
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=150)
    n = parser.parse_args().tasks
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
