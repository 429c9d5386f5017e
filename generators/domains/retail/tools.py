"""Retail tools: functions `fn(state, ...)` over `RetailState`, run only through `Toolbox.execute`.

Every result is computed from the state; nothing is invented. A violated precondition raises
`ToolError` with a message the agent can act on (what is wrong and, where it helps, what is
allowed), and the boundary turns it into an "Error: ..." observation and restores the state.
Money is rounded to cents at every step so replays hash identically.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Literal

from trajforge.generators.domain_kit.touches import entry, nothing
from trajforge.generators.domains.retail import lookups
from trajforge.generators.domains.retail.data_model import (
    RetailState,
)
from trajforge.generators.state_dumps import DumpPath
from trajforge.generators.tooling import ToolError, tool

CancelReason = Literal["no longer needed", "ordered by mistake"]


# ---------------------------------------------------------------------------------------------
# Read tools


@tool("read")
def find_user_id_by_email(state: RetailState, email: str) -> str:
    """Find a user id by email address. Use this to authenticate the user.

    Args:
        email: The user's email address, e.g. 'ann.lee7@example.com'.
    """
    wanted = email.strip().lower()
    for user in state.users.values():
        if user.email.lower() == wanted:
            return user.user_id
    raise ToolError(f"no user with email '{email}'")


@tool("read")
def find_user_id_by_name_zip(state: RetailState, first_name: str, last_name: str, zip: str) -> str:
    """Find a user id by first name, last name and zip code. Use this to authenticate the user.

    Args:
        first_name: The user's first name, e.g. 'Ann'.
        last_name: The user's last name, e.g. 'Lee'.
        zip: The zip code of the user's default address, e.g. '12345'.
    """
    for user in state.users.values():
        if (
            user.name.first_name.lower() == first_name.strip().lower()
            and user.name.last_name.lower() == last_name.strip().lower()
            and user.address.zip == zip.strip()
        ):
            return user.user_id
    raise ToolError(f"no user named {first_name} {last_name} with zip '{zip}'")


@tool("read")
def get_user_details(state: RetailState, user_id: str) -> dict[str, Any]:
    """Get a user's profile: name, email, default address, payment methods and order ids.

    Args:
        user_id: The user id, e.g. 'ann_lee_1234'.
    """
    return lookups.user(state, user_id).model_dump(mode="json")


@tool("read")
def get_order_details(state: RetailState, order_id: str) -> dict[str, Any]:
    """Get an order's status, items (with item ids and prices), address and payment history.

    Args:
        order_id: The order id, starting with '#', e.g. '#W1234567'.
    """
    return lookups.order(state, order_id).model_dump(mode="json")


@tool("read")
def get_product_details(state: RetailState, product_id: str) -> dict[str, Any]:
    """Get a product's variants: item id, options, price and availability of each.

    Args:
        product_id: The product id, e.g. '6086499569'. Differs from item ids.
    """
    return lookups.product(state, product_id).model_dump(mode="json")


@tool("read")
def list_all_product_types(state: RetailState) -> dict[str, str]:
    """List every product type sold, as a map from product name to product id."""
    return {p.name: p.product_id for p in sorted(state.products.values(), key=lambda p: p.name)}


_BINARY_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


#: Bounds on model-chosen input to `calculate`: money sums here are short and small; a
#: 400-digit number or a 10,000-deep parenthesis chain is an attack or a loop, not a refund.
MAX_EXPRESSION_CHARS = 200
MAX_CALCULATE_MAGNITUDE = 1e12


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
        return _BINARY_OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ToolError("expression may only contain numbers, + - * / and parentheses")


@tool("think")
def calculate(state: RetailState, expression: str) -> str:
    """Calculate the result of an arithmetic expression (e.g. a refund total), rounded to cents.

    Args:
        expression: Numbers, + - * / and parentheses only, e.g. '24.99 + 13.50'.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression too long (at most {MAX_EXPRESSION_CHARS} characters)")
    try:
        tree = ast.parse(expression, mode="eval")
        value = _evaluate(tree)
    except SyntaxError as err:
        raise ToolError(f"could not parse expression '{expression}'") from err
    except ZeroDivisionError as err:
        raise ToolError("division by zero") from err
    except (OverflowError, RecursionError) as err:
        raise ToolError("expression too large or too deeply nested") from err
    if not math.isfinite(value) or abs(value) > MAX_CALCULATE_MAGNITUDE:
        raise ToolError(f"result out of range (at most {MAX_CALCULATE_MAGNITUDE:.0e} in size)")
    return f"{lookups.cents(value):.2f}"


# ---------------------------------------------------------------------------------------------
# Write tools, each declaring the entries it may mutate (so a write re-dumps only those)

_ORDER = entry("orders", "order_id")
_USER = entry("users", "user_id")


def _order_and_payer(state: RetailState, arguments: dict[str, Any]) -> list[DumpPath]:
    """The order and its user: payments and refunds move the user's gift-card balances."""
    order = state.orders.get(arguments["order_id"])
    return [("orders", arguments["order_id"]), *([("users", order.user_id)] if order else [])]


@tool("write", touches=_order_and_payer)
def cancel_pending_order(state: RetailState, order_id: str, reason: CancelReason) -> dict[str, Any]:
    """Cancel a pending order and refund every payment to its original payment method.

    Args:
        order_id: The order id, e.g. '#W1234567'.
        reason: Why the user cancels: 'no longer needed' or 'ordered by mistake'.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "pending")
    methods = state.users[order.user_id].payment_methods
    net_paid: dict[str, float] = {}
    for record in order.payment_history:
        sign = 1 if record.transaction_type == "payment" else -1
        net_paid[record.payment_method_id] = net_paid.get(record.payment_method_id, 0.0) + (
            sign * record.amount
        )
    for pm_id, amount in net_paid.items():
        lookups.charge(methods[pm_id], order, -amount)
    order.status = "cancelled"
    order.cancel_reason = reason
    order.refund_amount = lookups.cents(sum(net_paid.values()))
    return order.model_dump(mode="json")


@tool("write", touches=_order_and_payer)
def modify_pending_order_items(
    state: RetailState,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """Swap items of a pending order for other variants of the same products (once per order).

    Args:
        order_id: The order id, e.g. '#W1234567'.
        item_ids: Item ids in the order to replace, e.g. ['1008292230'].
        new_item_ids: Replacement item ids, same product and position as item_ids.
        payment_method_id: Pays or receives the price difference, e.g. 'gift_card_0000000'.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "pending")
    if order.items_modified:
        raise ToolError(f"items of order {order_id} were already modified once; no more changes")
    lines = lookups.order_items(order, item_ids)
    variants = lookups.replacement_variants(state, lines, new_item_ids)
    pm = lookups.payment_method(state, order, payment_method_id)
    difference = lookups.cents(sum(v.price for v in variants) - sum(i.price for i in lines))
    lookups.require_gift_card_balance(pm, difference)
    for line, variant in zip(lines, variants, strict=True):
        line.item_id = variant.item_id
        line.options = dict(variant.options)
        line.price = variant.price
    lookups.charge(pm, order, difference)
    order.items_modified = True
    return order.model_dump(mode="json")


@tool("write", touches=_ORDER)
def modify_pending_order_address(
    state: RetailState,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state_code: str,
    country: str,
    zip: str,
) -> dict[str, Any]:
    """Change the shipping address of a pending order.

    Args:
        order_id: The order id, e.g. '#W1234567'.
        address1: Street line, e.g. '12 Maple St'.
        address2: Second line (apartment, suite), or '' if none.
        city: City, e.g. 'Fairhaven'.
        state_code: Two-letter state code, e.g. 'WA'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '12345'.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "pending")
    order.address = lookups.address(address1, address2, city, state_code, country, zip)
    return order.model_dump(mode="json")


@tool("write", touches=_order_and_payer)
def modify_pending_order_payment(
    state: RetailState, order_id: str, payment_method_id: str
) -> dict[str, Any]:
    """Pay a pending order with another of the user's payment methods; the old one is refunded.

    Args:
        order_id: The order id, e.g. '#W1234567'.
        payment_method_id: The new payment method id, e.g. 'paypal_1234567'.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "pending")
    payments = [p for p in order.payment_history if p.transaction_type == "payment"]
    if len(payments) != 1:
        raise ToolError(f"order {order_id} has several payments; its payment cannot be changed")
    old = payments[0]
    if old.payment_method_id == payment_method_id:
        raise ToolError(f"order {order_id} is already paid with {payment_method_id}")
    pm = lookups.payment_method(state, order, payment_method_id)
    lookups.require_gift_card_balance(pm, old.amount)
    methods = state.users[order.user_id].payment_methods
    lookups.charge(pm, order, old.amount)
    lookups.charge(methods[old.payment_method_id], order, -old.amount)
    return order.model_dump(mode="json")


@tool("write", touches=_USER)
def modify_user_address(
    state: RetailState,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state_code: str,
    country: str,
    zip: str,
) -> dict[str, Any]:
    """Change a user's default address (existing orders keep theirs).

    Args:
        user_id: The user id, e.g. 'ann_lee_1234'.
        address1: Street line, e.g. '12 Maple St'.
        address2: Second line (apartment, suite), or '' if none.
        city: City, e.g. 'Fairhaven'.
        state_code: Two-letter state code, e.g. 'WA'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '12345'.
    """
    user = lookups.user(state, user_id)
    user.address = lookups.address(address1, address2, city, state_code, country, zip)
    return user.model_dump(mode="json")


@tool("write", touches=_ORDER)
def return_delivered_order_items(
    state: RetailState, order_id: str, item_ids: list[str], payment_method_id: str
) -> dict[str, Any]:
    """Request a return of items of a delivered order; the refund is their total price.

    Args:
        order_id: The order id, e.g. '#W1234567'.
        item_ids: Item ids in the order to return, e.g. ['1008292230'].
        payment_method_id: Receives the refund: the original payment method or a gift card.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "delivered")
    lines = lookups.order_items(order, item_ids)
    pm = lookups.payment_method(state, order, payment_method_id)
    original = {p.payment_method_id for p in order.payment_history}
    if pm.source != "gift_card" and pm.id not in original:
        raise ToolError(
            "the refund must go to the original payment method "
            f"({', '.join(sorted(original))}) or a gift card of the user"
        )
    order.status = "return requested"
    order.return_items = sorted(item_ids)
    order.return_payment_method_id = pm.id
    order.refund_amount = lookups.cents(sum(i.price for i in lines))
    return order.model_dump(mode="json")


@tool("write", touches=_ORDER)
def exchange_delivered_order_items(
    state: RetailState,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """Request an exchange of delivered items for other variants of the same products.

    Args:
        order_id: The order id, e.g. '#W1234567'.
        item_ids: Item ids in the order to exchange, e.g. ['1008292230'].
        new_item_ids: Replacement item ids, same product and position as item_ids.
        payment_method_id: Pays or receives the price difference, e.g. 'credit_card_1234567'.
    """
    order = lookups.order(state, order_id)
    lookups.require_status(order, "delivered")
    lines = lookups.order_items(order, item_ids)
    variants = lookups.replacement_variants(state, lines, new_item_ids)
    pm = lookups.payment_method(state, order, payment_method_id)
    difference = lookups.cents(sum(v.price for v in variants) - sum(i.price for i in lines))
    lookups.require_gift_card_balance(pm, difference)
    order.status = "exchange requested"
    order.exchange_items = list(item_ids)
    order.exchange_new_items = list(new_item_ids)
    order.exchange_payment_method_id = pm.id
    order.exchange_price_difference = difference
    return order.model_dump(mode="json")


@tool("transfer", touches=nothing)
def transfer_to_human_agents(state: RetailState, summary: str) -> str:
    """Transfer the user to a human agent, only when the request is outside what you can do.

    Args:
        summary: A short summary of the user's issue for the human agent.
    """
    return "Transfer successful"


TOOLS = (
    find_user_id_by_email,
    find_user_id_by_name_zip,
    get_user_details,
    get_order_details,
    get_product_details,
    list_all_product_types,
    calculate,
    cancel_pending_order,
    modify_pending_order_items,
    modify_pending_order_address,
    modify_pending_order_payment,
    modify_user_address,
    return_delivered_order_items,
    exchange_delivered_order_items,
    transfer_to_human_agents,
)
