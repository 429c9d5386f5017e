"""Search-domain report: over N synthesized questions (default 500), the distribution of hops,
how many candidates each shortcut check refused, and the oracle's solving cost per hop count.

Each question is a real task: `SearchDomain.synthesize_task` for a sampled persona and its own
world seed, verified with `verify_task`, then solved by the oracle agent in a rollout with the
scripted user; the cost is the shortcut signatures' solving cost (tool calls and agent tokens
before the answer), and every oracle trajectory must pass the outcome check (answer and
evidence coverage). If cost did not grow with hops, the chain would not be needed.

    python benchmarks/search_report.py [--questions 500] [--seed 0]

Prints markdown tables and writes benchmarks/results/search_report.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

from trajforge.generators.agent import OracleAgent
from trajforge.generators.domains import get_domain
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import Provenance, derive_seed
from trajforge.verifiers.outcome import verify_outcome
from trajforge.verifiers.signatures import compute_signatures

PROVENANCE = Provenance(models={}, seeds={}, config_hash="report", trajforge_version="report")


async def _oracle_cost(task, domain) -> tuple[int, int, bool]:
    trajectory = await run_rollout(
        task,
        domain,
        OracleAgent(task),
        ScriptedUser(task),
        max_turns=20,
        max_steps=60,
        seed=0,
        provenance=PROVENANCE,
    )
    signatures = compute_signatures(trajectory)
    passed = verify_outcome(trajectory, domain).passed
    return signatures.solving_tool_calls, signatures.solving_tokens, passed


def run(questions: int, seed: int) -> dict:
    domain = get_domain("search")
    hops: Counter = Counter()
    refused: Counter = Counter()
    costs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    candidates = failed_outcome = no_task = 0
    start = time.perf_counter()
    index = 0
    while sum(hops.values()) < questions:
        persona = sample_persona(derive_seed(seed, index, "persona"))
        world_seed = derive_seed(seed, index, "world")
        index += 1
        try:
            task = verify_task(domain, domain.synthesize_task(persona, world_seed))
        except TaskRejected:
            no_task += 1
            continue
        found = synthesized_for(world_seed, persona.id)
        refused.update(found.refused)
        candidates += found.candidates
        calls, tokens, passed = asyncio.run(_oracle_cost(task, domain))
        failed_outcome += not passed
        hops[task.intent.complexity] += 1
        costs[task.intent.complexity].append((calls, tokens))
    return {
        "questions": questions,
        "seed": seed,
        "candidates_sampled": candidates,
        "worlds_without_a_question": no_task,
        "hops": dict(sorted(hops.items())),
        "refused": dict(refused.most_common()),
        "oracle_outcome_failures": failed_outcome,
        "cost_per_hops": {
            h: {
                "n": len(c),
                "tool_calls_mean": statistics.mean(x for x, _ in c),
                "tool_calls_min": min(x for x, _ in c),
                "tool_calls_max": max(x for x, _ in c),
                "tokens_mean": round(statistics.mean(t for _, t in c), 1),
            }
            for h, c in sorted(costs.items())
        },
        "seconds": round(time.perf_counter() - start, 1),
    }


def print_report(result: dict) -> None:
    n = result["questions"]
    print(f"## {n} questions ({result['candidates_sampled']} candidates, {result['seconds']} s)\n")
    print("| hops | questions | share | oracle tool calls (mean, min-max) | oracle tokens |")
    print("| --- | --- | --- | --- | --- |")
    for h, c in result["cost_per_hops"].items():
        share = result["hops"][h] / n
        span = f"{c['tool_calls_mean']:.2f} ({c['tool_calls_min']}-{c['tool_calls_max']})"
        print(f"| {h} | {c['n']} | {share:.0%} | {span} | {c['tokens_mean']} |")
    print("\n| refused candidates by reason | count |\n| --- | --- |")
    for reason, count in result["refused"].items():
        print(f"| {reason} | {count} |")
    print(f"\noracle outcome failures: {result['oracle_outcome_failures']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = run(args.questions, args.seed)
    print_report(result)
    out = Path(__file__).parent / "results" / "search_report.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
