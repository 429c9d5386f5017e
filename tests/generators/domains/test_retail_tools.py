"""Retail tools through the boundary: each precondition's error, each write's effect, hashing."""

from __future__ import annotations

import pytest

from trajforge.generators.domains.retail.data_model import (
    Address,
    Order,
    OrderItem,
    PaymentMethod,
    PaymentRecord,
    Product,
    RetailState,
    User,
    UserName,
    Variant,
    generate_state,
)
from trajforge.generators.domains.retail.tools import TOOLS
from trajforge.generators.tooling import Toolbox, state_hash
from trajforge.schemas import ToolCall

TOOLBOX = Toolbox(TOOLS)
HOME = Address(
    address1="1 Maple St", address2="", city="Fairhaven", state="WA", country="USA", zip="11111"
)
NEW_ADDRESS = dict(
    address1="9 Cedar Rd",
    address2="Apt 2",
    city="Riverton",
    state_code="OR",
    country="USA",
    zip="22222",
)


def _line(product: Product, item_id: str) -> OrderItem:
    v = product.variants[item_id]
    return OrderItem(
        item_id=item_id,
        product_id=product.product_id,
        name=product.name,
        options=v.options,
        price=v.price,
    )


def _order(order_id: str, user_id: str, status: str, lines: list[OrderItem], pm: str) -> Order:
    total = round(sum(i.price for i in lines), 2)
    return Order(
        order_id=order_id,
        user_id=user_id,
        address=HOME,
        items=lines,
        status=status,
        payment_history=[
            PaymentRecord(transaction_type="payment", amount=total, payment_method_id=pm)
        ],
    )


@pytest.fixture
def state() -> RetailState:
    shirt = Product(
        product_id="1000000001",
        name="T-Shirt",
        variants={
            "2000000001": Variant(
                item_id="2000000001", options={"color": "red"}, available=True, price=20.0
            ),
            "2000000002": Variant(
                item_id="2000000002", options={"color": "blue"}, available=True, price=25.5
            ),
            "2000000003": Variant(
                item_id="2000000003", options={"color": "green"}, available=False, price=22.0
            ),
        },
    )
    mug = Product(
        product_id="1000000002",
        name="Mug",
        variants={
            "3000000001": Variant(
                item_id="3000000001", options={"color": "white"}, available=True, price=10.0
            ),
            "3000000002": Variant(
                item_id="3000000002", options={"color": "black"}, available=True, price=12.25
            ),
        },
    )
    ann = User(
        user_id="ann_lee_1234",
        name=UserName(first_name="Ann", last_name="Lee"),
        email="ann.lee@example.com",
        address=HOME,
        payment_methods={
            "credit_card_1111111": PaymentMethod(
                id="credit_card_1111111", source="credit_card", brand="visa", last_four="4242"
            ),
            "gift_card_2222222": PaymentMethod(
                id="gift_card_2222222", source="gift_card", balance=5.0
            ),
            "paypal_3333333": PaymentMethod(id="paypal_3333333", source="paypal"),
        },
        orders=["#W0000001", "#W0000002", "#W0000003"],
    )
    bo = User(
        user_id="bo_wu_5678",
        name=UserName(first_name="Bo", last_name="Wu"),
        email="bo.wu@example.com",
        address=HOME.model_copy(update={"zip": "33333"}),
        payment_methods={
            "credit_card_4444444": PaymentMethod(
                id="credit_card_4444444", source="credit_card", brand="amex", last_four="0005"
            )
        },
        orders=["#W0000004"],
    )
    s, m = shirt, mug
    orders = [
        _order("#W0000001", ann.user_id, "pending", [_line(s, "2000000001"), _line(m, "3000000001")], "credit_card_1111111"),
        _order("#W0000002", ann.user_id, "delivered", [_line(s, "2000000001"), _line(m, "3000000001")], "paypal_3333333"),
        _order("#W0000003", ann.user_id, "processed", [_line(m, "3000000002")], "credit_card_1111111"),
        _order("#W0000004", bo.user_id, "pending", [_line(m, "3000000001")], "credit_card_4444444"),
    ]  # fmt: skip
    return RetailState(
        users={u.user_id: u for u in (ann, bo)},
        products={p.product_id: p for p in (shirt, mug)},
        orders={o.order_id: o for o in orders},
    )


def run(state: RetailState, name: str, **arguments):
    return TOOLBOX.execute(state, ToolCall(id="t", name=name, arguments=arguments))


def ok(state: RetailState, name: str, **arguments):
    out = run(state, name, **arguments)
    assert out.error is None, out.observation
    return out


def fails(state: RetailState, name: str, fragment: str, **arguments) -> None:
    before = state_hash(state)
    out = run(state, name, **arguments)
    assert out.error is not None, out.observation
    assert fragment in out.observation, out.observation
    assert state_hash(state) == before


# ---------------------------------------------------------------------------------------------
# Reads


def test_authentication_lookups(state):
    assert ok(state, "find_user_id_by_email", email="ANN.lee@example.com").observation == (
        "ann_lee_1234"
    )
    out = ok(state, "find_user_id_by_name_zip", first_name="bo", last_name="Wu", zip="33333")
    assert out.observation == "bo_wu_5678"
    fails(state, "find_user_id_by_email", "no user with email", email="x@example.com")
    fails(
        state, "find_user_id_by_name_zip", "no user named", first_name="Bo", last_name="Wu", zip="1"
    )


def test_reads_render_state_and_unknown_ids_fail(state):
    assert '"#W0000001"' in ok(state, "get_user_details", user_id="ann_lee_1234").observation
    assert (
        '"status": "delivered"' in ok(state, "get_order_details", order_id="#W0000002").observation
    )
    assert '"2000000003"' in ok(state, "get_product_details", product_id="1000000001").observation
    types = ok(state, "list_all_product_types").observation
    assert types == '{"Mug": "1000000002", "T-Shirt": "1000000001"}'
    fails(state, "get_user_details", "not found", user_id="zed")
    fails(state, "get_order_details", "order ids look like", order_id="W0000001")
    fails(state, "get_product_details", "not found", product_id="2000000001")


def test_calculate(state):
    assert ok(state, "calculate", expression="20 + 12.25 * 2").observation == "44.50"
    assert ok(state, "calculate", expression="-(1/3)").observation == "-0.33"
    assert TOOLBOX.spec("calculate").kind == "think"
    fails(state, "calculate", "may only contain", expression="__import__('os').getcwd()")
    fails(state, "calculate", "could not parse", expression="2 +")
    fails(state, "calculate", "division by zero", expression="1/0")


# ---------------------------------------------------------------------------------------------
# Cancel


def test_cancel_pending_order_refunds_payment(state):
    out = ok(state, "cancel_pending_order", order_id="#W0000001", reason="ordered by mistake")
    order = state.orders["#W0000001"]
    assert order.status == "cancelled" and order.cancel_reason == "ordered by mistake"
    assert order.refund_amount == 30.0 and '"refund_amount": 30.0' in out.observation
    assert order.payment_history[-1] == PaymentRecord(
        transaction_type="refund", amount=30.0, payment_method_id="credit_card_1111111"
    )
    assert any(d.path == "orders.#W0000001.status" for d in out.diff)


def test_cancel_refunds_gift_card_at_once(state):
    state.users["ann_lee_1234"].payment_methods["gift_card_2222222"].balance = 100.0
    ok(state, "modify_pending_order_payment", order_id="#W0000001", payment_method_id="gift_card_2222222")  # fmt: skip
    assert state.users["ann_lee_1234"].payment_methods["gift_card_2222222"].balance == 70.0
    ok(state, "cancel_pending_order", order_id="#W0000001", reason="no longer needed")
    assert state.users["ann_lee_1234"].payment_methods["gift_card_2222222"].balance == 100.0
    assert state.orders["#W0000001"].refund_amount == 30.0


def test_cancel_preconditions(state):
    fails(state, "cancel_pending_order", "is 'delivered'", order_id="#W0000002", reason="no longer needed")  # fmt: skip
    fails(state, "cancel_pending_order", "is 'processed'", order_id="#W0000003", reason="no longer needed")  # fmt: skip
    fails(state, "cancel_pending_order", "not found", order_id="#W9", reason="no longer needed")
    fails(state, "cancel_pending_order", "reason", order_id="#W0000001", reason="too expensive")


# ---------------------------------------------------------------------------------------------
# Modify a pending order


def test_modify_items_swaps_variant_and_charges_difference(state):
    ok(
        state,
        "modify_pending_order_items",
        order_id="#W0000001",
        item_ids=["2000000001", "3000000001"],
        new_item_ids=["2000000002", "3000000002"],
        payment_method_id="paypal_3333333",
    )
    order = state.orders["#W0000001"]
    assert [i.item_id for i in order.items] == ["2000000002", "3000000002"]
    assert order.items[0].options == {"color": "blue"} and order.items[0].price == 25.5
    assert order.payment_history[-1] == PaymentRecord(
        transaction_type="payment", amount=7.75, payment_method_id="paypal_3333333"
    )
    assert order.items_modified and order.status == "pending"


def test_modify_items_refund_to_gift_card_raises_balance(state):
    state.orders["#W0000001"].items[0] = _line(state.products["1000000001"], "2000000002")
    ok(
        state,
        "modify_pending_order_items",
        order_id="#W0000001",
        item_ids=["2000000002"],
        new_item_ids=["2000000001"],
        payment_method_id="gift_card_2222222",
    )
    assert state.users["ann_lee_1234"].payment_methods["gift_card_2222222"].balance == 10.5
    assert state.orders["#W0000001"].payment_history[-1].transaction_type == "refund"


@pytest.mark.parametrize(
    ("item_ids", "new_item_ids", "payment_method_id", "fragment"),
    [
        (["2000000002"], ["2000000001"], "paypal_3333333", "is not in order"),
        (["2000000001", "2000000001"], ["2000000002", "2000000002"], "paypal_3333333", "listed twice"),
        ([], [], "paypal_3333333", "item_ids is empty"),
        (["2000000001"], ["2000000003"], "paypal_3333333", "not available"),
        (["2000000001"], ["3000000002"], "paypal_3333333", "same product"),
        (["2000000001"], ["2000000001"], "paypal_3333333", "same as the old item"),
        (["2000000001"], ["2000000002", "3000000002"], "paypal_3333333", "same length"),
        (["2000000001"], ["2000000002"], "credit_card_4444444", "does not belong"),
        (["2000000001"], ["2000000002"], "gift_card_2222222", "less than the 5.50 needed"),
    ],
)  # fmt: skip
def test_modify_items_preconditions(state, item_ids, new_item_ids, payment_method_id, fragment):
    fails(
        state,
        "modify_pending_order_items",
        fragment,
        order_id="#W0000001",
        item_ids=item_ids,
        new_item_ids=new_item_ids,
        payment_method_id=payment_method_id,
    )


def test_modify_items_only_once_and_only_pending(state):
    args = dict(item_ids=["3000000001"], new_item_ids=["3000000002"], payment_method_id="paypal_3333333")  # fmt: skip
    ok(state, "modify_pending_order_items", order_id="#W0000001", **args)
    again = dict(item_ids=["3000000002"], new_item_ids=["3000000001"], payment_method_id="paypal_3333333")  # fmt: skip
    fails(state, "modify_pending_order_items", "already modified", order_id="#W0000001", **again)
    fails(state, "modify_pending_order_items", "is 'delivered'", order_id="#W0000002", **args)


def test_modify_order_address(state):
    ok(state, "modify_pending_order_address", order_id="#W0000001", **NEW_ADDRESS)
    addr = state.orders["#W0000001"].address
    assert (addr.address1, addr.address2, addr.state, addr.zip) == (
        "9 Cedar Rd",
        "Apt 2",
        "OR",
        "22222",
    )
    assert state.users["ann_lee_1234"].address == HOME
    fails(state, "modify_pending_order_address", "is 'processed'", order_id="#W0000003", **NEW_ADDRESS)  # fmt: skip
    fails(state, "modify_pending_order_address", "zip", order_id="#W0000001", **{**NEW_ADDRESS, "zip": None})  # fmt: skip


def test_modify_order_payment(state):
    ok(state, "modify_pending_order_payment", order_id="#W0000001", payment_method_id="paypal_3333333")  # fmt: skip
    history = state.orders["#W0000001"].payment_history
    assert [(p.transaction_type, p.amount, p.payment_method_id) for p in history] == [
        ("payment", 30.0, "credit_card_1111111"),
        ("payment", 30.0, "paypal_3333333"),
        ("refund", 30.0, "credit_card_1111111"),
    ]
    fails(state, "modify_pending_order_payment", "several payments", order_id="#W0000001", payment_method_id="credit_card_1111111")  # fmt: skip


def test_modify_order_payment_preconditions(state):
    fails(state, "modify_pending_order_payment", "already paid", order_id="#W0000001", payment_method_id="credit_card_1111111")  # fmt: skip
    fails(state, "modify_pending_order_payment", "does not belong", order_id="#W0000001", payment_method_id="credit_card_4444444")  # fmt: skip
    fails(state, "modify_pending_order_payment", "balance 5.00", order_id="#W0000001", payment_method_id="gift_card_2222222")  # fmt: skip
    fails(state, "modify_pending_order_payment", "is 'delivered'", order_id="#W0000002", payment_method_id="credit_card_1111111")  # fmt: skip


def test_modify_user_address(state):
    out = ok(state, "modify_user_address", user_id="ann_lee_1234", **NEW_ADDRESS)
    assert state.users["ann_lee_1234"].address.city == "Riverton"
    assert state.orders["#W0000001"].address == HOME
    assert {d.path for d in out.diff} >= {"users.ann_lee_1234.address.city"}
    fails(state, "modify_user_address", "not found", user_id="nobody", **NEW_ADDRESS)


# ---------------------------------------------------------------------------------------------
# Delivered orders


def test_return_items(state):
    out = ok(state, "return_delivered_order_items", order_id="#W0000002", item_ids=["3000000001", "2000000001"], payment_method_id="paypal_3333333")  # fmt: skip
    order = state.orders["#W0000002"]
    assert order.status == "return requested"
    assert order.return_items == ["2000000001", "3000000001"]
    assert order.refund_amount == 30.0 and '"refund_amount": 30.0' in out.observation
    ok(state, "get_order_details", order_id="#W0000002")


def test_return_to_gift_card_is_allowed(state):
    ok(state, "return_delivered_order_items", order_id="#W0000002", item_ids=["3000000001"], payment_method_id="gift_card_2222222")  # fmt: skip
    assert state.orders["#W0000002"].refund_amount == 10.0


def test_return_preconditions(state):
    args = dict(item_ids=["3000000001"], payment_method_id="paypal_3333333")
    fails(state, "return_delivered_order_items", "is 'pending'", order_id="#W0000001", **args)
    fails(state, "return_delivered_order_items", "original payment method", order_id="#W0000002", item_ids=["3000000001"], payment_method_id="credit_card_1111111")  # fmt: skip
    fails(state, "return_delivered_order_items", "is not in order", order_id="#W0000002", item_ids=["3000000002"], payment_method_id="paypal_3333333")  # fmt: skip
    fails(state, "return_delivered_order_items", "does not belong", order_id="#W0000002", item_ids=["3000000001"], payment_method_id="credit_card_4444444")  # fmt: skip
    ok(state, "return_delivered_order_items", order_id="#W0000002", **args)
    fails(state, "return_delivered_order_items", "is 'return requested'", order_id="#W0000002", **args)  # fmt: skip


def test_exchange_items(state):
    ok(state, "exchange_delivered_order_items", order_id="#W0000002", item_ids=["2000000001"], new_item_ids=["2000000002"], payment_method_id="credit_card_1111111")  # fmt: skip
    order = state.orders["#W0000002"]
    assert order.status == "exchange requested"
    assert order.exchange_new_items == ["2000000002"]
    assert order.exchange_price_difference == 5.5
    assert order.exchange_payment_method_id == "credit_card_1111111"


def test_exchange_preconditions(state):
    base = dict(order_id="#W0000002", item_ids=["2000000001"], payment_method_id="paypal_3333333")
    fails(state, "exchange_delivered_order_items", "not available", new_item_ids=["2000000003"], **base)  # fmt: skip
    fails(state, "exchange_delivered_order_items", "same product", new_item_ids=["3000000002"], **base)  # fmt: skip
    fails(state, "exchange_delivered_order_items", "less than", **{**base, "payment_method_id": "gift_card_2222222"}, new_item_ids=["2000000002"])  # fmt: skip
    fails(state, "exchange_delivered_order_items", "is 'pending'", **{**base, "order_id": "#W0000001"}, new_item_ids=["2000000002"])  # fmt: skip


def test_transfer(state):
    out = ok(state, "transfer_to_human_agents", summary="wants a refund in cash")
    assert out.observation == "Transfer successful" and out.mutating and out.diff == ()


# ---------------------------------------------------------------------------------------------
# Generated state


def test_generated_state_is_deterministic_and_seed_dependent():
    assert state_hash(generate_state(11)) == state_hash(generate_state(11))
    assert state_hash(generate_state(11)) != state_hash(generate_state(12))


def test_generated_state_is_consistent():
    # Generation speed is measured by benchmarks/, not asserted here (shared, noisy machines).
    s = generate_state(5)
    assert (len(s.users), len(s.products), len(s.orders)) == (15, 12, 30)
    for order in s.orders.values():
        assert order.order_id in s.users[order.user_id].orders
        for line in order.items:
            assert s.products[line.product_id].variants[line.item_id].options == line.options
        for p in order.payment_history:
            assert p.payment_method_id in s.users[order.user_id].payment_methods
    names = {(u.name.first_name, u.name.last_name) for u in s.users.values()}
    assert len(names) == len(s.users)  # name + zip identifies one user
    assert {o.status for o in s.orders.values()} >= {"pending", "delivered", "processed"}


def test_reads_do_not_change_the_hash():
    s = generate_state(3)
    before = state_hash(s)
    order_id = sorted(s.orders)[0]
    ok(s, "get_order_details", order_id=order_id)
    ok(s, "get_user_details", user_id=s.orders[order_id].user_id)
    ok(s, "list_all_product_types")
    assert state_hash(s) == before


def test_every_tool_and_argument_is_documented_for_the_agent():
    kinds = {s.name: s.kind for s in TOOLBOX.specs}
    assert len(kinds) == len(TOOLS) == 15
    assert kinds["transfer_to_human_agents"] == "transfer"
    assert sum(k == "write" for k in kinds.values()) == 7
    for spec in TOOLBOX.specs:
        assert spec.description, spec.name
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), (spec.name, name)


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("9" * 400, "too long"),  # float(int) would overflow
        ("(" * 5000 + "1" + ")" * 5000, "too long"),  # parser/evaluator recursion
        ("1e308 * 10", "out of range"),  # inf
        ("1e200 ** 2", "may only contain"),
        ("10 ** 2", "may only contain"),
        ("1" + "+1" * 150, "too long"),
    ],
)
def test_calculate_bounds_model_chosen_input(state, expression, fragment):
    fails(state, "calculate", fragment, expression=expression[:10_000])


def test_calculate_huge_number_within_length_is_refused(state):
    fails(state, "calculate", "out of range", expression="9" * 150)
