"""Search-domain report: over N synthesized questions (default 500), the distribution of hops,
how many candidates each shortcut check refused, the oracle's solving cost and the blind-guess
rate per hop count.

Each question is a real task: `SearchDomain.synthesize_task` for a sampled persona and its own
world seed, verified with `verify_task`, then solved by the oracle agent in a rollout with the
scripted user; the cost is the shortcut signatures' solving cost (tool calls and agent tokens
before the answer), and every oracle trajectory must pass the outcome check (answer and
evidence coverage). If cost did not grow with hops, the chain would not be needed.

The blind-guess rate is how often a guesser that reads only the question's last relation hits
the answer: `uniform` picks one of the answer's candidates (shortcuts.answer_candidates) at
random (1 / candidates per task, averaged), `modal` always names the entity that relation
reaches most often in the world (the share of tasks whose answer is that entity). Target: at
most 10% of tasks for both.

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
from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.shortcuts import answer_candidates
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


def blind_guess(question, world) -> tuple[float, float]:
    """(uniform, modal) chance that a guess from the last relation alone hits the answer."""
    last = question.path[-1].predicate
    reached = Counter(dst for _, dst, key in world.graph.edges(keys=True) if key == last)
    top = max(reached.values())
    modal = [t for t, n in reached.items() if n == top]
    uniform = 1 / max(len(answer_candidates(question, world)), 1)
    return uniform, (1 / len(modal) if question.answer_id in modal else 0.0)


def run(questions: int, seed: int) -> dict:
    domain = get_domain("search")
    hops: Counter = Counter()
    refused: Counter = Counter()
    costs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    guesses: dict[int, list[tuple[float, float]]] = defaultdict(list)
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
        guesses[task.intent.complexity].append(blind_guess(found.question, world_for(world_seed)))
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
        "blind_guess_per_hops": {
            h: {
                "uniform": round(statistics.mean(u for u, _ in g), 4),
                "modal": round(statistics.mean(m for _, m in g), 4),
            }
            for h, g in sorted(guesses.items())
        },
        "blind_guess": {
            "uniform": round(statistics.mean(u for g in guesses.values() for u, _ in g), 4),
            "modal": round(statistics.mean(m for g in guesses.values() for _, m in g), 4),
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
    print("\n| hops | blind guess, uniform | blind guess, modal |\n| --- | --- | --- |")
    for h, g in result["blind_guess_per_hops"].items():
        print(f"| {h} | {g['uniform']:.1%} | {g['modal']:.1%} |")
    total = result["blind_guess"]
    print(f"| all | {total['uniform']:.1%} | {total['modal']:.1%} |")


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
