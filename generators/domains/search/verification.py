"""Search-specific outcome check: the agent read the evidence for every fact of the question,
as a chain, before it answered.

The answer itself is checked by the generic outcome verifier (the `answer` tool writes the
normalised answer into the state, so the state-hash comparison is a normalised exact match).
This adds evidence coverage, in order:

- every fact the question's chain needs is stated by a document the agent opened (or by a
  sentence a `find` showed it) *before* its `answer` call: reading after answering is guessing;
- each entity of the chain after the anchor was shown to the agent (in a tool output or a user
  turn) before the agent first used its name in a call (a query, a `find`, the answer): a set of
  documents that covers the facts from the other side does not make a guessed name read.

Any document stating a fact counts, so equivalent documents (a fact told again from the other
entity's side, a biography) are as good as the gold ones, and reading them in another order than
the gold plan is fine as long as each name was shown before it was used.
"""

from __future__ import annotations

import json

from trajforge.generators.domains.search.corpus import Fact, sentence
from trajforge.generators.domains.search.data_model import SearchWorld, world_for
from trajforge.generators.domains.search.names import full_names, name_tokens, unshown_names
from trajforge.generators.domains.search.questions import Question
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.schemas import StepRecord, Trajectory


def opened_documents(trajectory: Trajectory) -> list[str]:
    """Document ids the agent opened successfully, in order (repeats kept once)."""
    opened = [
        str(step.call.arguments.get("doc_id", "")).strip()
        for step in trajectory.steps
        if step.call.name == "open" and step.error is None
    ]
    return list(dict.fromkeys(opened))


def step_facts(step: StepRecord, world: SearchWorld) -> frozenset[str]:
    """Facts one step showed the agent: all of an opened document's, or those whose sentences
    a successful `find` returned (it read those lines only)."""
    if step.error is not None or step.call.name not in ("open", "find"):
        return frozenset()
    doc = world.document(str(step.call.arguments.get("doc_id", "")).strip())
    if doc is None:
        return frozenset()
    if step.call.name == "open":
        return doc.facts
    shown = " ".join(json.loads(step.result or "[]"))
    return frozenset(
        key
        for key in doc.facts
        if any(sentence(world.graph, Fact.from_key(key), rev) in shown for rev in (False, True))
    )


def found_facts(trajectory: Trajectory, world: SearchWorld) -> set[str]:
    """Facts whose sentences a successful `find` showed the agent (it read those lines)."""
    return {f for s in trajectory.steps if s.call.name == "find" for f in step_facts(s, world)}


def facts_read_before_answer(trajectory: Trajectory, world: SearchWorld) -> set[str]:
    """Facts read (opened or found) before the first successful `answer` call (all of them
    when the agent never answered)."""
    facts: set[str] = set()
    for step in trajectory.steps:
        if step.call.name == "answer" and step.error is None:
            break
        facts |= step_facts(step, world)
    return facts


def unshown_chain_names(trajectory: Trajectory, question: Question, world: SearchWorld):
    """(message index, entity id, what) for each chain entity after the anchor whose name (a
    distinctive token, or the whole name) the agent used in a call before any tool output or
    user turn had shown it."""
    by_entity, whole = name_tokens(world.seed), full_names(world.seed)
    chain = {node: by_entity[node] for node in question.chain[1:]}
    names = frozenset().union(*chain.values())
    wholes = {whole[n]: n for n in chain if n in whole}
    calls_only = [m.model_copy(update={"content": None}) if m.role == "assistant" else m
                  for m in trajectory.messages]  # fmt: skip
    found = []
    for index, unseen in unshown_names(calls_only, names, wholes):
        for node, parts in chain.items():
            hit = sorted(parts & set(unseen)) + [n for n in unseen if wholes.get(n) == node]
            if hit:
                found.append((index, node, hit))
    return found


def chain_problems(trajectory: Trajectory, question: Question, world: SearchWorld) -> list[str]:
    """What breaks the chain: facts not read before the answer, names used before shown."""
    problems = []
    gap = question.facts - facts_read_before_answer(trajectory, world)
    if gap:
        problems.append(f"no document read before the answer states {', '.join(sorted(gap))}")
    for index, node, parts in unshown_chain_names(trajectory, question, world):
        problems.append(f"message {index} uses {'/'.join(parts)} ({node}) before it was shown")
    return problems


def evidence_not_covered(trajectory: Trajectory) -> str | None:
    """None when the evidence was read as a chain before answering, else what is missing.

    The question is re-derived from the task (world seed and persona are all synthesis used);
    a task whose re-derived answer differs from its expected output is reported, not trusted.
    """
    task = trajectory.task
    found = synthesized_for(task.initial_state.seed, task.persona.id)
    if found is None or (found.question.answer,) != task.expected_outputs:
        return "evidence_not_covered: the task's question cannot be re-derived from its seed"
    problems = chain_problems(trajectory, found.question, world_for(task.initial_state.seed))
    return f"evidence_not_covered: {'; '.join(problems)}" if problems else None


#: What the generic outcome verifier runs for this domain, after its own checks.
OUTCOME_CHECKS = (evidence_not_covered,)
