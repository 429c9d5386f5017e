"""Grounded claims by object, outcome told, loops by normalised arguments, role confusion on the
record: each with a violating and a corrected trajectory."""

from __future__ import annotations

from trajectory_builders import ORDER, Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.rules import RETAIL_CLAIMS
from trajforge.generators.domains.retail.tasks import VOCABULARY
from trajforge.verifiers.grounding import check_grounded_claims
from trajforge.verifiers.loops import check_loops
from trajforge.verifiers.outcome_told import check_outcome_told
from trajforge.verifiers.user_fidelity import check_user_fidelity

VERBS = dict(VOCABULARY.action_verbs)
OTHER = {**ORDER, "order_id": "#W7654321", "status": "delivered"}


def looked_up() -> Convo:
    c = Convo().user("Hi, sara@example.com. What about order #W1234567 and #W7654321?")
    c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
    c.call("get_order_details", order_id="#W1234567").result(ORDER)
    return c.call("get_order_details", order_id="#W7654321").result(OTHER)


def grounded(convo: Convo) -> str | None:
    return check_grounded_claims(convo.build(make_task()), RETAIL_CLAIMS, VERBS).reason


def test_status_without_digits_is_checked_against_that_object():
    assert grounded(looked_up().agent("Order #W1234567 is pending.")) is None
    assert grounded(looked_up().agent("Order #W1234567 is delivered.")) == "ungrounded_claim"


def test_a_seen_value_on_the_wrong_object_is_refused():
    assert grounded(looked_up().agent("Order #W7654321 is delivered.")) is None
    assert grounded(looked_up().agent("Order #W7654321 is pending.")) == "ungrounded_claim"


def test_sentence_without_object_means_the_one_worked_on():
    assert grounded(looked_up().agent("It is delivered.")) is None
    assert grounded(looked_up().agent("It is cancelled.")) == "ungrounded_claim"


def test_passive_narration_needs_a_write_on_that_object():
    said = "Your order #W1234567 has been cancelled."
    assert grounded(looked_up().agent(said)) == "ungrounded_claim"
    assert grounded(cancel_convo().agent(said)) is None


def test_street_address_without_zip_must_have_been_shown():
    c = looked_up().user("Ship it to 12 Orchard Rd please.")
    assert grounded(c.agent("I will ship it to 12 Orchard Rd.")) is None
    assert grounded(looked_up().agent("I will ship it to 12 Orchard Rd.")) == "ungrounded_claim"


def test_outcome_of_each_write_is_told():
    good = cancel_convo().build(make_task())
    assert check_outcome_told(good).passed
    c = cancel_convo(authenticate=True)
    c.messages = [m for m in c.messages if not (m.content or "").startswith("I have cancelled")]
    c.agent("Is there anything else I can help you with?")
    result = check_outcome_told(c.build(make_task()))
    assert not result.passed and result.reason == "outcome_not_told"


def test_a_prompt_before_the_write_does_not_report_it():
    """Steps count user turns, not messages (turn 1 here): only agent text after the message
    that made the write reports it, not the confirmation prompt naming the order before."""
    c = cancel_convo()
    c.messages = [m for m in c.messages if not (m.content or "").startswith("I have cancelled")]
    c.agent("Is there anything else I can help you with?")
    built = c.build(make_task())
    steps = tuple(s.model_copy(update={"turn": 1}) for s in built.steps)
    result = check_outcome_told(built.model_copy(update={"steps": steps}))
    assert not result.passed and result.reason == "outcome_not_told"


def test_retries_with_near_identical_arguments_are_a_loop():
    c = Convo().user("status of #W1234567?")
    for order_id in ("#W1234567", " #w1234567 ", "W1234567"):
        c.call("get_order_details", order_id=order_id).result(ORDER)
    assert check_loops(c.build(), max_repeats=3).reason == "loop_or_repeat"
    once = Convo().user("status?").call("get_order_details", order_id="#W1234567").result(ORDER)
    assert check_loops(once.build(), max_repeats=3).passed


def test_two_cycles_of_reads_are_a_loop():
    c = Convo().user("both orders?")
    for order_id in ("#W1", "#W2", "#W1", "#W2"):
        c.call("get_order_details", order_id=order_id).result(ORDER)
    result = check_loops(c.build(), max_repeats=3)
    assert not result.passed and "<->" in result.detail
    c = Convo().user("both orders?")
    for order_id in ("#W1", "#W2"):
        c.call("get_order_details", order_id=order_id).result(ORDER)
    assert check_loops(c.build(), max_repeats=3).passed
    c = Convo().user("first order?")  # the user names each order again: not a loop
    for order_id in ("#W1", "#W2", "#W1", "#W2"):
        c.call("get_order_details", order_id=order_id).result(ORDER).user("and the next?")
    assert check_loops(c.build(), max_repeats=3).passed


def test_user_speaking_as_the_agent_is_refused_on_the_record():
    bad = cancel_convo()
    bad.messages[-1] = bad.messages[-1].model_copy(
        update={"content": "Is there anything else I can help you with?"}
    )
    result = check_user_fidelity(bad.build(make_task()))
    assert not result.passed and result.reason == "role_confusion"
    assert check_user_fidelity(cancel_convo().build(make_task())).passed


def test_semantic_duplicates_must_be_about_the_same_content():
    from trajforge.verifiers.content_key import content_key, same_content

    sara = cancel_convo().build(make_task())
    paraphrased = Convo().user("Hello, Sara Doe here (sara@example.com); cancel #W1234567 please.")
    for m in cancel_convo().messages[2:]:
        paraphrased.messages.append(m)
    paraphrased.steps = cancel_convo().steps
    assert same_content(content_key(sara), content_key(paraphrased.build(make_task())))
    other = Convo().user("Hi, I'm Omar Ali, omar@example.com. Cancel order #W7654321.")
    other.call("find_user_id_by_email", email="omar@example.com").result("omar_ali_4321")
    other.call("get_order_details", order_id="#W7654321").result({**OTHER, "total": 12.5})
    other.agent("Order #W7654321 totals $12.50. Shall I cancel it? (yes/no)").user("yes")
    assert not same_content(content_key(sara), content_key(other.build(make_task())))
