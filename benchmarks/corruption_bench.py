"""Labelled corruption benchmark for the non-LLM gate (issue 10's acceptance).

Real trajectories come from the oracle agent (rollout with the scripted user) and the blueprint
generator (`verbalise: none`) over synthesized retail tasks; the ones the gate keeps are bases.
Every class in corruption_planters.CLASSES is planted on every base it applies to, the gate
(`verifiers.gate.gate_verdict`: outcome + every default filter, LLM judge off) judges each
variant, and the report gives per class the rejected fraction and the reasons.

    .venv/bin/python benchmarks/corruption_bench.py --tasks 30 [--out benchmarks/results/corruption.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corruption_planters import CLASSES as CLASSES_V2  # noqa: E402
from corruption_planters_v3 import CLASSES_V3  # noqa: E402

from trajforge.generators.agent import OracleAgent  # noqa: E402
from trajforge.generators.blueprint import run_blueprint  # noqa: E402
from trajforge.generators.domains import get_domain  # noqa: E402
from trajforge.generators.llm.scripted import ScriptedLLM  # noqa: E402
from trajforge.generators.personas import sample_persona  # noqa: E402
from trajforge.generators.rollout import run_rollout  # noqa: E402
from trajforge.generators.task_verification import verify_task  # noqa: E402
from trajforge.generators.user import ScriptedUser  # noqa: E402
from trajforge.schemas import Provenance, Rejected, derive_seed  # noqa: E402
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters  # noqa: E402
from trajforge.verifiers.gate import gate_verdict  # noqa: E402

#: Every planted class: the classic ones (issue 10) and the subtler ones of issue 27.
CLASSES = {**CLASSES_V2, **CLASSES_V3}

PROVENANCE = Provenance(models={"agent": "oracle"}, seeds={"bench": 0})


async def _bases(domain, n_tasks: int, seed: int) -> list:
    out = []
    for i in range(n_tasks):
        try:
            persona = sample_persona(derive_seed(seed, i, "persona"))
            task = verify_task(
                domain, domain.synthesize_task(persona, derive_seed(seed, i, "task"))
            )
        except Rejected:
            continue
        out.append(
            await run_rollout(
                task, domain, OracleAgent(task), ScriptedUser(task), seed=i, provenance=PROVENANCE
            )
        )
        out.append(
            await run_blueprint(
                task,
                domain,
                ScriptedLLM(replies=[]),
                model="none",
                seed=i,
                provenance=PROVENANCE,
                verbalise="none",
            )
        )
    return out


def run(n_tasks: int, seed: int) -> dict:
    domain = get_domain("retail")
    filters = build_filters(DEFAULT_FILTERS)
    generated = asyncio.run(_bases(domain, n_tasks, seed))
    bases = [t for t in generated if gate_verdict(t, domain, filters).kept]
    per_class: dict[str, dict] = {}
    for name, (planter, label) in CLASSES.items():
        reasons: Counter = Counter()
        n = rejected = 0
        for k, base in enumerate(bases):
            variant = planter(base, domain, random.Random(derive_seed(seed, name, k)))
            if variant is None:
                continue
            verdict = gate_verdict(variant, domain, filters)
            n += 1
            rejected += not verdict.kept
            reasons.update({r.reason for r in verdict.reasons})
        per_class[name] = {
            "label": label,
            "n": n,
            "rejected": rejected,
            "reasons": dict(reasons.most_common()),
        }
    return {
        "generated": len(generated),
        "bases": len(bases),
        "classes": per_class,
        "summary": _summary(per_class),
        "dedup_pairs": dedup_calibration(bases, domain, seed),
    }


def dedup_calibration(bases: list, domain, seed: int) -> dict:
    """Content-key agreement on labelled pairs: (base, paraphrase) and (base, base + harmless
    read) are duplicates; two different bases are not (the hardest: same task types)."""
    from trajforge.verifiers.content_key import content_key, same_content

    paraphrase, extra_read = CLASSES["paraphrase"][0], CLASSES["extra_read"][0]
    dups = []
    for k, base in enumerate(bases):
        rng = random.Random(derive_seed(seed, "dedup", k))
        for variant in (paraphrase(base, domain, rng), extra_read(base, domain, rng)):
            dups.append((content_key(base), content_key(variant)))
    keys = [content_key(b) for b in bases]
    different = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1 :]]
    sweep = {}
    for j in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        sweep[str(j)] = {
            "duplicates_found": sum(same_content(a, b, j) for a, b in dups) / max(len(dups), 1),
            "different_called_duplicate": sum(same_content(a, b, j) for a, b in different),
        }
    return {
        "duplicate_pairs": len(dups),
        "different_pairs": len(different),
        "different_pairs_same_intent": sum(a.intent == b.intent for a, b in different),
        "by_jaccard": sweep,
    }


def _summary(per_class: dict) -> dict:
    totals: dict[str, Counter] = defaultdict(Counter)
    for c in per_class.values():
        totals[c["label"]].update(n=c["n"], rejected=c["rejected"])
    bad, good = totals["bad"], totals["good"]
    return {
        "bad_rejected": bad["rejected"] / max(bad["n"], 1),
        "good_kept": 1 - good["rejected"] / max(good["n"], 1),
        "bad_n": bad["n"],
        "good_n": good["n"],
    }


def markdown(report: dict) -> str:
    lines = [
        "| class | label | n | rejected | right (bad rejected / good kept) | top reasons |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in report["classes"].items():
        frac = c["rejected"] / c["n"] if c["n"] else float("nan")
        right = frac if c["label"] == "bad" else 1 - frac
        top = ", ".join(f"{r} ({k})" for r, k in list(c["reasons"].items())[:3])
        lines.append(f"| {name} | {c['label']} | {c['n']} | {frac:.0%} | {right:.0%} | {top} |")
    d = report["dedup_pairs"]
    lines.append(
        f"\ndedup pairs: {d['duplicate_pairs']} duplicates, {d['different_pairs']} different "
        f"({d['different_pairs_same_intent']} with the same intent)"
    )
    for j, r in d["by_jaccard"].items():
        lines.append(
            f"  jaccard {j}: duplicates found {r['duplicates_found']:.0%}, "
            f"different pairs called duplicate {r['different_called_duplicate']}"
        )
    s = report["summary"]
    lines.append(
        f"\nbad rejected: {s['bad_rejected']:.1%} of {s['bad_n']}; good kept: {s['good_kept']:.1%} of {s['good_n']} (bases: {report['bases']} of {report['generated']} generated)"
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
