"""Retail sub-goal builders: one per task type, each grounded in what the state holds.

A builder picks something the user really has (a pending order, a delivered one, a product in
stock), writes the gold actions that achieve the wish (the reads an agent needs, then the write)
and what the user knows, must not invent, and should be told. The kit's planner calls them by
user id (`SUBGOAL_BUILDERS`) and replays each on a working copy.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from types import MappingProxyType

from trajforge.generators.domain_kit import SubGoal, SubGoalBuilder, act
from trajforge.generators.domains.retail.data_model import (
    Order,
    OrderItem,
    RetailState,
    User,
    random_address,
)
from trajforge.generators.domains.retail.describe import (
    address_arguments,
    address_text,
    affordable,
    alternatives,
    item,
    money,
    options,
    payment,
    user_orders,
)

UserBuilder = Callable[[RetailState, User, random.Random, frozenset[str]], "SubGoal | None"]


def _cancel(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = user_orders(state, user, claimed, "pending")
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
            act("get_order_details", order_id=order.order_id),
            act("cancel_pending_order", order_id=order.order_id, reason=reason),
        ),
        request=f"Cancel order {order.order_id} because {why}. Ask how much will be refunded.",
        reason="cancel an order",
        known_info={
            f"order to cancel ({order.order_id})": order.order_id,
            f"reason for cancelling {order.order_id}": reason,
        },
        unknown_info=(f"the refund amount for order {order.order_id}",),
        expected_outputs=(money(net),),
    )


def _swappable(state: RetailState, order: Order) -> list[OrderItem]:
    """The lines of `order` that have another available variant to be swapped for."""
    return [line for line in order.items if alternatives(state, line)]


def _swap_plan(
    state: RetailState, swappable: list[OrderItem], rng: random.Random
) -> tuple[list[OrderItem], list[str]]:
    """Pick 1-2 of the `swappable` lines and a replacement variant for each."""
    lines = rng.sample(swappable, min(len(swappable), rng.choice((1, 1, 2))))
    return lines, [rng.choice(alternatives(state, line)) for line in lines]


def _swap_terms(
    state: RetailState, lines: list[OrderItem], new_ids: list[str]
) -> tuple[float, str]:
    """The price difference of swapping `lines` for `new_ids`, and the wish in words."""
    new_variants = [
        state.products[ln.product_id].variants[n] for ln, n in zip(lines, new_ids, strict=True)
    ]
    difference = round(sum(v.price for v in new_variants) - sum(ln.price for ln in lines), 2)
    wishes = "; ".join(
        f"the {item(ln)} to the {options(v.options)} version"
        for ln, v in zip(lines, new_variants, strict=True)
    )
    return difference, wishes


def _swap_goal(
    state: RetailState,
    user: User,
    rng: random.Random,
    claimed: frozenset[str],
    status: str,
) -> SubGoal | None:
    """Shared by modify_items (pending) and exchange_items (delivered): same shape of request."""
    swappable = {
        o.order_id: lines
        for o in user_orders(state, user, claimed, status)
        if not o.items_modified and (lines := _swappable(state, o))
    }  # each order's swappable lines found once, not once to filter and again to draw
    if not swappable:
        return None
    order = rng.choice([state.orders[o] for o in swappable])
    lines, new_ids = _swap_plan(state, swappable[order.order_id], rng)
    difference, wishes = _swap_terms(state, lines, new_ids)
    methods = affordable(user, difference)
    if not methods:
        return None
    pm = rng.choice(methods)
    modify = status == "pending"
    tool = "modify_pending_order_items" if modify else "exchange_delivered_order_items"
    reads = [act("get_order_details", order_id=order.order_id)] + [
        act("get_product_details", product_id=pid)
        for pid in dict.fromkeys(ln.product_id for ln in lines)
    ]
    write = act(
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
            f"In order {order.order_id}, {verb} {wishes}. Use your {payment(pm)} for any price "
            "difference, and ask what the price difference is."
        ),
        reason="change items in an order" if modify else "exchange items you received",
        known_info={
            f"order to {verb} items in ({order.order_id})": order.order_id,
            f"items to {verb} in {order.order_id}": wishes,
            f"payment method for the price difference of {order.order_id}": payment(pm),
        },
        unknown_info=(f"the price difference for order {order.order_id}",),
        expected_outputs=(money(difference),) if difference else (),
    )


def _modify_items(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    return _swap_goal(state, user, rng, claimed, "pending")


def _exchange(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    return _swap_goal(state, user, rng, claimed, "delivered")


def _modify_address(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = user_orders(state, user, claimed, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    new = random_address(rng)
    return SubGoal(
        task_type="modify_address",
        claim=order.order_id,
        actions=(
            act("get_order_details", order_id=order.order_id),
            act(
                "modify_pending_order_address",
                order_id=order.order_id,
                **address_arguments(new),
            ),
        ),
        request=f"Have order {order.order_id} shipped to {address_text(new)} instead.",
        reason="change the shipping address of an order",
        known_info={
            f"order to reroute ({order.order_id})": order.order_id,
            f"new shipping address for {order.order_id}": address_text(new),
        },
    )


def _modify_payment(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    candidates = []
    for order in user_orders(state, user, claimed, "pending"):
        if len(order.payment_history) != 1:
            continue
        current = order.payment_history[0]
        others = [
            pm for pm in affordable(user, current.amount) if pm.id != current.payment_method_id
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
            act("get_order_details", order_id=order.order_id),
            act("modify_pending_order_payment", order_id=order.order_id, payment_method_id=pm.id),
        ),
        request=f"Pay for order {order.order_id} with your {payment(pm)} instead.",
        reason="pay for an order differently",
        known_info={
            f"order to pay differently ({order.order_id})": order.order_id,
            f"new payment method for {order.order_id}": payment(pm),
        },
    )


def _return(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = user_orders(state, user, claimed, "delivered")
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
    items = "; ".join(item(ln) for ln in lines)
    return SubGoal(
        task_type="return_items",
        claim=order.order_id,
        actions=(
            act("get_order_details", order_id=order.order_id),
            act(
                "return_delivered_order_items",
                order_id=order.order_id,
                item_ids=sorted(ln.item_id for ln in lines),
                payment_method_id=pm.id,
            ),
        ),
        request=(
            f"Return these items from order {order.order_id}: {items}. Get the refund on your "
            f"{payment(pm)}, and ask how much the refund is."
        ),
        reason="return items you received",
        known_info={
            f"order to return items from ({order.order_id})": order.order_id,
            f"items to return from {order.order_id}": items,
            f"refund method for {order.order_id}": payment(pm),
        },
        unknown_info=(f"the refund amount for order {order.order_id}",),
        expected_outputs=(money(refund),),
    )


def _order_status(state: RetailState, user: User, rng: random.Random, claimed: frozenset[str]):
    orders = user_orders(state, user, claimed)
    if not orders:
        return None
    order = rng.choice(orders)
    tracking = [f.tracking_id for f in order.fulfillments]
    ask = "its tracking number" if tracking else "when it will ship"
    return SubGoal(
        task_type="order_status",
        claim=order.order_id,
        actions=(act("get_order_details", order_id=order.order_id),),
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
    wanted = f"{product.name} ({options(variant.options)})"
    return SubGoal(
        task_type="product_info",
        claim=f"product:{product.product_id}",
        actions=(
            act("list_all_product_types"),
            act("get_product_details", product_id=product.product_id),
        ),
        request=f"Ask whether the {wanted} is in stock and how much it costs.",
        reason="ask about a product",
        known_info={f"product to ask about ({product.name})": wanted},
        unknown_info=(f"the price of the {wanted}",),
        expected_outputs=(money(variant.price),),
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
        actions=(act("modify_user_address", user_id=user.user_id, **address_arguments(new)),),
        request=f"Update the default address on your account to {address_text(new)}.",
        reason="update the account's address",
        known_info={"new default address": address_text(new)},
    )


#: Task type -> sub-goal builder over a `User`. The one place a new task type is wired in.
USER_BUILDERS: MappingProxyType[str, UserBuilder] = MappingProxyType(
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


def _by_user_id(build: UserBuilder) -> SubGoalBuilder:
    """The kit calls builders with an actor id; retail builders read that user's record."""

    def by_id(state: RetailState, user_id: str, rng: random.Random, claimed: frozenset[str]):
        return build(state, state.users[user_id], rng, claimed)

    return by_id


#: The kit's table: task type -> builder by user id (same order as USER_BUILDERS).
SUBGOAL_BUILDERS: MappingProxyType[str, SubGoalBuilder] = MappingProxyType(
    {task_type: _by_user_id(build) for task_type, build in USER_BUILDERS.items()}
)
