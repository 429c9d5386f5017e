"""The retail world generator as it was before plain-data generation (kept as the reference:
`world.generate_world` must give these states' dumps byte for byte, with the same RNG draws)."""

from __future__ import annotations

import random

from trajforge.generators.domains.retail.data_model import (
    Address,
    Fulfillment,
    Order,
    OrderItem,
    OrderStatus,
    PaymentMethod,
    PaymentRecord,
    PaymentSource,
    Product,
    RetailState,
    User,
    UserName,
    Variant,
)
from trajforge.generators.domains.retail.world import (
    CARD_BRANDS,
    CATALOGUE,
    CITIES,
    FIRST_NAMES,
    LAST_NAMES,
    ORDER_STATUS_WEIGHTS,
    STREET_KINDS,
    STREETS,
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


def reference_state(
    seed: int, n_users: int = 30, n_products: int = 12, n_orders: int = 60
) -> RetailState:
    """A fresh, fictional retail world; the same arguments always give the same state."""
    rng = random.Random(seed)
    users = _users(rng, n_users)
    products = _products(rng, n_products)
    orders = _orders(rng, users, products, n_orders)
    return RetailState(users=users, products=products, orders=orders)
