"""Search-specific outcome check: the agent read evidence for every fact of the question.

The answer itself is checked by the generic outcome verifier (the `answer` tool writes the
normalised answer into the state, so the state-hash comparison is a normalised exact match).
This adds evidence coverage: the documents the agent opened must state every fact the
question's chain needs (a `find` that showed the sentence of a fact counts for that fact).
Any document stating a fact counts, so equivalent documents (a fact
told again from the other entity's side, a biography) are as good as the gold ones.
"""

from __future__ import annotations

import json

from trajforge.generators.domains.search.corpus import Fact, sentence
from trajforge.generators.domains.search.data_model import SearchWorld, world_for
from trajforge.generators.domains.search.evidence import evidence_gap
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.schemas import Trajectory


def opened_documents(trajectory: Trajectory) -> list[str]:
    """Document ids the agent opened successfully, in order (repeats kept once)."""
    opened = [
        str(step.call.arguments.get("doc_id", "")).strip()
        for step in trajectory.steps
        if step.call.name == "open" and step.error is None
    ]
    return list(dict.fromkeys(opened))


def found_facts(trajectory: Trajectory, world: SearchWorld) -> set[str]:
    """Facts whose sentences a successful `find` showed the agent (it read those lines)."""
    facts: set[str] = set()
    for step in trajectory.steps:
        doc = world.document(str(step.call.arguments.get("doc_id", "")).strip())
        if step.call.name != "find" or step.error is not None or doc is None:
            continue
        shown = " ".join(json.loads(step.result or "[]"))
        for key in doc.facts:
            fact = Fact.from_key(key)
            if any(sentence(world.graph, fact, rev) in shown for rev in (False, True)):
                facts.add(key)
    return facts


def evidence_not_covered(trajectory: Trajectory) -> str | None:
    """None when the opened documents cover the question's facts, else what is missing.

    The question is re-derived from the task (world seed and persona are all synthesis used);
    a task whose re-derived answer differs from its expected output is reported, not trusted.
    """
    task = trajectory.task
    found = synthesized_for(task.initial_state.seed, task.persona.id)
    if found is None or (found.question.answer,) != task.expected_outputs:
        return "evidence_not_covered: the task's question cannot be re-derived from its seed"
    world = world_for(task.initial_state.seed)
    gap = set(evidence_gap(found.question, world, opened_documents(trajectory)))
    gap -= found_facts(trajectory, world)
    if gap:
        return f"evidence_not_covered: no opened document states {', '.join(sorted(gap))}"
    return None


#: What the generic outcome verifier runs for this domain, after its own checks.
OUTCOME_CHECKS = (evidence_not_covered,)
