"""CPU per task of blueprint generation in one process, without Beam or HTTP (issue 14).

In a build, `run_blueprint` runs on the event-loop thread, so the build's main-thread profile
(`bench_build.py --profile`) does not see it. This benchmark synthesises `--tasks` retail tasks
of build seed 1 (untimed), then runs `run_blueprint` on each with an in-process scripted LLM
and times it with `time.process_time`. Two responders:

  stub   what benchmarks/stub_server.py answers (16 placeholder words): every rewrite fails the
         check and the draft is kept, as in `bench_build.py --modes blueprint`;
  draft  the offline `blueprint_writer` (the prompt's draft back): every rewrite passes, so the
         acceptance checks run to the end.

The digest of every trajectory's JSON is printed so two trees can be checked to produce the
same trajectories. `--filters` also times, on the build's main thread's side, what a blueprint
trajectory costs the shortcut stage there: `compute_signatures` and the default
`quality.filters` (their verdicts go into the digest).

Usage:
  python benchmarks/bench_blueprint_cpu.py --tasks 100
  python benchmarks/bench_blueprint_cpu.py --tasks 100 --responder draft
  python benchmarks/bench_blueprint_cpu.py --tasks 100 --compare 08fcb6d --repeats 3
  python benchmarks/bench_blueprint_cpu.py --tasks 100 --profile      # cProfile of the blueprints
  python benchmarks/bench_blueprint_cpu.py --tasks 100 --filters --profile   # and of the filters
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import pstats
import re
import sys
import time
from pathlib import Path

from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.llm.responders import blueprint_writer
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.schemas import ChatRequest, Provenance, SamplingParams, Task, Trajectory, derive_seed
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters
from trajforge.verifiers.protocol import FilterContext, run_filter
from trajforge.verifiers.signatures import compute_signatures

PROVENANCE = Provenance(models={"agent": "stub-model"}, seeds={"build": 1})
SAMPLING = SamplingParams(temperature=0.0, max_tokens=64)  # bench_build.py's sampling


def stub_words(request: ChatRequest) -> str:
    """The stub server's text answer: 16 placeholder words keyed by the request."""
    digest = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
    return " ".join(f"w{digest[i % 16]}{i}" for i in range(16))


RESPONDERS = {"stub": stub_words, "draft": blueprint_writer}


def tasks_of(domain: RetailDomain, n: int) -> list[Task]:
    """The verified tasks of the first `n` seeds of build seed 1 (rejected seeds skipped)."""
    tasks = []
    for index in range(n):
        persona = sample_persona(derive_seed(1, index, "persona"))
        try:
            task = domain.synthesize_task(persona, derive_seed(1, index, "synthesize", 0))
            tasks.append(verify_task(domain, task))
        except TaskRejected:
            continue
    return tasks


async def blueprints(domain: RetailDomain, tasks: list[Task], responder: str) -> list:
    llm = ScriptedLLM(responder=RESPONDERS[responder], model="stub-model")
    return [
        await run_blueprint(
            task,
            domain,
            llm,
            model="stub-model",
            seed=derive_seed(task.id, "blueprint", 0),
            provenance=PROVENANCE,
            sampling=SAMPLING,
        )
        for task in tasks
    ]


def shortcut_stage(domain: RetailDomain, trajectories: list[Trajectory]) -> list[str]:
    """What the build's shortcut stage does per trajectory: signatures, then every filter."""
    filters, context = build_filters(DEFAULT_FILTERS), FilterContext(domain=domain)
    verdicts = []
    for trajectory in trajectories:
        signed = trajectory.model_copy(update={"signatures": compute_signatures(trajectory)})
        results = [run_filter(flt, signed, context) for flt in filters]
        verdicts.append(f"{signed.signatures} {[(r.passed, r.reason) for r in results]}")
    return verdicts


def compare(ref: str, extra: list[str], repeats: int) -> None:
    """Alternate runs on this tree and on `ref`; the fastest of each, and the digests."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_build import alternate  # the same extracted trees the build benchmark uses

    runs = alternate(__file__, extra, ref, repeats)
    for label, lines in runs.items():
        for stage in ("blueprint", "filters"):
            found = [re.search(rf"{stage} ([0-9.]+) ms", line) for line in lines]
            if all(found):
                best = min(float(m[1]) for m in found)
                print(f"{label}: fastest {stage} {best:.2f} ms per task")
    digests = {re.search(r"digest (\w+)", line)[1] for lines in runs.values() for line in lines}
    print("trajectory digests agree" if len(digests) == 1 else f"digests DIFFER: {digests}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="stub")
    parser.add_argument("--compare", metavar="REF", help="also run commit REF, alternating")
    parser.add_argument("--repeats", type=int, default=3, help="runs per tree with --compare")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed stages")
    parser.add_argument("--filters", action="store_true", help="also time the shortcut stage")
    args = parser.parse_args()
    if args.compare:
        extra = ["--tasks", str(args.tasks), "--responder", args.responder]
        compare(args.compare, extra + (["--filters"] if args.filters else []), args.repeats)
        return
    domain = RetailDomain()
    tasks = tasks_of(domain, args.tasks)
    profiler = cProfile.Profile() if args.profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    trajectories = asyncio.run(blueprints(domain, tasks, args.responder))
    if profiler is not None:
        profiler.disable()
    spent = time.process_time() - started
    digest = hashlib.sha256()
    for trajectory in trajectories:
        digest.update(trajectory.model_dump_json().encode())
    filters = ""
    if args.filters:
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        verdicts = shortcut_stage(domain, trajectories)
        if profiler is not None:
            profiler.disable()
        filters = f", filters {1000 * (time.process_time() - started) / len(tasks):.2f} ms"
        digest.update("\n".join(verdicts).encode())
    print(
        f"{len(tasks)} tasks ({args.responder}): blueprint {1000 * spent / len(tasks):.2f} ms "
        f"per task{filters}; trajectories digest {digest.hexdigest()[:16]}"
    )
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
