"""The retail world state: users, products with variants, orders. Generated from a seed.

Modelled on tau2-bench's retail database, but every person, product and order is fictional and
drawn from a seeded RNG, so a task only needs to store `(seed, patches)` and any stage can rebuild
the exact same state. The state is deliberately small (tens of users and orders) so that
generating and hashing it costs a few milliseconds: verification and outcome checks rebuild it
many times per task.
"""

from __future__ import annotations

import random
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from trajforge.generators.domains.retail.world import (
    N_ORDERS,
    N_PRODUCTS,
    N_USERS,
    address_data,
    generate_world,
)

OrderStatus = Literal[
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "return requested",
    "exchange requested",
]
#: The statuses as values, in declaration order: the one list the rules and claims read.
ORDER_STATUSES: tuple[str, ...] = get_args(OrderStatus)
PaymentSource = Literal["credit_card", "gift_card", "paypal"]


class _StateModel(BaseModel):
    """World-state models are mutable (tools change them) but still refuse unknown fields."""

    model_config = ConfigDict(extra="forbid")


class Address(_StateModel):
    address1: str
    address2: str
    city: str
    state: str
    country: str
    zip: str


class UserName(_StateModel):
    first_name: str
    last_name: str


class PaymentMethod(_StateModel):
    """A credit card (brand, last four), a gift card (balance) or a PayPal account."""

    id: str
    source: PaymentSource
    brand: str | None = None
    last_four: str | None = None
    balance: float | None = None


class User(_StateModel):
    user_id: str
    name: UserName
    email: str
    address: Address
    payment_methods: dict[str, PaymentMethod]
    orders: list[str] = Field(default_factory=list)


class Variant(_StateModel):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(_StateModel):
    product_id: str
    name: str
    variants: dict[str, Variant]


class OrderItem(_StateModel):
    item_id: str
    product_id: str
    name: str
    options: dict[str, str]
    price: float


class PaymentRecord(_StateModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Fulfillment(_StateModel):
    tracking_id: str
    item_ids: list[str]


class Order(_StateModel):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: OrderStatus
    payment_history: list[PaymentRecord]
    fulfillments: list[Fulfillment] = Field(default_factory=list)
    items_modified: bool = False  # pending items may be modified once (policy + tool check)
    cancel_reason: str | None = None
    return_items: list[str] = Field(default_factory=list)
    return_payment_method_id: str | None = None
    refund_amount: float | None = None
    exchange_items: list[str] = Field(default_factory=list)
    exchange_new_items: list[str] = Field(default_factory=list)
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None


class RetailState(_StateModel):
    users: dict[str, User]
    products: dict[str, Product]
    orders: dict[str, Order]


# ---------------------------------------------------------------------------------------------
# Generation (plain data in world.py; these validate it)


def random_address(rng: random.Random) -> Address:
    """A fictional street address (task synthesis's 'move to' requests)."""
    return Address.model_validate(address_data(rng))


def generate_state(
    seed: int, n_users: int = N_USERS, n_products: int = N_PRODUCTS, n_orders: int = N_ORDERS
) -> RetailState:
    """A fresh, fictional retail world; the same arguments always give the same state."""
    return RetailState.model_validate(generate_world(seed, n_users, n_products, n_orders))
