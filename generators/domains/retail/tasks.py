"""Retail task synthesis over a real seeded state: sub-goals, gold plan, what the user knows.

A task is one user of the generated world with 1-3 sub-goals (cancel a pending order, return
items of a delivered one, ask for an order's status, ...). Each sub-goal is built from what the
state actually holds, then executed on a working copy so later sub-goals see earlier effects
(a gift card spent by one is not spent again by the next). The gold plan is the authentication
lookup, the reads an agent needs, and the writes; the gold final hash comes from replaying that
plan through `Toolbox.execute` on a fresh state, exactly as the outcome check will.

The user knows what a real customer knows (name, email or zip, order ids, items by description,
payment methods by description), never internal ids the agent must look up. Users with poor
recall (per the persona) may remember an order only by what is in it, so the agent must find it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trajforge.generators.domains.retail.data_model import (
    Address,
    Order,
    OrderItem,
    PaymentMethod,
    RetailState,
    User,
    random_address,
)
from trajforge.generators.tooling import TaskRejected, Toolbox, state_hash
from trajforge.schemas import (
    GoldAction,
    InitialState,
    IntentCoordinates,
    Persona,
    Task,
    TaskType,
    ToolCall,
    UserScenario,
    derive_seed,
)

DOMAIN_NAME = "retail"
COMPLEXITIES = (1, 2, 3)


@dataclass(frozen=True)
class SubGoal:
    """One thing the user wants, grounded in the state, with the actions that achieve it."""

    task_type: TaskType
    claim: str  # what it touches (an order id, the user's address): one sub-goal per thing
    actions: tuple[GoldAction, ...]
    request: str  # the instruction line for the simulated user
    reason: str  # a phrase for reason_for_contact
    known_info: dict[str, str] = field(default_factory=dict)
    unknown_info: tuple[str, ...] = ()
    expected_outputs: tuple[str, ...] = ()


Builder = Callable[[RetailState, User, random.Random, frozenset[str]], "SubGoal | None"]


# ---------------------------------------------------------------------------------------------
# Descriptions a customer would use


def _act(name: str, **arguments: Any) -> GoldAction:
    return GoldAction(name=name, arguments=arguments)


def _money(amount: float) -> str:
    return f"{abs(amount):.2f}"


def _options(options: dict[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in options.items())


def _item(line: OrderItem) -> str:
    return f"{line.name} ({_options(line.options)})"


def _payment(pm: PaymentMethod) -> str:
    if pm.source == "credit_card":
        return f"{pm.brand} credit card ending in {pm.last_four}"
    return "gift card" if pm.source == "gift_card" else "PayPal account"


def _address_text(a: Address) -> str:
    street = f"{a.address1}, {a.address2}" if a.address2 else a.address1
    return f"{street}, {a.city}, {a.state} {a.zip}, {a.country}"


def _address_arguments(a: Address) -> dict[str, str]:
    return dict(
        address1=a.address1,
        address2=a.address2,
        city=a.city,
        state_code=a.state,
        country=a.country,
        zip=a.zip,
    )


def _user_orders(state: RetailState, user: User, claimed: frozenset[str], *status: str):
    return [
        state.orders[o]
        for o in sorted(user.orders)
        if o not in claimed and (not status or state.orders[o].status in status)
    ]


def _alternatives(state: RetailState, line: OrderItem) -> list[str]:
    """Other available variants of the line's product (what it could be swapped for)."""
    variants = state.products[line.product_id].variants
    return [i for i, v in sorted(variants.items()) if v.available and i != line.item_id]


def _affordable(user: User, amount: float, allowed: Sequence[str] | None = None):
    """Payment methods that can pay `amount` (gift cards need the balance)."""
    return [
        pm
        for pm_id, pm in sorted(user.payment_methods.items())
        if (allowed is None or pm_id in allowed)
        and (pm.source != "gift_card" or amount <= 0 or (pm.balance or 0.0) >= amount)
    ]


# ---------------------------------------------------------------------------------------------
# Sub-goal builders (one per task type)


def _cancel(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = _user_orders(state, user, claimed, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    reason = rng.choice(("no longer needed", "ordered by mistake"))
    net = sum(
        p.amount if p.transaction_type == "payment" else -p.amount for p in order.payment_history
    )
    why = "you no longer need it" if reason == "no longer needed" else "you ordered it by mistake"
    return SubGoal(
        task_type="cancel_order",
        claim=order.order_id,
        actions=(
            _act("get_order_details", order_id=order.order_id),
            _act("cancel_pending_order", order_id=order.order_id, reason=reason),
        ),
        request=f"Cancel order {order.order_id} because {why}. Ask how much will be refunded.",
        reason="cancel an order",
        known_info={
            f"order to cancel ({order.order_id})": order.order_id,
            f"reason for cancelling {order.order_id}": reason,
        },
        unknown_info=(f"the refund amount for order {order.order_id}",),
        expected_outputs=(_money(net),),
    )


def _swap_plan(state: RetailState, order: Order, rng: random.Random):
    """Pick 1-2 lines with alternatives and a replacement variant for each (or None)."""
    swappable = [line for line in order.items if _alternatives(state, line)]
    if not swappable:
        return None
    lines = rng.sample(swappable, min(len(swappable), rng.choice((1, 1, 2))))
    new_ids = [rng.choice(_alternatives(state, line)) for line in lines]
    new_variants = [
        state.products[ln.product_id].variants[n] for ln, n in zip(lines, new_ids, strict=True)
    ]
    difference = round(sum(v.price for v in new_variants) - sum(ln.price for ln in lines), 2)
    wishes = "; ".join(
        f"the {_item(ln)} to the {_options(v.options)} version"
        for ln, v in zip(lines, new_variants, strict=True)
    )
    return lines, new_ids, difference, wishes


def _swap_goal(
    state: RetailState,
    user: User,
    rng: random.Random,
    claimed: frozenset[str],
    status: str,
) -> SubGoal | None:
    """Shared by modify_items (pending) and exchange_items (delivered): same shape of request."""
    orders = [
        o
        for o in _user_orders(state, user, claimed, status)
        if not o.items_modified and any(_alternatives(state, ln) for ln in o.items)
    ]
    if not orders:
        return None
    order = rng.choice(orders)
    lines, new_ids, difference, wishes = _swap_plan(state, order, rng)
    methods = _affordable(user, difference)
    if not methods:
        return None
    pm = rng.choice(methods)
    modify = status == "pending"
    tool = "modify_pending_order_items" if modify else "exchange_delivered_order_items"
    reads = [_act("get_order_details", order_id=order.order_id)] + [
        _act("get_product_details", product_id=pid)
        for pid in dict.fromkeys(ln.product_id for ln in lines)
    ]
    write = _act(
        tool,
        order_id=order.order_id,
        item_ids=[ln.item_id for ln in lines],
        new_item_ids=new_ids,
        payment_method_id=pm.id,
    )
    verb = "change" if modify else "exchange"
    return SubGoal(
        task_type="modify_items" if modify else "exchange_items",
        claim=order.order_id,
        actions=(*reads, write),
        request=(
            f"In order {order.order_id}, {verb} {wishes}. Use your {_payment(pm)} for any price "
            "difference, and ask what the price difference is."
        ),
        reason="change items in an order" if modify else "exchange items you received",
        known_info={
            f"order to {verb} items in ({order.order_id})": order.order_id,
            f"items to {verb} in {order.order_id}": wishes,
            f"payment method for the price difference of {order.order_id}": _payment(pm),
        },
        unknown_info=(f"the price difference for order {order.order_id}",),
        expected_outputs=(_money(difference),) if difference else (),
    )


def _modify_items(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    return _swap_goal(state, user, rng, claimed, "pending")


def _exchange(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    return _swap_goal(state, user, rng, claimed, "delivered")


def _modify_address(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = _user_orders(state, user, claimed, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    new = random_address(rng)
    return SubGoal(
        task_type="modify_address",
        claim=order.order_id,
        actions=(
            _act("get_order_details", order_id=order.order_id),
            _act(
                "modify_pending_order_address",
                order_id=order.order_id,
                **_address_arguments(new),
            ),
        ),
        request=f"Have order {order.order_id} shipped to {_address_text(new)} instead.",
        reason="change the shipping address of an order",
        known_info={
            f"order to reroute ({order.order_id})": order.order_id,
            f"new shipping address for {order.order_id}": _address_text(new),
        },
    )


def _modify_payment(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    candidates = []
    for order in _user_orders(state, user, claimed, "pending"):
        if len(order.payment_history) != 1:
            continue
        current = order.payment_history[0]
        others = [
            pm for pm in _affordable(user, current.amount) if pm.id != current.payment_method_id
        ]
        if others:
            candidates.append((order, others))
    if not candidates:
        return None
    order, others = rng.choice(candidates)
    pm = rng.choice(others)
    return SubGoal(
        task_type="modify_payment",
        claim=order.order_id,
        actions=(
            _act("get_order_details", order_id=order.order_id),
            _act("modify_pending_order_payment", order_id=order.order_id, payment_method_id=pm.id),
        ),
        request=f"Pay for order {order.order_id} with your {_payment(pm)} instead.",
        reason="pay for an order differently",
        known_info={
            f"order to pay differently ({order.order_id})": order.order_id,
            f"new payment method for {order.order_id}": _payment(pm),
        },
    )


def _return(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = _user_orders(state, user, claimed, "delivered")
    if not orders:
        return None
    order = rng.choice(orders)
    lines = rng.sample(order.items, rng.randint(1, len(order.items)))
    original = {p.payment_method_id for p in order.payment_history}
    targets = [
        pm for pm in user.payment_methods.values() if pm.id in original or pm.source == "gift_card"
    ]
    pm = rng.choice(sorted(targets, key=lambda p: p.id))
    refund = round(sum(ln.price for ln in lines), 2)
    items = "; ".join(_item(ln) for ln in lines)
    return SubGoal(
        task_type="return_items",
        claim=order.order_id,
        actions=(
            _act("get_order_details", order_id=order.order_id),
            _act(
                "return_delivered_order_items",
                order_id=order.order_id,
                item_ids=sorted(ln.item_id for ln in lines),
                payment_method_id=pm.id,
            ),
        ),
        request=(
            f"Return these items from order {order.order_id}: {items}. Get the refund on your "
            f"{_payment(pm)}, and ask how much the refund is."
        ),
        reason="return items you received",
        known_info={
            f"order to return items from ({order.order_id})": order.order_id,
            f"items to return from {order.order_id}": items,
            f"refund to for {order.order_id}": _payment(pm),
        },
        unknown_info=(f"the refund amount for order {order.order_id}",),
        expected_outputs=(_money(refund),),
    )


def _order_status(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = _user_orders(state, user, claimed)
    if not orders:
        return None
    order = rng.choice(orders)
    tracking = [f.tracking_id for f in order.fulfillments]
    ask = "its tracking number" if tracking else "when it will ship"
    return SubGoal(
        task_type="order_status",
        claim=order.order_id,
        actions=(_act("get_order_details", order_id=order.order_id),),
        request=f"Ask what the current state of order {order.order_id} is, and {ask}.",
        reason="check on an order",
        known_info={f"order to ask about ({order.order_id})": order.order_id},
        unknown_info=(f"the status of order {order.order_id}",)
        + ((f"the tracking number of order {order.order_id}",) if tracking else ()),
        expected_outputs=(order.status, *tracking),
    )


def _product_info(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    choices = [
        (p, v)
        for p in sorted(state.products.values(), key=lambda p: p.product_id)
        if f"product:{p.product_id}" not in claimed
        for v in sorted(p.variants.values(), key=lambda v: v.item_id)
        if v.available
    ]
    if not choices:
        return None
    product, variant = rng.choice(choices)
    wanted = f"{product.name} ({_options(variant.options)})"
    return SubGoal(
        task_type="product_info",
        claim=f"product:{product.product_id}",
        actions=(
            _act("list_all_product_types"),
            _act("get_product_details", product_id=product.product_id),
        ),
        request=f"Ask whether the {wanted} is in stock and how much it costs.",
        reason="ask about a product",
        known_info={f"product asked about ({product.name})": wanted},
        unknown_info=(f"the price of the {wanted}",),
        expected_outputs=(_money(variant.price),),
    )


def _update_user_address(
    state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]
):
    if "user_address" in claimed:
        return None
    new = random_address(rng)
    return SubGoal(
        task_type="update_user_address",
        claim="user_address",
        actions=(_act("modify_user_address", user_id=user.user_id, **_address_arguments(new)),),
        request=f"Update the default address on your account to {_address_text(new)}.",
        reason="update the account's address",
        known_info={"new default address": _address_text(new)},
    )


#: Task type -> sub-goal builder. The one place a new task type is wired in.
SUBGOAL_BUILDERS: MappingProxyType[str, Builder] = MappingProxyType(
    {
        "cancel_order": _cancel,
        "modify_items": _modify_items,
        "modify_address": _modify_address,
        "modify_payment": _modify_payment,
        "return_items": _return,
        "exchange_items": _exchange,
        "order_status": _order_status,
        "product_info": _product_info,
        "update_user_address": _update_user_address,
    }
)


# ---------------------------------------------------------------------------------------------
# Planning and assembling a task


@dataclass(frozen=True)
class _Plan:
    user: User
    auth: tuple[GoldAction, ...]
    known_auth: dict[str, str]
    goals: tuple[SubGoal, ...]


def _auth(user: User, rng: random.Random) -> tuple[tuple[GoldAction, ...], dict[str, str]]:
    """How the user proves who they are: email, or name + zip (and the lookup that follows)."""
    full_name = f"{user.name.first_name} {user.name.last_name}"
    if rng.random() < 0.5:
        find = _act("find_user_id_by_email", email=user.email)
        known = {"name": full_name, "email": user.email}
    else:
        find = _act(
            "find_user_id_by_name_zip",
            first_name=user.name.first_name,
            last_name=user.name.last_name,
            zip=user.address.zip,
        )
        known = {"name": full_name, "zip code": user.address.zip}
    return (find, _act("get_user_details", user_id=user.user_id)), known


def _copy(state: RetailState) -> RetailState:
    """An independent copy; a JSON round trip is about 3x faster than a pydantic deep copy."""
    return RetailState.model_validate_json(state.model_dump_json())


def _run(toolbox: Toolbox, state: RetailState, actions: Sequence[GoldAction]) -> bool:
    """Execute actions in place; False at the first error (the caller discards the copy)."""
    for i, action in enumerate(actions):
        call = ToolCall(id=f"gold_{i}", name=action.name, arguments=action.arguments)
        if toolbox.execute(state, call).error is not None:
            return False
    return True


def _plan_user(
    toolbox: Toolbox,
    state: RetailState,
    user_id: str,
    types: Sequence[str],
    complexity: int,
    rng: random.Random,
) -> _Plan | None:
    """Up to `complexity` feasible sub-goals for one user, the first of type `types[0]`.

    Each sub-goal is executed on the working copy before the next is built, so later ones see
    earlier effects. None when the first type is infeasible for this user.
    """
    user = state.users[user_id]
    first = SUBGOAL_BUILDERS[types[0]](state, user, rng, frozenset())
    if first is None:  # decided on the untouched state: the auth reads change nothing
        return None
    work = _copy(state)
    auth, known_auth = _auth(user, rng)
    if not (_run(toolbox, work, auth) and _run(toolbox, work, first.actions)):
        return None
    goals: list[SubGoal] = [first]
    for task_type in types[1:]:
        if len(goals) == complexity:
            break
        claimed = frozenset(g.claim for g in goals)
        goal = SUBGOAL_BUILDERS[task_type](work, work.users[user_id], rng, claimed)
        # Each sub-goal has reads then one write; a failed write leaves `work` unchanged.
        if goal is not None and _run(toolbox, work, goal.actions):
            goals.append(goal)
    return _Plan(state.users[user_id], auth, known_auth, tuple(goals)) if goals else None


def _best_plan(
    toolbox: Toolbox, state: RetailState, complexity: int, rng: random.Random
) -> _Plan | None:
    """Pick the leading task type uniformly (so types are balanced), then a user who can do it.

    The first user reaching `complexity` sub-goals wins, else the one with the most. A leading
    type no user can do (no delivered orders at all, say) passes to the next type.
    """
    leading = list(SUBGOAL_BUILDERS)
    rng.shuffle(leading)
    user_ids = sorted(state.users)
    rng.shuffle(user_ids)
    for first in leading:
        rest = [t for t in SUBGOAL_BUILDERS if t != first]
        best: _Plan | None = None
        for user_id in user_ids:
            rng.shuffle(rest)
            plan = _plan_user(toolbox, state, user_id, [first, *rest], complexity, rng)
            if plan is not None and (best is None or len(plan.goals) > len(best.goals)):
                best = plan
            if best is not None and len(best.goals) == complexity:
                return best
        if best is not None:
            return best
    return None


def _instructions(plan: _Plan, persona: Persona) -> str:
    user = plan.user
    requests = "\n".join(f"{i}. {g.request}" for i, g in enumerate(plan.goals, 1))
    auth = "email address" if "email" in plan.known_auth else "name and zip code"
    return (
        f"You are {user.name.first_name} {user.name.last_name}, a customer contacting the online "
        f"store's support. Your manner: {persona.communication_style}\n"
        f"If the agent asks who you are, give your {auth}.\n"
        f"Your requests, in this order:\n{requests}\n"
        "Give information only when the agent needs it, and only what is in your known info; if "
        "asked for anything else, say you don't know - never invent ids, amounts or details. "
        "Confirm an action with 'yes' only if the details the agent lists match your request. "
        "When all your requests are handled, or the agent says they cannot be, end the "
        "conversation with ###STOP###."
    )


def _scenario(plan: _Plan, persona: Persona) -> UserScenario:
    known = dict(plan.known_auth)
    for goal in plan.goals:
        known.update(goal.known_info)
    reasons = [g.reason for g in plan.goals]
    reason = "You want to " + (", then ".join(reasons) if len(reasons) > 1 else reasons[0]) + "."
    return UserScenario(
        reason_for_contact=reason,
        known_info=known,
        unknown_info=tuple(u for g in plan.goals for u in g.unknown_info),
        instructions=_instructions(plan, persona),
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


def _maybe_forget_order_ids(
    scenario: UserScenario, plan: _Plan, state: RetailState, persona: Persona, rng: random.Random
) -> UserScenario:
    """Low-recall personas forget order ids when every order in the task has a nickname."""
    chance = FORGETS_ORDER_IDS.get(persona.traits.recall_accuracy, 0.0)
    if rng.random() >= chance:
        return scenario
    nicknames = _order_nicknames(state, plan.user)
    mentioned = {g.claim for g in plan.goals if g.claim in state.orders}
    if not mentioned or not mentioned <= set(nicknames):
        return scenario
    return _without_order_ids(scenario, {o: nicknames[o] for o in sorted(mentioned)})


def gold_final_hash(
    toolbox: Toolbox, initial: RetailState, actions: Sequence[GoldAction]
) -> str | None:
    """Hash after replaying the gold plan on a copy of `initial` (None if any action fails)."""
    state = _copy(initial)
    return state_hash(state) if _run(toolbox, state, actions) else None


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
    rng = random.Random(derive_seed(seed, persona.id, DOMAIN_NAME, "synthesize_task"))
    init = InitialState(seed=seed)
    state = initial_state(init)
    complexity = rng.choice(COMPLEXITIES)
    best = _best_plan(toolbox, state, complexity, rng)
    if best is None:
        raise TaskRejected("no_feasible_task", f"no user of world {seed} has a feasible sub-goal")
    actions = best.auth + tuple(a for g in best.goals for a in g.actions)
    final_hash = gold_final_hash(toolbox, state, actions)
    if final_hash is None:
        raise TaskRejected("gold_action_failed", f"gold plan failed on a fresh world {seed}")
    return Task.create(
        domain=DOMAIN_NAME,
        intent=IntentCoordinates(
            persona_id=persona.id,
            domain=DOMAIN_NAME,
            task_types=tuple(g.task_type for g in best.goals),
            complexity=len(best.goals),
        ),
        persona=persona,
        scenario=_maybe_forget_order_ids(_scenario(best, persona), best, state, persona, rng),
        initial_state=init,
        gold_actions=actions,
        expected_outputs=tuple(o for g in best.goals for o in g.expected_outputs),
        gold_final_hash=final_hash,
    )


__all__ = ["SUBGOAL_BUILDERS", "SubGoal", "gold_final_hash", "synthesize_task"]
