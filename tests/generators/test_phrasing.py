"""The domain phrasing table: the agent names things as a support agent would, from tool
outputs, and falls back to the generic phrase when the table or the outputs say nothing."""

import json

import pytest
from pydantic import ValidationError

from trajforge.generators.agent_voice import answer, confirm_prompt, write_report
from trajforge.generators.domains.retail import RetailDomain
from trajforge.generators.domains.search.domain import PHRASING as SEARCH_PHRASING
from trajforge.generators.phrasing import Reference, fill
from trajforge.schemas import InitialState, ToolCall


@pytest.fixture(scope="module")
def retail():
    domain = RetailDomain()
    state = domain.initial_state(InitialState(seed=3))
    user = next(u for u in state.users.values() if u.orders)
    order = state.orders[user.orders[0]]

    def run(name, **arguments):
        call = ToolCall(id="c", name=name, arguments=arguments)
        return domain.toolbox.execute(state, call).observation

    seen = [
        run("get_user_details", user_id=user.user_id),
        run("get_order_details", order_id=order.order_id),
    ]
    return domain.phrasing, user, order, seen


def test_confirmation_names_items_and_payment_not_internal_ids(retail):
    phrasing, user, order, seen = retail
    pm_id, pm = sorted(user.payment_methods.items())[0]
    line = order.items[0]
    args = {"order_id": order.order_id, "item_ids": [line.item_id], "payment_method_id": pm_id}
    said = confirm_prompt(
        "return_delivered_order_items", args, 1, phrasing=phrasing, observations=seen
    )
    assert order.order_id in said and line.name in said  # the policy reads the order id
    assert pm_id not in said and line.item_id not in said
    assert ("your " in said) and (pm.last_four or "") in said


def test_confirmation_without_the_outputs_keeps_the_generic_phrase(retail):
    phrasing, user, order, _ = retail
    pm_id = sorted(user.payment_methods)[0]
    args = {"order_id": order.order_id, "payment_method_id": pm_id}
    said = confirm_prompt("modify_pending_order_payment", args, 1, phrasing=phrasing)
    assert pm_id in said  # nothing seen names it: the id stays rather than a guess


def test_address_report_says_your_default_address(retail):
    phrasing, user, _, _ = retail
    args = {
        "user_id": user.user_id,
        "address1": "12 Elm St",
        "address2": "",
        "city": "Riverton",
        "state_code": "CA",
        "zip": "12345",
        "country": "USA",
    }
    result = json.dumps({"user_id": user.user_id, "address": {}})
    said = write_report("modify_user_address", args, result, 2, phrasing=phrasing)
    assert "your default address" in said and "12 Elm St, Riverton, CA 12345, USA" in said
    assert user.user_id not in said


def test_refund_answer_states_amount_and_where_it_goes(retail):
    phrasing, user, order, seen = retail
    pm_id, pm = sorted(user.payment_methods.items())[0]
    returned = {**json.loads(seen[1]), "refund_amount": 54.9, "return_payment_method_id": pm_id}
    results = [
        ({"user_id": user.user_id}, seen[0]),
        ({"order_id": order.order_id}, json.dumps(returned)),
    ]
    said = answer("54.90", results, 0, phrasing=phrasing)
    assert "$54.90" in said and "refund" in said and pm_id not in said
    assert order.order_id in said


def test_fill_refuses_a_hole():
    assert fill("the {name} ({options})", {"name": "Lamp"}, str) is None
    assert fill("the {name}", {"name": "Lamp"}, str) == "the Lamp"


def test_reference_needs_a_default_phrase():
    with pytest.raises(ValidationError, match="'\\*' entry"):
        Reference(phrases={"gift_card": "your gift card"})


def test_search_answer_cites_the_page_that_states_it():
    page = json.dumps(
        {"doc_id": "d1", "title": "Efen: notes", "text": "Efen lies in Karis province."}
    )
    other = json.dumps({"doc_id": "d2", "title": "Paar", "text": "Paar is a village."})
    results = [
        ({"doc_id": "d1"}, page),
        ({"doc_id": "d2"}, other),
        ({"text": "Karis"}, "Answer recorded: Karis"),
    ]
    said = answer("Karis", results, 5, phrasing=SEARCH_PHRASING)
    assert "Karis" in said and "'Efen: notes'" in said and "Paar" not in said
    assert not said.startswith("The answer is")
    # nothing read states it: no source is invented
    assert "'" not in answer("Mirzor", results, 5, phrasing=SEARCH_PHRASING)
