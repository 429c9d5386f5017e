"""Question synthesis with shortcut control: sample candidates until one passes every check.

Each candidate is sampled, checked for the five shortcut risks, and given gold evidence; the
first that survives is kept. Every refused candidate is tallied by typed reason, which is what
the benchmark report prints. The same `(world seed, rng seed)` always yields the same question,
so verification can re-derive a task's question (its chain and facts) from the task alone.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from trajforge.generators.domains.search.data_model import SearchWorld
from trajforge.generators.domains.search.evidence import EvidenceStep, gold_evidence
from trajforge.generators.domains.search.questions import HOPS, Question, sample_question
from trajforge.generators.domains.search.shortcuts import ShortcutRisk, shortcut_violations

#: Candidates tried per task before synthesis gives up.
#: (100 since `guessable_answer` refuses most candidates that end in a province or a popular
#: entity; with half of them at the task's own hop count, 3 of 300 worlds have no question left.)
MAX_CANDIDATES = 100

Infeasible = Literal["no_path_or_unique_anchor", "gold_evidence_unreachable"]
Refusal = ShortcutRisk | Infeasible


@dataclass(frozen=True)
class Synthesized:
    """A kept question, its gold reads, and why the candidates before it were refused."""

    question: Question
    evidence: tuple[EvidenceStep, ...]
    refused: Counter  # Refusal -> count (a candidate with two risks counts under both)
    candidates: int


def synthesize_question(world: SearchWorld, rng: random.Random) -> Synthesized | None:
    """The first shortcut-resistant, solvable candidate, or None after `MAX_CANDIDATES`."""
    refused: Counter = Counter()
    # The hop count is drawn once per task for the first half of the candidates: long chains
    # end in a province (a guessable answer) more often, and redrawing it per candidate would
    # skew the kept questions to short ones. A world with no long question left then gets any.
    hops = rng.choice(HOPS)
    for attempt in range(1, MAX_CANDIDATES + 1):
        fixed = attempt <= MAX_CANDIDATES // 2
        question = sample_question(world.graph, rng, hops if fixed else None)
        if question is None:
            refused["no_path_or_unique_anchor"] += 1
            continue
        violations = shortcut_violations(question, world)
        if violations:
            refused.update(violations.keys())
            continue
        evidence = gold_evidence(question, world, rng)
        if evidence is None:
            refused["gold_evidence_unreachable"] += 1
            continue
        return Synthesized(question, evidence, refused, attempt)
    return None
