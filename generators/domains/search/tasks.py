"""Search tasks: a user asks one multi-hop question about the seeded world; the gold plan is
the gold evidence (search, then open, per document) followed by one `answer` call.

The user knows only the question; the answer and every intermediate are what the agent must
find. The gold final hash is the state after the gold plan, i.e. the normalised gold answer, so
the outcome check's state comparison is an exact match on the normalised answer.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

from trajforge.generators.domains.search.data_model import SearchState, world_for
from trajforge.generators.domains.search.evidence import GOLD_K
from trajforge.generators.domains.search.synthesis import Synthesized, synthesize_question
from trajforge.generators.tooling import TaskRejected, Toolbox, state_hash
from trajforge.schemas import (
    GoldAction,
    InitialState,
    IntentCoordinates,
    Persona,
    Task,
    ToolCall,
    UserScenario,
    derive_seed,
)

DOMAIN_NAME = "search"
TASK_TYPE = "multi_hop_question"


def question_rng(seed: int, persona_id: str) -> random.Random:
    """The synthesis RNG of a task: from its world seed and persona, so it can be re-derived."""
    return random.Random(derive_seed(seed, persona_id, DOMAIN_NAME, "synthesize_task"))


@functools.lru_cache(maxsize=1024)
def synthesized_for(seed: int, persona_id: str) -> Synthesized | None:
    """The question synthesis of (world seed, persona): deterministic, cached per process."""
    return synthesize_question(world_for(seed), question_rng(seed, persona_id))


def gold_actions(found: Synthesized) -> tuple[GoldAction, ...]:
    reads = []
    for step in found.evidence:
        reads.append(GoldAction(name="search", arguments={"query": step.query, "k": GOLD_K}))
        reads.append(GoldAction(name="open", arguments={"doc_id": step.doc_id}))
    return (*reads, GoldAction(name="answer", arguments={"text": found.question.answer}))


def _scenario(found: Synthesized, persona: Persona) -> UserScenario:
    question = found.question.text
    return UserScenario(
        reason_for_contact=f"You want to know the answer to this question: {question}",
        known_info={"question": question},
        unknown_info=(
            "the answer to the question",
            "the entities between the clues and the answer",
        ),
        instructions=(
            f"You are {persona.name}. Your manner: {persona.communication_style}\n"
            f"Ask the assistant this question: {question}\n"
            "You do not know the answer or any name in between; never guess one. When the "
            "assistant gives its answer, thank it and end the conversation with ###STOP###."
        ),
    )


def _gold_hash(toolbox: Toolbox, state: SearchState, actions) -> str | None:
    for i, action in enumerate(actions):
        call = ToolCall(id=f"gold_{i}", name=action.name, arguments=action.arguments)
        if toolbox.execute(state, call).error is not None:
            return None
    return state_hash(state)


def synthesize_task(
    toolbox: Toolbox,
    initial_state: Callable[[InitialState], SearchState],
    persona: Persona,
    seed: int,
) -> Task:
    """A verified-by-construction multi-hop task over world `seed`, or TaskRejected."""
    found = synthesized_for(seed, persona.id)
    if found is None:
        raise TaskRejected("no_feasible_task", f"no shortcut-resistant question in world {seed}")
    init = InitialState(seed=seed)
    actions = gold_actions(found)
    final_hash = _gold_hash(toolbox, initial_state(init), actions)
    if final_hash is None:
        raise TaskRejected("gold_action_failed", f"gold plan failed on world {seed}")
    return Task.create(
        domain=DOMAIN_NAME,
        intent=IntentCoordinates(
            persona_id=persona.id,
            domain=DOMAIN_NAME,
            task_types=(TASK_TYPE,),
            complexity=found.question.hops,
        ),
        persona=persona,
        scenario=_scenario(found, persona),
        initial_state=init,
        gold_actions=actions,
        expected_outputs=(found.question.answer,),
        gold_final_hash=final_hash,
    )
