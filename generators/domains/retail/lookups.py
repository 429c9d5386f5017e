"""Lookups and money rules shared by the retail tools; each raises an actionable ToolError.

Split from tools.py so the tools read as what they do (preconditions by name, then the change)
and each file keeps one job: this one finds things in the state and enforces the shared rules
(allowed statuses, item and variant checks, gift-card balances, rounding to cents).
"""

from __future__ import annotations

from trajforge.generators.domains.retail.data_model import (
    Address,
    Order,
    OrderItem,
    PaymentMethod,
    PaymentRecord,
    Product,
    RetailState,
    User,
    Variant,
)
from trajforge.generators.tooling import ToolError


def user(state: RetailState, user_id: str) -> User:
    user = state.users.get(user_id)
    if user is None:
        raise ToolError(f"user '{user_id}' not found")
    return user


def order(state: RetailState, order_id: str) -> Order:
    order = state.orders.get(order_id)
    if order is None:
        hint = " (order ids look like '#W1234567')" if not order_id.startswith("#") else ""
        raise ToolError(f"order '{order_id}' not found{hint}")
    return order


def product(state: RetailState, product_id: str) -> Product:
    product = state.products.get(product_id)
    if product is None:
        raise ToolError(f"product '{product_id}' not found")
    return product


def require_status(order: Order, *allowed: str) -> None:
    if order.status not in allowed:
        raise ToolError(
            f"order {order.order_id} is '{order.status}'; this action needs it to be "
            + " or ".join(f"'{s}'" for s in allowed)
        )


def payment_method(state: RetailState, order: Order, payment_method_id: str) -> PaymentMethod:
    pm = state.users[order.user_id].payment_methods.get(payment_method_id)
    if pm is None:
        raise ToolError(
            f"payment method '{payment_method_id}' does not belong to the user of order "
            f"{order.order_id}; use one of the user's payment methods"
        )
    return pm


def order_items(order: Order, item_ids: list[str]) -> list[OrderItem]:
    """The order lines named by `item_ids` (each id at most as often as it is in the order)."""
    if not item_ids:
        raise ToolError("item_ids is empty; name at least one item of the order")
    remaining = [i.item_id for i in order.items]
    lines = []
    for item_id in item_ids:
        if item_id not in remaining:
            raise ToolError(f"item '{item_id}' is not in order {order.order_id} (or listed twice)")
        remaining.remove(item_id)
        lines.append(next(i for i in order.items if i.item_id == item_id))
    return lines


def replacement_variants(
    state: RetailState, lines: list[OrderItem], new_item_ids: list[str]
) -> list[Variant]:
    """Check each new item is another available variant of the same product as the old one."""
    if len(new_item_ids) != len(lines):
        raise ToolError("item_ids and new_item_ids must have the same length (one new per old)")
    variants = []
    for line, new_id in zip(lines, new_item_ids, strict=True):
        if new_id == line.item_id:
            raise ToolError(f"new item '{new_id}' is the same as the old item")
        variant = product(state, line.product_id).variants.get(new_id)
        if variant is None:
            raise ToolError(
                f"new item '{new_id}' is not a variant of product {line.product_id} "
                f"({line.name}); items can only be swapped for the same product"
            )
        if not variant.available:
            raise ToolError(f"new item '{new_id}' is not available")
        variants.append(variant)
    return variants


def cents(value: float) -> float:
    return round(value + 0.0, 2)


def require_gift_card_balance(pm: PaymentMethod, amount: float) -> None:
    if pm.source == "gift_card" and amount > 0 and (pm.balance or 0.0) < amount:
        raise ToolError(
            f"gift card {pm.id} has balance {pm.balance:.2f}, less than the {amount:.2f} needed"
        )


def charge(pm: PaymentMethod, order: Order, amount: float) -> None:
    """Record a payment (amount > 0) or refund (amount < 0); gift cards move at once."""
    amount = cents(amount)
    if amount == 0:
        return
    kind = "payment" if amount > 0 else "refund"
    order.payment_history.append(
        PaymentRecord(transaction_type=kind, amount=abs(amount), payment_method_id=pm.id)
    )
    if pm.source == "gift_card":
        pm.balance = cents((pm.balance or 0.0) - amount)


def address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> Address:
    return Address(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
