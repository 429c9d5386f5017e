"""Wall time per call of retail world generation and of the plan search alone (issue 14).

`bench_synthesis.py` times the whole of synthesis, in which these two are ~1.2 ms of ~4.5;
their changes drown in its run-to-run noise on a shared machine. This times each on its own:
`generate_world` for `--seeds` seeds of build seed 1, then `best_plan` (the leading type,
actors and sub-goals of `synthesize`'s search, without the persona or the replay) on those
worlds, each the fastest of `--rounds` rounds, so a quiet moment of the machine is what counts.

Usage:
  python benchmarks/bench_world_plan.py
  python benchmarks/bench_world_plan.py --compare c6e9579 --repeats 3   # alternating trees
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trajforge.generators.domain_kit import best_plan
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.domains.retail.tasks import RetailTaskSpace
from trajforge.generators.domains.retail.world import generate_world
from trajforge.schemas import InitialState, derive_seed


def fastest(work: Callable[[], None], rounds: int) -> float:
    """The fastest of `rounds` runs of `work`, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def measure(n_seeds: int, rounds: int) -> str:
    seeds = [derive_seed(1, index, "synthesize", 0) for index in range(n_seeds)]
    domain, space = RetailDomain(), RetailTaskSpace()
    states = [domain.initial_state(InitialState(seed=seed)) for seed in seeds]

    def worlds() -> None:
        for seed in seeds:
            generate_world(seed)

    def plans() -> None:
        for seed, state in zip(seeds, states, strict=True):
            rng = random.Random(seed)
            best_plan(space, domain.toolbox, state, rng.choice((1, 2, 3)), rng)

    world_ms = 1000 * fastest(worlds, rounds) / n_seeds
    plan_ms = 1000 * fastest(plans, rounds) / n_seeds
    return f"generate_world {world_ms:.3f} ms, best_plan {plan_ms:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=8, help="runs of each; the fastest counts")
    parser.add_argument("--compare", metavar="REF", help="also run commit REF, alternating")
    parser.add_argument("--repeats", type=int, default=3, help="runs per tree with --compare")
    args = parser.parse_args()
    if args.compare:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_build import alternate  # the same extracted trees the build benchmark uses

        argv = ["--seeds", str(args.seeds), "--rounds", str(args.rounds)]
        runs = alternate(__file__, argv, args.compare, args.repeats)
        for label, lines in runs.items():
            parts = [re.findall(r"([0-9.]+) ms", line) for line in lines]
            world, plan = (min(float(p[i]) for p in parts) for i in (0, 1))
            print(f"{label}: fastest generate_world {world:.3f} ms, best_plan {plan:.3f} ms")
        return
    gc.set_threshold(10_000, 10, 10)  # as bench_synthesis.py --gc-threshold 10000
    print(measure(args.seeds, args.rounds))


if __name__ == "__main__":
    main()
