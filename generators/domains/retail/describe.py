"""How a retail customer describes things: amounts, items, payment methods, addresses.

The user knows what a real customer knows (order ids, items by description, payment methods by
description), never internal ids the agent must look up; these helpers write those descriptions
and the small state queries the sub-goal builders share.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajforge.generators.domains.retail.data_model import (
    Address,
    OrderItem,
    PaymentMethod,
    RetailState,
    User,
)


def money(amount: float) -> str:
    return f"{abs(amount):.2f}"


def options(options: dict[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in options.items())


def item(line: OrderItem) -> str:
    return f"{line.name} ({options(line.options)})"


def payment(pm: PaymentMethod) -> str:
    if pm.source == "credit_card":
        return f"{pm.brand} credit card ending in {pm.last_four}"
    return "gift card" if pm.source == "gift_card" else "PayPal account"


def address_text(a: Address) -> str:
    street = f"{a.address1}, {a.address2}" if a.address2 else a.address1
    return f"{street}, {a.city}, {a.state} {a.zip}, {a.country}"


def address_arguments(a: Address) -> dict[str, str]:
    return dict(
        address1=a.address1,
        address2=a.address2,
        city=a.city,
        state_code=a.state,
        country=a.country,
        zip=a.zip,
    )


def user_orders(state: RetailState, user: User, claimed: frozenset[str], *status: str):
    return [
        state.orders[o]
        for o in sorted(user.orders)
        if o not in claimed and (not status or state.orders[o].status in status)
    ]


def alternatives(state: RetailState, line: OrderItem) -> list[str]:
    """Other available variants of the line's product (what it could be swapped for)."""
    variants = state.products[line.product_id].variants
    return [i for i, v in sorted(variants.items()) if v.available and i != line.item_id]


def affordable(user: User, amount: float, allowed: Sequence[str] | None = None):
    """Payment methods that can pay `amount` (gift cards need the balance)."""
    return [
        pm
        for pm_id, pm in sorted(user.payment_methods.items())
        if (allowed is None or pm_id in allowed)
        and (pm.source != "gift_card" or amount <= 0 or (pm.balance or 0.0) >= amount)
    ]
