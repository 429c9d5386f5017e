"""Labelled corruption benchmark of the gate on the search domain (issue 33's acceptance).

Bases are real conversations over synthesized search tasks: the gold plan as a script
(`gold_script`, title citations) and the oracle agent's rollout with the scripted user. Every
class of search_corruption_planters.CLASSES is planted on every base it applies to, each
variant is played for real (`play_script`: every call executed) and judged by the gate
(`verifiers.gate.gate_verdict`: outcome + every default filter, LLM judge off). The report
gives per class the rejected fraction and the reasons; good classes must all be kept.

    .venv/bin/python benchmarks/search_corruption_bench.py --tasks 30 [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corruption_bench import _summary  # noqa: E402  (bad rejected / good kept, as for retail)
from search_corruption_planters import CLASSES, Base, script_of  # noqa: E402

from trajforge.generators.agent import OracleAgent  # noqa: E402
from trajforge.generators.domains import get_domain  # noqa: E402
from trajforge.generators.domains.search.data_model import world_for  # noqa: E402
from trajforge.generators.domains.search.gold_script import gold_script, synthesized  # noqa: E402
from trajforge.generators.personas import sample_persona  # noqa: E402
from trajforge.generators.rollout import run_rollout  # noqa: E402
from trajforge.generators.scripted_trajectory import play_script  # noqa: E402
from trajforge.generators.task_verification import verify_task  # noqa: E402
from trajforge.generators.user import ScriptedUser  # noqa: E402
from trajforge.schemas import Provenance, Rejected, derive_seed  # noqa: E402
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters  # noqa: E402
from trajforge.verifiers.gate import gate_verdict  # noqa: E402

PROVENANCE = Provenance(models={"agent": "oracle"}, seeds={"bench": 0})


def _bases(domain, n_tasks: int, seed: int) -> list[Base]:
    bases = []
    for i in range(n_tasks):
        try:
            persona = sample_persona(derive_seed(seed, i, "persona"))
            task = verify_task(
                domain, domain.synthesize_task(persona, derive_seed(seed, i, "task"))
            )
        except Rejected:
            continue
        oracle = asyncio.run(
            run_rollout(task, domain, OracleAgent(task), ScriptedUser(task), seed=i,
                        provenance=PROVENANCE)
        )  # fmt: skip
        world, found = world_for(task.initial_state.seed), synthesized(task)
        for script in (gold_script(task), script_of(oracle)):
            bases.append(Base(task, domain, world, found, tuple(script)))
    return bases


def run(n_tasks: int, seed: int) -> dict:
    domain = get_domain("search")
    filters = build_filters(DEFAULT_FILTERS)
    generated = _bases(domain, n_tasks, seed)
    bases = [
        b
        for b in generated
        if gate_verdict(play_script(b.task, domain, b.script), domain, filters).kept
    ]
    per_class: dict[str, dict] = {}
    for name, (planter, label) in CLASSES.items():
        reasons: Counter = Counter()
        n = rejected = 0
        for k, base in enumerate(bases):
            script = planter(base, random.Random(derive_seed(seed, name, k)))
            if script is None:
                continue
            verdict = gate_verdict(play_script(base.task, domain, script), domain, filters)
            n += 1
            rejected += not verdict.kept
            reasons.update({r.reason for r in verdict.reasons})
        per_class[name] = {"label": label, "n": n, "rejected": rejected,
                           "reasons": dict(reasons.most_common())}  # fmt: skip
    return {
        "generated": len(generated),
        "bases": len(bases),
        "classes": per_class,
        "summary": _summary(per_class),
    }


def markdown(report: dict) -> str:
    lines = ["| class | label | n | rejected | top reasons |", "|---|---|---|---|---|"]
    for name, c in report["classes"].items():
        frac = f"{c['rejected'] / c['n']:.0%}" if c["n"] else "n/a"
        top = ", ".join(f"{r} ({k})" for r, k in list(c["reasons"].items())[:3])
        lines.append(f"| {name} | {c['label']} | {c['n']} | {frac} | {top} |")
    s = report["summary"]
    lines.append(
        f"\nbad rejected: {s['bad_rejected']:.1%} of {s['bad_n']}; good kept: "
        f"{s['good_kept']:.1%} of {s['good_n']} (bases: {report['bases']} of "
        f"{report['generated']} generated)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()
    report = run(args.tasks, args.seed)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2, sort_keys=True))
    print(markdown(report))


if __name__ == "__main__":
    main()
