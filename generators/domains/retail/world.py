"""The retail world generated from a seed, as plain JSON data (what `RetailState` validates).

Every stage rebuilds a task's world from its seed, so generation is on the hot path of a build.
Building ~600 validated pydantic objects per world cost ~4 ms; this builds the same data as
plain dicts and lists (~1 ms) with the same RNG draws in the same order, and the state is
validated once, from this data, by whoever needs objects. The dicts' keys follow the models'
field order, so a validated world dumps to exactly this data
(tests/generators/domains/test_retail_world_data.py compares it with the old object-built
generator over many seeds).

The RNG calls (~700 a world) are most of what is left, and they are kept exactly: the same
methods with equal arguments in the same order (tested by recording them), so a world does not
depend on how a Python version implements a draw beyond what `random` promises. What was cut
is the work around them: lists and tables made once per process or per world instead of per
draw (option combinations, sorted id lists, digit bounds, lower-cased names) and method
lookups hoisted out of loops.
"""

from __future__ import annotations

import random
from typing import Any

Data = dict[str, Any]

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

ORDER_STATUS_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("pending", 0.36),
    ("processed", 0.1),
    ("delivered", 0.36),
    ("cancelled", 0.08),
    ("return requested", 0.05),
    ("exchange requested", 0.05),
)


#: `randint` bounds of an n-digit number (`str(randint(*_D7))`: seven digits), computed once
#: instead of per draw; a world draws ~190 of them.
_D4, _D5, _D7, _D10, _D12 = ((10 ** (n - 1), 10**n - 1) for n in (4, 5, 7, 10, 12))


def address_data(rng: random.Random) -> Data:
    """A fictional street address (also used by task synthesis for 'move to' requests)."""
    randint, choice = rng.randint, rng.choice
    city, state = choice(CITIES)
    return {
        "address1": f"{randint(10, 9999)} {choice(STREETS)} {choice(STREET_KINDS)}",
        "address2": choice(("", "", f"Apt {randint(1, 40)}", f"Suite {randint(100, 900)}")),
        "city": city,
        "state": state,
        "country": "USA",
        "zip": str(randint(*_D5)),
    }


#: The payment sources a user draws from (a list, as the draw has always been given).
_SOURCES = ["credit_card", "gift_card", "paypal"]


def _payment_methods(rng: random.Random) -> dict[str, Data]:
    """One to three distinct sources, made in sorted order; each a `PaymentMethod` dump whose
    unused fields are None."""
    randint = rng.randint
    chosen = rng.sample(_SOURCES, randint(1, 3))  # `sample` copies its population
    methods: dict[str, Data] = {}
    for source in sorted(chosen):
        pm_id = f"{source}_{randint(*_D7)}"
        brand = last_four = balance = None
        if source == "credit_card":
            brand, last_four = rng.choice(CARD_BRANDS), str(randint(*_D4))
        elif source == "gift_card":
            balance = float(randint(0, 300))
        methods[pm_id] = {
            "id": pm_id,
            "source": source,
            "brand": brand,
            "last_four": last_four,
            "balance": balance,
        }
    return methods


#: Lower-cased names for emails, made once instead of per user.
_LOWER = {name: name.lower() for name in (*FIRST_NAMES, *LAST_NAMES)}


def _users(rng: random.Random, n_users: int) -> dict[str, Data]:
    randint, choice = rng.randint, rng.choice
    users: dict[str, Data] = {}
    seen_names: set[tuple[str, str]] = set()
    while len(users) < n_users:
        first, last = choice(FIRST_NAMES), choice(LAST_NAMES)
        if (first, last) in seen_names:  # names unique so name + zip finds exactly one user
            continue
        seen_names.add((first, last))
        # Not name-based: a task renames its user to the persona (scenario.become).
        user_id = f"user_{randint(*_D4)}{len(users):02d}"
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": last},
            "email": f"{_LOWER[first]}.{_LOWER[last]}{randint(1, 99)}@example.com",
            "address": address_data(rng),
            "payment_methods": _payment_methods(rng),
            "orders": [],
        }
    return users


def _combos(dims: dict[str, tuple[str, ...]]) -> list[dict[str, str]]:
    """Every option combination of a product, in the order the draws index them."""
    combos: list[dict[str, str]] = [{}]
    for dim, values in dims.items():
        combos = [{**c, dim: v} for c in combos for v in values]
    return combos


#: Each catalogue entry's combinations, made once per process instead of per world (a world
#: copies the ones it draws; `sample` only reads the list).
_COMBOS = {name: _combos(dims) for name, _, dims in CATALOGUE}


def _variants(combos: list[dict[str, str]], base: float, rng: random.Random) -> Data:
    randint, random_, uniform = rng.randint, rng.random, rng.uniform
    variants: Data = {}
    for options in rng.sample(combos, min(len(combos), randint(4, 7))):
        item_id = str(randint(*_D10))
        variants[item_id] = {
            "item_id": item_id,
            "options": dict(options),  # the table's dicts are never handed out
            "available": random_() < 0.75,
            "price": round(base * uniform(0.85, 1.25), 2),
        }
    return variants


def _products(rng: random.Random, n_products: int) -> dict[str, Data]:
    products: dict[str, Data] = {}
    for name, base, _ in rng.sample(CATALOGUE, min(n_products, len(CATALOGUE))):
        product_id = str(rng.randint(*_D10))
        variants = _variants(_COMBOS[name], base, rng)
        products[product_id] = {"product_id": product_id, "name": name, "variants": variants}
    return products


def _order_items(
    rng: random.Random, by_id: list[Data], variant_ids: dict[str, list[str]]
) -> list[Data]:
    """One to three items from distinct products (so an item id names one line of the order);
    `by_id`: the products sorted by id; `variant_ids`: each product's variant ids, sorted."""
    choice = rng.choice
    items = []
    for product in rng.sample(by_id, rng.randint(1, 3)):
        product_id = product["product_id"]
        variant = product["variants"][choice(variant_ids[product_id])]
        items.append(
            {
                "item_id": variant["item_id"],
                "product_id": product_id,
                "name": product["name"],
                "options": dict(variant["options"]),
                "price": variant["price"],
            }
        )
    return items


def _order(order_id: str, user: Data, items: list[Data], status: str, pm_id: str, rng) -> Data:
    """An `Order` dump: its payments (and refund, if cancelled), its fulfillment (once it has
    shipped), every optional field at its default."""
    total = round(sum([i["price"] for i in items]), 2)
    history = [{"transaction_type": "payment", "amount": total, "payment_method_id": pm_id}]
    if status == "cancelled":
        history.append({"transaction_type": "refund", "amount": total, "payment_method_id": pm_id})
    fulfillments = []
    if status != "pending" and status != "cancelled":
        item_ids = [i["item_id"] for i in items]
        fulfillments = [{"tracking_id": str(rng.randint(*_D12)), "item_ids": item_ids}]
    return {
        "order_id": order_id,
        "user_id": user["user_id"],
        "address": dict(user["address"]),
        "items": items,
        "status": status,
        "payment_history": history,
        "fulfillments": fulfillments,
        "items_modified": False,
        "cancel_reason": "no longer needed" if status == "cancelled" else None,
        "return_items": [],
        "return_payment_method_id": None,
        "refund_amount": None,
        "exchange_items": [],
        "exchange_new_items": [],
        "exchange_payment_method_id": None,
        "exchange_price_difference": None,
    }


_STATUSES = [s for s, _ in ORDER_STATUS_WEIGHTS]
_WEIGHTS = [w for _, w in ORDER_STATUS_WEIGHTS]


def _orders(
    rng: random.Random, users: dict[str, Data], products: dict[str, Data], n_orders: int
) -> dict[str, Data]:
    """Orders of random users; the sorted id lists the draws index are made once per world
    (users' payment methods and products' variants do not change while orders are made)."""
    randint, choice, choices = rng.randint, rng.choice, rng.choices
    orders: dict[str, Data] = {}
    user_ids = sorted(users)
    by_id = sorted(products.values(), key=lambda p: p["product_id"])
    variant_ids = {p["product_id"]: sorted(p["variants"]) for p in by_id}
    pm_ids = {uid: sorted(u["payment_methods"]) for uid, u in users.items()}
    while len(orders) < n_orders:
        order_id = f"#W{randint(*_D7)}"
        if order_id in orders:
            continue
        user_id = choice(user_ids)
        user = users[user_id]
        items = _order_items(rng, by_id, variant_ids)
        status = choices(_STATUSES, _WEIGHTS)[0]
        pm_id = choice(pm_ids[user_id])
        orders[order_id] = _order(order_id, user, items, status, pm_id, rng)
        user["orders"].append(order_id)
    return orders


#: World size. The agent sees only its user's records (profile, orders) and the catalogue; the
#: other users and their orders are there so that lookups by email or by name and zip have
#: something to miss. Every stage rebuilds, copies, dumps and hashes the whole world, so its
#: size is a cost on every task: 30 users / 60 orders (85 KB of JSON) cost a 1,600-task
#: rollout build 29.8 ms of CPU per task, 15 / 30 about 21 (benchmarks/README.md, "Fourth
#: round"). Halving them kept the synthesised tasks' type and complexity mix as it was (400
#: tasks, build seed 1: the same counts per leading type and per complexity, none infeasible)
#: and keeps two orders per user on average, which is all a task reads.
N_USERS = 15
N_PRODUCTS = 12
N_ORDERS = 30


def generate_world(
    seed: int, n_users: int = N_USERS, n_products: int = N_PRODUCTS, n_orders: int = N_ORDERS
) -> Data:
    """A fresh, fictional retail world as plain data; the same arguments give the same data."""
    rng = random.Random(seed)
    users = _users(rng, n_users)
    products = _products(rng, n_products)
    orders = _orders(rng, users, products, n_orders)
    return {"users": users, "products": products, "orders": orders}
