"""A search user must not hand the agent what it is asked to find.

The user knows the question only. A user turn that names the answer or an entity of the chain
that the question does not name (and the agent had not said to it first) gives the agent the
result without the search, and the trajectory then teaches reading nothing. Generic user
fidelity reads values with digits and self-introductions; these names have neither.
"""

from __future__ import annotations

from trajforge.generators.domains.search.claims import question_of
from trajforge.generators.domains.search.names import mentions, name_tokens, tokens
from trajforge.generators.domains.search.world import entity
from trajforge.schemas import Trajectory


def leaked_names(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, entity id) for each chain entity a user turn names unprompted."""
    found = question_of(trajectory)
    if found is None:
        return []
    question, world = found
    by_entity, asked = name_tokens(world.seed), question.text.lower()
    chain = {n: by_entity[n] - tokens(question.text) for n in question.chain[1:]}
    names = {n: entity(world.graph, n).name.lower() for n in chain}
    said: set[str] = set()  # what the agent told the user so far
    told = ""
    leaks = []
    for index, message in enumerate(trajectory.messages):
        text = (message.content or "").lower()
        words = tokens(text)
        if message.role == "assistant":
            said |= words
            told += " " + text
        elif message.role == "user":
            leaks += [
                (index, n)
                for n, parts in chain.items()
                if parts & (words - said)
                or (mentions(text, names[n]) and not mentions(asked + told, names[n]))
            ]
    return leaks


def user_leak_problems(trajectory: Trajectory) -> list[str]:
    """One line per user turn naming an entity the agent was to find."""
    return [
        f"user message {index} names {node}, which the agent was to find"
        for index, node in leaked_names(trajectory)
    ]
