"""How a retail task reads to the simulated user: who they are, how they authenticate, what
they ask, and (for low-recall personas) orders remembered by content instead of by id and
ordered items by their kind and one option instead of every option."""

from __future__ import annotations

import random
from dataclasses import replace
from types import MappingProxyType

from trajforge.generators.domain_kit import DISCLOSURE_RULES, Opening, Plan, act, numbered_requests
from trajforge.generators.domains.retail.data_model import RetailState, User
from trajforge.generators.domains.retail.describe import item
from trajforge.schemas import Persona, StatePatch, UserScenario


def become(state: RetailState, user_id: str, persona: Persona) -> tuple[StatePatch, ...]:
    """The account of `user_id` renamed to the persona, with an email in that name (numbered
    past any address another user holds), so the customer who speaks is the persona."""
    first, _, last = persona.name.partition(" ")
    taken = {u.email for uid, u in state.users.items() if uid != user_id}
    number = int(
        "".join(ch for ch in state.users[user_id].email.split("@")[0] if ch.isdigit()) or 1
    )
    email = f"{first.lower()}.{last.lower().replace(' ', '')}{number}@example.com"
    while email in taken:
        number += 1
        email = f"{first.lower()}.{last.lower().replace(' ', '')}{number}@example.com"
    return (
        StatePatch(path=f"users.{user_id}.name", value={"first_name": first, "last_name": last}),
        StatePatch(path=f"users.{user_id}.email", value=email),
    )


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
    """Order id -> a product of it that is in no other order of the user (its description).

    Only unambiguous descriptions are returned: the agent must be able to find the order by
    reading the user's orders, and the user must not be able to mean two of them.
    """
    products = {o: {i.name for i in state.orders[o].items} for o in user.orders}
    nicknames = {}
    for order_id, names in sorted(products.items()):
        others = set().union(*(n for o, n in products.items() if o != order_id))
        unique = sorted(names - others)
        if unique:
            nicknames[order_id] = unique[0]
    return nicknames


def _without_order_ids(scenario: UserScenario, nicknames: dict[str, str]) -> UserScenario:
    """The scenario of a user who remembers orders by what is in them (the agent looks ids up):
    texts say "your order with the X", a known-info value is "the one with the X"."""

    def rename(text: str, short: bool = False) -> str:
        for order_id, product in nicknames.items():
            said = f"the one with the {product}" if short else f"your order with the {product}"
            text = text.replace(f"order {order_id}", said).replace(order_id, said)
        return text

    return UserScenario(
        reason_for_contact=rename(scenario.reason_for_contact),
        known_info={rename(k): rename(v, short=True) for k, v in scenario.known_info.items()},
        unknown_info=tuple(rename(u) for u in scenario.unknown_info),
        instructions=rename(scenario.instructions),
    )


def _with_candidate_lookups(plan: Plan, state: RetailState, described: set[str]) -> Plan:
    """The plan with the search a real agent makes for an order the user only describes: open
    the user's orders in the order their profile lists them, until the described one (whose
    own look-up is already its sub-goal's first action). Orders already opened are skipped."""
    opened = {a.arguments.get("order_id") for a in plan.opening.actions}
    goals = []
    for goal in plan.goals:
        lookups = []
        if goal.claim in described:
            for order_id in state.users[plan.actor].orders:
                if order_id == goal.claim:
                    break
                if order_id not in opened:
                    lookups.append(act("get_order_details", order_id=order_id))
                    opened.add(order_id)
        opened.update(a.arguments.get("order_id") for a in goal.actions)
        goals.append(replace(goal, actions=(*lookups, *goal.actions)))
    return Plan(plan.actor, plan.opening, tuple(goals))


def maybe_forget_order_ids(
    scenario: UserScenario, plan: Plan, state: RetailState, persona: Persona, rng: random.Random
) -> tuple[UserScenario, Plan]:
    """Low-recall personas forget order ids when every order in the task has a nickname; the
    gold plan then searches the user's orders for the described ones (no gold leak)."""
    chance = FORGETS_ORDER_IDS.get(persona.traits.recall_accuracy, 0.0)
    if rng.random() >= chance:
        return scenario, plan
    nicknames = _order_nicknames(state, state.users[plan.actor])
    mentioned = {g.claim for g in plan.goals if g.claim in state.orders}
    if not mentioned or not mentioned <= set(nicknames):
        return scenario, plan
    renamed = _without_order_ids(scenario, {o: nicknames[o] for o in sorted(mentioned)})
    return renamed, _with_candidate_lookups(plan, state, mentioned)


#: Chance that a user with this recall names an ordered item by its kind and one option.
FORGETS_ITEM_OPTIONS = MappingProxyType({"very_low": 1.0, "low": 0.5})


def _vague_items(plan: Plan, state: RetailState, rng: random.Random) -> dict[str, str]:
    """Exact item description -> the product and one of its options, for each line of the
    task's orders whose product appears once in its order (so the agent, reading that order,
    can tell which line the user means)."""
    vague = {}
    for order_id in sorted({g.claim for g in plan.goals if g.claim in state.orders}):
        lines = state.orders[order_id].items
        for line in lines:
            if sum(ln.name == line.name for ln in lines) == 1 and len(line.options) > 1:
                key = rng.choice(sorted(line.options))
                vague[item(line)] = f"{line.name} ({key}: {line.options[key]})"
    return vague


def _reworded(scenario: UserScenario, words: dict[str, str]) -> UserScenario:
    def say(text: str) -> str:
        for exact, said in words.items():
            text = text.replace(exact, said)
        return text

    return UserScenario(
        reason_for_contact=say(scenario.reason_for_contact),
        known_info={k: say(v) for k, v in scenario.known_info.items()},
        unknown_info=tuple(say(u) for u in scenario.unknown_info),
        instructions=say(scenario.instructions),
    )


def finish_scenario(
    scenario: UserScenario, plan: Plan, state: RetailState, persona: Persona, rng: random.Random
) -> tuple[UserScenario, Plan]:
    """A low-recall persona's imprecise memory: orders by content (`maybe_forget_order_ids`),
    then ordered items by kind and one option. The gold plan already opens each order the
    item is in, so the agent resolves the item from what it reads; the gold actions, and so
    task verification and the outcome check, are unchanged."""
    scenario, plan = maybe_forget_order_ids(scenario, plan, state, persona, rng)
    if rng.random() >= FORGETS_ITEM_OPTIONS.get(persona.traits.recall_accuracy, 0.0):
        return scenario, plan
    return _reworded(scenario, _vague_items(plan, state, rng)), plan
