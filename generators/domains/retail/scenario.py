"""How a retail task reads to the simulated user: who they are, how they authenticate, what
they ask, and (for low-recall personas) orders remembered by content instead of by id."""

from __future__ import annotations

import random
from types import MappingProxyType

from trajforge.generators.domain_kit import DISCLOSURE_RULES, Opening, Plan, act, numbered_requests
from trajforge.generators.domains.retail.data_model import RetailState, User
from trajforge.schemas import Persona, UserScenario


def opening(user: User, rng: random.Random) -> Opening:
    """How the user proves who they are: email, or name + zip (and the lookup that follows)."""
    full_name = f"{user.name.first_name} {user.name.last_name}"
    if rng.random() < 0.5:
        find = act("find_user_id_by_email", email=user.email)
        known = {"name": full_name, "email": user.email}
    else:
        find = act(
            "find_user_id_by_name_zip",
            first_name=user.name.first_name,
            last_name=user.name.last_name,
            zip=user.address.zip,
        )
        known = {"name": full_name, "zip code": user.address.zip}
    return Opening((find, act("get_user_details", user_id=user.user_id)), known)


def instructions(plan: Plan, persona: Persona, state: RetailState) -> str:
    """The customer's brief: their name, how to authenticate, the requests, the rules."""
    user = state.users[plan.actor]
    auth = "email address" if "email" in plan.opening.known_info else "name and zip code"
    return (
        f"You are {user.name.first_name} {user.name.last_name}, a customer contacting the online "
        f"store's support. Your manner: {persona.communication_style}\n"
        f"If the agent asks who you are, give your {auth}.\n"
        f"Your requests, in this order:\n{numbered_requests(plan)}\n{DISCLOSURE_RULES}"
    )


#: Chance that a user with this recall remembers orders by content, not by id.
FORGETS_ORDER_IDS = MappingProxyType({"very_low": 1.0, "low": 0.5})


def _order_nicknames(state: RetailState, user: User) -> dict[str, str]:
    """Order id -> 'your order with the <product>' where that product is in no other order.

    Only unambiguous descriptions are returned: the agent must be able to find the order by
    reading the user's orders, and the user must not be able to mean two of them.
    """
    products = {o: {i.name for i in state.orders[o].items} for o in user.orders}
    nicknames = {}
    for order_id, names in sorted(products.items()):
        others = set().union(*(n for o, n in products.items() if o != order_id))
        unique = sorted(names - others)
        if unique:
            nicknames[order_id] = f"your order with the {unique[0]}"
    return nicknames


def _without_order_ids(scenario: UserScenario, nicknames: dict[str, str]) -> UserScenario:
    """The scenario of a user who remembers orders by what is in them (the agent looks ids up)."""

    def rename(text: str) -> str:
        for order_id, nickname in nicknames.items():
            text = text.replace(f"order {order_id}", nickname).replace(order_id, nickname)
        return text

    return UserScenario(
        reason_for_contact=rename(scenario.reason_for_contact),
        known_info={rename(k): rename(v) for k, v in scenario.known_info.items()},
        unknown_info=tuple(rename(u) for u in scenario.unknown_info),
        instructions=rename(scenario.instructions),
    )


def maybe_forget_order_ids(
    scenario: UserScenario, plan: Plan, state: RetailState, persona: Persona, rng: random.Random
) -> UserScenario:
    """Low-recall personas forget order ids when every order in the task has a nickname."""
    chance = FORGETS_ORDER_IDS.get(persona.traits.recall_accuracy, 0.0)
    if rng.random() >= chance:
        return scenario
    nicknames = _order_nicknames(state, state.users[plan.actor])
    mentioned = {g.claim for g in plan.goals if g.claim in state.orders}
    if not mentioned or not mentioned <= set(nicknames):
        return scenario
    return _without_order_ids(scenario, {o: nicknames[o] for o in sorted(mentioned)})
