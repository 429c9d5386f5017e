"""Each shortcut filter: a hand-built trajectory it must reject, a near-identical one it keeps."""

import pytest
from trajectory_builders import ORDER, Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.tasks import VOCABULARY as RETAIL
from trajforge.schemas import GoldAction, Rejected
from trajforge.verifiers.hallucination import check_hallucinated_values
from trajforge.verifiers.loops import check_loops
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.structural import check_agent_tool_calls, check_narrated_actions
from trajforge.verifiers.user_fidelity import check_user_fidelity

RETAIL_VERBS = RETAIL.action_verbs


def test_filter_result_invariants():
    assert FilterResult.ok().passed
    with pytest.raises(ValueError):
        FilterResult(True, "loop_or_repeat", "")
    with pytest.raises(Rejected, match="loop_or_repeat"):
        FilterResult.reject("loop_or_repeat", "x").raise_if_rejected()


# --- hallucinated values ------------------------------------------------------------------


def test_total_quoted_before_lookup_is_rejected():
    result = check_hallucinated_values(cancel_convo(lookup_first=False).build())
    assert not result.passed
    assert result.reason == "hallucinated_value"
    assert "amount:54.9" in result.detail


def test_total_quoted_after_lookup_is_kept(good_trajectory):
    result = check_hallucinated_values(good_trajectory)
    assert result.passed, result.detail


def test_invented_tool_argument_is_rejected():
    t = (
        Convo()
        .user("Cancel my order please, user id sara_doe_1234")
        .call("get_order_details", order_id="#W7654321")
        .result(ORDER)
        .build()
    )
    result = check_hallucinated_values(t)
    assert not result.passed and "#w7654321" in result.detail


def test_summed_amount_counts_as_supported():
    t = (
        Convo()
        .user("What would both items cost? order #W1234567")
        .call("get_order_details", order_id="#W1234567")
        .result({"items": [{"price": 10.5}, {"price": 20.25}]})
        .agent("Together they cost $30.75.")
        .build()
    )
    assert check_hallucinated_values(t).passed


# --- structural ---------------------------------------------------------------------------


def test_state_change_without_agent_call_is_rejected():
    c = Convo().user("cancel #W1234567").call("get_order_details", order_id="#W1234567")
    c.result(ORDER, diff=(("orders.#W1234567.status", "pending", "cancelled"),), call_id="ghost")
    result = check_agent_tool_calls(c.build())
    assert not result.passed and result.reason == "no_agent_tool_call"
    assert "ghost" in result.detail


def test_state_change_from_agent_call_is_kept(good_trajectory):
    assert check_agent_tool_calls(good_trajectory).passed


def test_narrated_cancel_without_write_is_rejected():
    t = (
        Convo()
        .user("cancel #W1234567")
        .call("get_order_details", order_id="#W1234567")
        .result(ORDER)
        .agent("Done! I've successfully cancelled order #W1234567.")
        .build()
    )
    result = check_narrated_actions(t, RETAIL_VERBS)
    assert not result.passed and result.reason == "narrated_action"
    assert "cancelled" in result.detail


def test_narrated_cancel_after_failed_write_is_rejected():
    c = Convo().user("cancel #W1234567")
    c.call("cancel_pending_order", order_id="#W1234567", reason="ordered by mistake")
    c.result(None, error="Error: order is delivered", mutating=True)
    c.agent("I have cancelled order #W1234567.")
    assert not check_narrated_actions(c.build(), RETAIL_VERBS).passed


def test_narrated_cancel_with_wrong_tool_is_rejected():
    c = Convo().user("cancel #W1234567")
    c.call("modify_pending_order_address", order_id="#W1234567", zip="94110")
    c.result(ORDER, diff=(("orders.#W1234567.zip", "10001", "94110"),))
    c.agent("I have cancelled order #W1234567.")
    assert not check_narrated_actions(c.build(), RETAIL_VERBS).passed


def test_narrated_cancel_after_successful_write_is_kept(good_trajectory):
    assert check_narrated_actions(good_trajectory, RETAIL_VERBS).passed


def test_reported_status_is_not_a_claim():
    t = (
        Convo()
        .user("status of #W1234567?")
        .call("get_order_details", order_id="#W1234567")
        .result({**ORDER, "status": "cancelled"})
        .agent("Your order #W1234567 has been cancelled already.")
        .build()
    )
    assert check_narrated_actions(t, RETAIL_VERBS).passed


def test_action_verbs_come_from_the_domain():
    c = Convo().user("cancel #W1234567")
    c.agent("I have cancelled order #W1234567.")
    assert check_narrated_actions(c.build()).passed  # "cancelled" is no generic action verb
    c = Convo().user("add a task")
    c.agent("I've created the task for you.")
    assert not check_narrated_actions(c.build()).passed  # "created" is one, and nothing wrote


# --- loops --------------------------------------------------------------------------------


def _lookups(n: int, vary: bool = False) -> Convo:
    c = Convo().user("where is #W1234567, user sara_doe_1234")
    for i in range(n):
        args = {"order_id": "#W1234567"} if not vary or i == 0 else {"user_id": "sara_doe_1234"}
        c.call("get_order_details", **args).result(ORDER)
    return c


def test_same_call_three_times_is_rejected():
    result = check_loops(_lookups(3).build())
    assert not result.passed and result.reason == "loop_or_repeat"
    assert "x3" in result.detail


def test_two_repeats_or_varied_arguments_are_kept():
    assert check_loops(_lookups(2).build()).passed
    assert check_loops(_lookups(3, vary=True).build()).passed
    assert not check_loops(_lookups(2).build(), max_repeats=2).passed


def _address_writes(*zips: str) -> Convo:
    c = Convo().user("change my zip, order #W1234567")
    before = "10001"
    for z in zips:
        c.call("modify_pending_order_address", order_id="#W1234567", zip=z)
        c.result(ORDER, diff=(("orders.#W1234567.zip", before, z),))
        before = z
    return c


def test_oscillating_write_is_rejected():
    result = check_loops(_address_writes("94110", "10001").build())
    assert not result.passed and "oscillated" in result.detail


def test_successive_different_writes_are_kept():
    assert check_loops(_address_writes("94110", "94111").build()).passed


# --- user fidelity ------------------------------------------------------------------------


def test_user_inventing_an_order_id_is_rejected():
    t = Convo().user("Please cancel order #W9999999, my id is sara_doe_1234").build()
    result = check_user_fidelity(t)
    assert not result.passed and result.reason == "user_hallucination"
    assert "#w9999999" in result.detail


def test_user_inventing_a_name_is_rejected():
    t = Convo().user("Hi, my name is John Smith, cancel #W1234567").build()
    result = check_user_fidelity(t)
    assert not result.passed and "John Smith" in result.detail


def test_user_repeating_known_info_and_agent_values_is_kept(good_trajectory):
    assert check_user_fidelity(good_trajectory).passed
    t = (
        Convo()
        .user("Hi, I'm Sara Doe, cancel #W1234567")
        .agent("Is your zip 94110?")
        .user("Yes, 94110 is right.")
        .build()
    )
    assert check_user_fidelity(t).passed


def test_user_fidelity_uses_scenario_known_info():
    task = make_task(known_info={"order_id": "#W9999999"})
    t = Convo().user("Please cancel order #W9999999").build(task)
    assert check_user_fidelity(t).passed
    assert not check_user_fidelity(Convo().user("Please cancel order #W9999999").build()).passed


def test_gold_action_task_builder_accepts_gold():
    task = make_task(gold_actions=(GoldAction(name="cancel_pending_order", arguments={}),))
    assert task.gold_actions[0].name == "cancel_pending_order"


# --- value extraction ---------------------------------------------------------------------


def test_extract_values_keeps_facts_and_skips_prose():
    from trajforge.generators.values import extract_values

    text = (
        "Order #W1234567 ($1,054.90) ships 2024-05-01 to a.b@x.com, card credit_card_123, "
        "user sara_doe_1234, zip 94110; 2 items, the 3rd one, in 5-7 days, within 24h."
    )
    assert extract_values(text) == {
        "#w1234567",
        "amount:1054.9",
        "2024-05-01",
        "a.b@x.com",
        "credit_card_123",
        "sara_doe_1234",
        "94110",
    }


def test_evidence_matches_whole_tokens_only():
    from trajforge.verifiers.text import Evidence

    evidence = Evidence()
    evidence.add('{"order_id": "#W1234567", "placed": "2024-05-01"}')
    assert evidence.supports("w1234567")
    assert evidence.supports("2024")
    assert not evidence.supports("#w123")
