"""The retail plan search finds exactly the plans it found before its builders and search loop
were made cheaper: a digest of 600 searches (200 worlds, complexities 1-3, each plan's actor,
actions and every sub-goal field, and the RNG's next draw after the search, so the number of
draws is held too) stored from the code at c6e9579."""

from __future__ import annotations

import hashlib
import json
import random

from trajforge.generators.domain_kit import Plan, best_plan
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.domains.retail.tasks import RetailTaskSpace
from trajforge.schemas import InitialState

#: sha256 of `_searches(200)` as commit c6e9579 computed it.
PLANS_200 = "f70e0bed63e02e0c49e9d4b8336888b170d3f4f35261959ebd618dde834ea071"


def plan_text(plan: Plan | None) -> str:
    """Everything a plan says, as canonical JSON (None: no feasible task)."""
    if plan is None:
        return "none"
    goals = [
        [
            g.task_type,
            g.claim,
            [[a.name, a.arguments] for a in g.actions],
            g.request,
            g.reason,
            g.known_info,
            list(g.unknown_info),
            list(g.expected_outputs),
        ]
        for g in plan.goals
    ]
    opening = [[a.name, a.arguments] for a in plan.opening.actions]
    return json.dumps(
        {"actor": plan.actor, "opening": [opening, plan.opening.known_info], "goals": goals},
        sort_keys=True,
    )


def _searches(n_worlds: int) -> str:
    domain, space = RetailDomain(), RetailTaskSpace()
    digest = hashlib.sha256()
    for seed in range(n_worlds):
        state = domain.initial_state(InitialState(seed=seed))
        for complexity in (1, 2, 3):
            rng = random.Random(seed * 7 + complexity)
            plan = best_plan(space, domain.toolbox, state, complexity, rng)
            digest.update(plan_text(plan).encode())
            digest.update(repr(rng.random()).encode())
    return digest.hexdigest()


def test_plans_of_200_worlds_are_the_stored_ones() -> None:
    assert _searches(200) == PLANS_200


def test_the_digest_sees_a_changed_plan() -> None:
    """A different draw (another complexity's plan in place of one) changes the text."""
    domain, space = RetailDomain(), RetailTaskSpace()
    state = domain.initial_state(InitialState(seed=3))
    one = best_plan(space, domain.toolbox, state, 1, random.Random(1))
    three = best_plan(space, domain.toolbox, state, 3, random.Random(1))
    assert plan_text(one) != plan_text(three)
