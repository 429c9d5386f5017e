"""The retail world state: users, products with variants, orders. Generated from a seed.

Modelled on tau2-bench's retail database, but every person, product and order is fictional and
drawn from a seeded RNG, so a task only needs to store `(seed, patches)` and any stage can rebuild
the exact same state. The state is deliberately small (tens of users and orders) so that
generating and hashing it costs a few milliseconds: verification and outcome checks rebuild it
many times per task.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

OrderStatus = Literal[
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "return requested",
    "exchange requested",
]
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
# Generation

FIRST_NAMES = (
    "Ann", "Bo", "Cara", "Dev", "Elif", "Farid", "Greta", "Hugo", "Iris", "Jonas", "Kemi", "Luca",
    "Mina", "Nils", "Olu", "Priya", "Quinn", "Rosa", "Sami", "Tova", "Umar", "Vera", "Wen", "Xena",
    "Yusuf", "Zoe", "Arlo", "Bea", "Cyrus", "Dina",
)  # fmt: skip
LAST_NAMES = (
    "Lee", "Moreno", "Okafor", "Lindqvist", "Tanaka", "Novak", "Haddad", "Brennan", "Costa",
    "Ivanova", "Kaur", "Mensah", "Dubois", "Fischer", "Park", "Quispe", "Rossi", "Silva", "Wu",
    "Zamora",
)  # fmt: skip
STREETS = (
    "Maple", "Cedar", "Harbor", "Willow", "Quarry", "Juniper", "Lantern", "Orchard", "Birch",
    "Copper", "Meadow", "Falcon",
)  # fmt: skip
STREET_KINDS = ("St", "Ave", "Rd", "Ln", "Way", "Blvd")
CITIES = (
    ("Fairhaven", "WA"), ("Millbrook", "NY"), ("Riverton", "OR"), ("Ashford", "TX"),
    ("Stonebridge", "CO"), ("Brookvale", "GA"), ("Clearwater Bay", "CA"), ("Pinecrest", "MN"),
)  # fmt: skip
CARD_BRANDS = ("visa", "mastercard", "amex")

#: Product catalogue: name, base price, option dimensions. Variants are drawn from the product.
CATALOGUE: tuple[tuple[str, float, dict[str, tuple[str, ...]]], ...] = (
    ("T-Shirt", 24.0, {"color": ("red", "blue", "black", "white"), "size": ("S", "M", "L", "XL")}),
    ("Running Shoes", 95.0, {"color": ("grey", "black", "orange"), "size": ("8", "9", "10", "11")}),
    (
        "Water Bottle",
        22.0,
        {"capacity": ("500ml", "750ml", "1000ml"), "material": ("steel", "glass", "plastic")},
    ),
    ("Desk Lamp", 48.0, {"color": ("white", "black", "brass"), "power": ("USB", "AC", "battery")}),
    ("Backpack", 70.0, {"color": ("navy", "olive", "black"), "size": ("small", "medium", "large")}),
    ("Headphones", 130.0, {"type": ("over-ear", "on-ear", "in-ear"), "color": ("black", "white")}),
    (
        "Coffee Maker",
        110.0,
        {"capacity": ("4 cups", "8 cups", "12 cups"), "color": ("red", "black")},
    ),
    ("Yoga Mat", 35.0, {"thickness": ("4mm", "6mm", "8mm"), "color": ("green", "purple", "blue")}),
    (
        "Mechanical Keyboard",
        120.0,
        {"switch": ("linear", "tactile", "clicky"), "layout": ("full", "tenkeyless")},
    ),
    ("Wireless Mouse", 40.0, {"color": ("black", "white", "grey"), "grip": ("palm", "claw")}),
    ("Tea Kettle", 45.0, {"material": ("steel", "glass"), "capacity": ("1L", "1.5L", "2L")}),
    ("Sunglasses", 85.0, {"frame": ("black", "tortoise", "gold"), "lens": ("polarized", "tinted")}),
    ("Smart Watch", 220.0, {"color": ("black", "silver", "rose"), "band": ("leather", "silicone")}),
    ("Notebook", 12.0, {"paper": ("lined", "dotted", "blank"), "size": ("A5", "A4")}),
)

ORDER_STATUS_WEIGHTS: tuple[tuple[OrderStatus, float], ...] = (
    ("pending", 0.36),
    ("processed", 0.1),
    ("delivered", 0.36),
    ("cancelled", 0.08),
    ("return requested", 0.05),
    ("exchange requested", 0.05),
)


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(10 ** (n - 1), 10**n - 1))


def random_address(rng: random.Random) -> Address:
    """A fictional street address (also used by task synthesis for 'move to' requests)."""
    city, state = rng.choice(CITIES)
    return Address(
        address1=f"{rng.randint(10, 9999)} {rng.choice(STREETS)} {rng.choice(STREET_KINDS)}",
        address2=rng.choice(
            ("", "", f"Apt {rng.randint(1, 40)}", f"Suite {rng.randint(100, 900)}")
        ),
        city=city,
        state=state,
        country="USA",
        zip=_digits(rng, 5),
    )


def _payment_methods(rng: random.Random) -> dict[str, PaymentMethod]:
    """One to three distinct sources; credit card last-fours distinct within a user."""
    sources: list[PaymentSource] = ["credit_card", "gift_card", "paypal"]
    chosen = rng.sample(sources, rng.randint(1, 3))
    methods: dict[str, PaymentMethod] = {}
    for source in sorted(chosen):
        pm_id = f"{source}_{_digits(rng, 7)}"
        if source == "credit_card":
            pm = PaymentMethod(
                id=pm_id, source=source, brand=rng.choice(CARD_BRANDS), last_four=_digits(rng, 4)
            )
        elif source == "gift_card":
            pm = PaymentMethod(id=pm_id, source=source, balance=float(rng.randint(0, 300)))
        else:
            pm = PaymentMethod(id=pm_id, source=source)
        methods[pm_id] = pm
    return methods


def _users(rng: random.Random, n_users: int) -> dict[str, User]:
    users: dict[str, User] = {}
    seen_names: set[tuple[str, str]] = set()
    while len(users) < n_users:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        if (first, last) in seen_names:  # names unique so name + zip finds exactly one user
            continue
        seen_names.add((first, last))
        # Not name-based: a task renames its user to the persona (scenario.become).
        user_id = f"user_{_digits(rng, 4)}{len(users):02d}"
        users[user_id] = User(
            user_id=user_id,
            name=UserName(first_name=first, last_name=last),
            email=f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
            address=random_address(rng),
            payment_methods=_payment_methods(rng),
        )
    return users


def _products(rng: random.Random, n_products: int) -> dict[str, Product]:
    products: dict[str, Product] = {}
    for name, base, dims in rng.sample(CATALOGUE, min(n_products, len(CATALOGUE))):
        product_id = _digits(rng, 10)
        combos: list[dict[str, str]] = [{}]
        for dim, values in dims.items():
            combos = [{**c, dim: v} for c in combos for v in values]
        variants: dict[str, Variant] = {}
        for options in rng.sample(combos, min(len(combos), rng.randint(4, 7))):
            item_id = _digits(rng, 10)
            variants[item_id] = Variant(
                item_id=item_id,
                options=options,
                available=rng.random() < 0.75,
                price=round(base * rng.uniform(0.85, 1.25), 2),
            )
        products[product_id] = Product(product_id=product_id, name=name, variants=variants)
    return products


def _order_items(rng: random.Random, products: dict[str, Product]) -> list[OrderItem]:
    """One to three items from distinct products (so an item id names one line of the order)."""
    items = []
    for product in rng.sample(
        sorted(products.values(), key=lambda p: p.product_id), rng.randint(1, 3)
    ):
        variant = product.variants[rng.choice(sorted(product.variants))]
        items.append(
            OrderItem(
                item_id=variant.item_id,
                product_id=product.product_id,
                name=product.name,
                options=dict(variant.options),
                price=variant.price,
            )
        )
    return items


def _orders(
    rng: random.Random, users: dict[str, User], products: dict[str, Product], n_orders: int
) -> dict[str, Order]:
    orders: dict[str, Order] = {}
    user_ids = sorted(users)
    statuses = [s for s, _ in ORDER_STATUS_WEIGHTS]
    weights = [w for _, w in ORDER_STATUS_WEIGHTS]
    while len(orders) < n_orders:
        order_id = f"#W{_digits(rng, 7)}"
        if order_id in orders:
            continue
        user = users[rng.choice(user_ids)]
        items = _order_items(rng, products)
        status: OrderStatus = rng.choices(statuses, weights)[0]
        pm_id = rng.choice(sorted(user.payment_methods))
        total = round(sum(i.price for i in items), 2)
        history = [PaymentRecord(transaction_type="payment", amount=total, payment_method_id=pm_id)]
        if status == "cancelled":
            history.append(
                PaymentRecord(transaction_type="refund", amount=total, payment_method_id=pm_id)
            )
        fulfillments = []
        if status not in ("pending", "cancelled"):
            fulfillments = [
                Fulfillment(tracking_id=_digits(rng, 12), item_ids=[i.item_id for i in items])
            ]
        orders[order_id] = Order(
            order_id=order_id,
            user_id=user.user_id,
            address=user.address.model_copy(deep=True),
            items=items,
            status=status,
            payment_history=history,
            fulfillments=fulfillments,
            cancel_reason="no longer needed" if status == "cancelled" else None,
        )
        user.orders.append(order_id)
    return orders


def generate_state(
    seed: int, n_users: int = 30, n_products: int = 12, n_orders: int = 60
) -> RetailState:
    """A fresh, fictional retail world; the same arguments always give the same state."""
    rng = random.Random(seed)
    users = _users(rng, n_users)
    products = _products(rng, n_products)
    orders = _orders(rng, users, products, n_orders)
    return RetailState(users=users, products=products, orders=orders)
