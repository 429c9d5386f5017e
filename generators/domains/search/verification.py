"""Search-specific outcome check: the agent read evidence for every fact of the question.

The answer itself is checked by the generic outcome verifier (the `answer` tool writes the
normalised answer into the state, so the state-hash comparison is a normalised exact match).
This adds evidence coverage: the documents the agent opened must state every fact the
question's chain needs. Any document stating a fact counts, so equivalent documents (a fact
told again from the other entity's side, a biography) are as good as the gold ones.
"""

from __future__ import annotations

from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.evidence import evidence_gap
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.schemas import Trajectory

READ_TOOLS = frozenset({"open"})


def opened_documents(trajectory: Trajectory) -> list[str]:
    """Document ids the agent opened successfully, in order (repeats kept once)."""
    opened = [
        str(step.call.arguments.get("doc_id", "")).strip()
        for step in trajectory.steps
        if step.call.name in READ_TOOLS and step.error is None
    ]
    return list(dict.fromkeys(opened))


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
    gap = evidence_gap(found.question, world, opened_documents(trajectory))
    if gap:
        return f"evidence_not_covered: no opened document states {', '.join(gap)}"
    return None


#: What the generic outcome verifier runs for this domain, after its own checks.
OUTCOME_CHECKS = (evidence_not_covered,)
