"""Retail task synthesis over a real seeded state, on the domain kit.

A task is one user of the generated world with 1-3 sub-goals (cancel a pending order, return
items of a delivered one, ask for an order's status, ...), built by `subgoals.py` from what the
state actually holds. The kit plans them (later sub-goals see earlier effects on a working copy)
and computes the gold final hash by replaying the plan through `Toolbox.execute` on a fresh
state, exactly as the outcome check will. The gold plan opens with the authentication lookup
(`scenario.opening`); the user knows what a real customer knows, never internal ids, and
low-recall personas may remember an order only by what is in it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import get_args

from trajforge.generators.domain_kit import (
    Opening,
    SubGoal,
    SubGoalBuilder,
    SynthesisRecipe,
    gold_final_hash,
    synthesize,
)
from trajforge.generators.domains.retail import scenario
from trajforge.generators.domains.retail.data_model import OrderStatus, RetailState
from trajforge.generators.domains.retail.subgoals import SUBGOAL_BUILDERS
from trajforge.generators.tooling import Toolbox
from trajforge.generators.vocabulary import DomainVocabulary, with_generic_verbs
from trajforge.schemas import InitialState, Persona, StatePatch, Task

DOMAIN_NAME = "retail"

#: Retail's words for generic code: its task types, roles, and the verbs its writes back.
VOCABULARY = DomainVocabulary(
    task_types=tuple(SUBGOAL_BUILDERS),
    read_only_task_types=frozenset({"order_status", "product_info"}),
    user_role="customer",
    agent_role="customer-support agent",
    action_verbs=with_generic_verbs(
        {
            "cancelled": ("cancel",),
            "canceled": ("cancel",),
            "returned": ("return",),
            "exchanged": ("exchange",),
            "refunded": ("refund", "return", "cancel"),
        }
    ),
    answer_words=get_args(OrderStatus),  # a customer can't know the status before it's looked up
)


class RetailTaskSpace:
    """The kit's view of retail: users are the actors, authentication is the opening."""

    builders: MappingProxyType[str, SubGoalBuilder] = SUBGOAL_BUILDERS

    def actors(self, state: RetailState) -> Sequence[str]:
        return sorted(state.users)

    def opening(self, state: RetailState, actor: str, rng: random.Random) -> Opening:
        return scenario.opening(state.users[actor], rng)

    def become(self, state: RetailState, actor: str, persona: Persona) -> tuple[StatePatch, ...]:
        return scenario.become(state, actor, persona)


def recipe(toolbox: Toolbox) -> SynthesisRecipe:
    """Everything the kit needs to synthesize retail tasks with this toolbox."""
    return SynthesisRecipe(
        domain=DOMAIN_NAME,
        vocabulary=VOCABULARY,
        space=RetailTaskSpace(),
        toolbox=toolbox,
        instructions=lambda plan, state, persona: scenario.instructions(plan, persona, state),
        finish_scenario=scenario.finish_scenario,
    )


def synthesize_task(
    toolbox: Toolbox,
    initial_state: Callable[[InitialState], RetailState],
    persona: Persona,
    seed: int,
) -> Task:
    """A retail task for `persona` over the world generated from `seed`, or TaskRejected.

    The leading task type is uniform over types; users are tried in a seeded order and the first
    that supports the sampled number of sub-goals wins, else the one with the most feasible
    sub-goals (the intent's complexity then says what the task really has).
    """
    return synthesize(recipe(toolbox), initial_state, persona, seed)


__all__ = [
    "SUBGOAL_BUILDERS",
    "VOCABULARY",
    "SubGoal",
    "gold_final_hash",
    "recipe",
    "synthesize_task",
]
