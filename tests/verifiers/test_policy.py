"""Policy as code: each retail rule with a violating and a corrected trajectory."""

from __future__ import annotations

import pytest
from trajectory_builders import ORDER, Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.rules import RETAIL_RULES
from trajforge.generators.policy_rules import RULE_IDS
from trajforge.schemas import GoldAction
from trajforge.verifiers.policy import check_policy, policy_violations

CANCELLED = {**ORDER, "status": "cancelled"}
CANCEL_DIFF = (("orders.#W1234567.status", "pending", "cancelled"),)
PROMPT = "Order #W1234567 totals $54.90. Shall I cancel it? (yes/no)"


def rules_broken(convo: Convo, task=None) -> list[str]:
    return [v.rule for v in policy_violations(convo.build(task or make_task()), RETAIL_RULES)]


def authed(order=ORDER) -> Convo:
    c = Convo().user("Hi, I'm Sara Doe, sara@example.com. Cancel order #W1234567.")
    c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
    return c.call("get_order_details", order_id="#W1234567").result(order)


def cancel(c: Convo) -> Convo:
    c.call("cancel_pending_order", order_id="#W1234567", reason="ordered by mistake")
    return c.result(CANCELLED, diff=CANCEL_DIFF)


def test_the_canonical_conversation_keeps_every_rule():
    assert rules_broken(cancel_convo()) == []
    assert check_policy(cancel_convo().build(make_task()), RETAIL_RULES).passed


def test_a_domain_without_rules_passes_everything():
    c = Convo().user("cancel").call("cancel_pending_order", order_id="#W1234567", reason="x")
    assert check_policy(c.result(CANCELLED, diff=CANCEL_DIFF).build(), None).passed


def test_authenticate_first():
    bad = Convo().user("Cancel #W1234567, I'm Sara Doe.")
    bad.call("get_order_details", order_id="#W1234567").result(ORDER)
    assert rules_broken(bad) == ["policy.authenticate_first"]
    assert rules_broken(authed()) == []


def test_public_tools_need_no_authentication():
    c = Convo().user("What do you sell?").call("list_all_product_types").result({"Lamp": "1"})
    assert rules_broken(c) == []


def test_own_records_only_reads_included():
    other = {**ORDER, "user_id": "omar_ali_9999"}
    assert rules_broken(authed(order=other)) == ["policy.own_records_only"]
    assert rules_broken(authed()) == []


def test_confirm_before_write():
    assert rules_broken(cancel(authed())) == ["policy.confirm_before_write"]
    no_details = cancel(authed().agent("Shall I go ahead? (yes/no)").user("yes"))
    assert rules_broken(no_details) == ["policy.confirm_before_write"]
    assert rules_broken(cancel(authed().agent(PROMPT).user("Yes please."))) == []


def test_no_write_after_refusal():
    refused = cancel(authed().agent(PROMPT).user("No, don't do that."))
    assert rules_broken(refused) == ["policy.write_after_refusal"]
    assert rules_broken(cancel(authed().agent(PROMPT).user("Yes, go ahead."))) == []


def test_one_write_per_confirmation():
    twice = cancel(cancel(authed().agent(PROMPT).user("yes")))
    assert "policy.one_write_per_confirmation" in rules_broken(twice)
    each = cancel(authed().agent(PROMPT).user("yes")).agent(PROMPT).user("yes")
    assert "policy.one_write_per_confirmation" not in rules_broken(cancel(each))


def test_status_must_allow_the_write():
    delivered = {**ORDER, "status": "delivered"}
    bad = cancel(authed(order=delivered).agent(PROMPT).user("yes"))
    assert rules_broken(bad) == ["policy.status_not_allowed"]
    assert rules_broken(cancel(authed().agent(PROMPT).user("yes"))) == []


def test_one_call_at_a_time():
    c = Convo().user("Hi, sara@example.com")
    c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
    c.calls(("get_user_details", {"user_id": "sara_doe_1234"}), ("list_all_product_types", {}))
    c.result({"user_id": "sara_doe_1234"}).result({})
    assert rules_broken(c) == ["policy.one_call_at_a_time"]
    assert rules_broken(authed()) == []


def test_transfer_only_when_the_plan_needs_it():
    c = authed().call("transfer_to_human_agents", summary="help").result("Transfer successful")
    assert rules_broken(c) == ["policy.needless_transfer"]
    gold = (GoldAction(name="transfer_to_human_agents", arguments={"summary": "help"}),)
    assert rules_broken(c, make_task(gold_actions=gold)) == []


@pytest.mark.parametrize("rule", sorted(RULE_IDS))
def test_every_rule_is_a_declared_builtin_reason(rule):
    from trajforge.schemas import BUILTIN_REASONS
    from trajforge.verifiers.policy import PolicyFilter

    assert rule in BUILTIN_REASONS and rule in PolicyFilter.reasons


def test_filter_reads_the_domains_rules():
    from trajforge.generators.domains import get_domain
    from trajforge.verifiers.policy import PolicyFilter
    from trajforge.verifiers.protocol import FilterContext

    result = PolicyFilter().check(
        cancel(authed()).build(make_task()), FilterContext(get_domain("retail"))
    )
    assert not result.passed and result.reason == "policy.confirm_before_write"
