"""A search user must not hand the agent what it is asked to find.

The user knows the question only. A user turn that names the answer or an entity of the chain
that the question does not name (and the agent had not said to it first) gives the agent the
result without the search, and the trajectory then teaches reading nothing. Generic user
fidelity reads values with digits and self-introductions; these names have neither.
"""

from __future__ import annotations

from trajforge.generators.domains.search.claims import question_of
from trajforge.generators.domains.search.names import name_tokens, tokens
from trajforge.schemas import Trajectory


def leaked_names(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, entity id) for each chain entity a user turn names unprompted."""
    found = question_of(trajectory)
    if found is None:
        return []
    question, world = found
    by_entity = name_tokens(world.seed)
    chain = {n: by_entity[n] - tokens(question.text) for n in question.chain[1:]}
    said: set[str] = set()  # what the agent told the user so far
    leaks = []
    for index, message in enumerate(trajectory.messages):
        words = tokens(message.content or "")
        if message.role == "assistant":
            said |= words
        elif message.role == "user":
            leaks += [(index, n) for n, parts in chain.items() if parts & (words - said)]
    return leaks


def user_leak_problems(trajectory: Trajectory) -> list[str]:
    """One line per user turn naming an entity the agent was to find."""
    return [
        f"user message {index} names {node}, which the agent was to find"
        for index, node in leaked_names(trajectory)
    ]
