"""Quality gate v3 (issue 27): each new check with a violating and a corrected trajectory."""

from __future__ import annotations

import pytest
from trajectory_builders import Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.tasks import VOCABULARY
from trajforge.schemas import Trajectory
from trajforge.verifiers.outcome_told import check_outcome_told

VERBS = dict(VOCABULARY.action_verbs)


def as_rollout(convo: Convo) -> Trajectory:
    """The record as a rollout writes it: `StepRecord.turn` counts user turns, not messages."""
    user_turns, steps = 0, []
    by_call = {s.call.id: s for s in convo.steps}
    for message in convo.messages:
        user_turns += message.role == "user"
        for call in message.tool_calls:
            steps.append(by_call[call.id].model_copy(update={"turn": user_turns}))
    convo.steps = steps
    return convo.build(make_task())


def summary_closing(text: str) -> Convo:
    c = cancel_convo()
    c.messages = [m for m in c.messages if not (m.content or "").startswith("I have cancelled")]
    c.messages.insert(-1, c.messages[-1].model_copy(update={"role": "assistant", "content": text}))
    return c


def test_the_confirmation_prompt_before_a_write_does_not_tell_its_result():
    # The prompt "Shall I cancel it?" names the order and the action; only text after the
    # write's result may tell it. With `turn` read as a message index this row passed.
    bad = as_rollout(summary_closing("All done. Is there anything else I can help you with?"))
    result = check_outcome_told(bad, VERBS)
    assert not result.passed and result.reason == "outcome_not_told"
    assert check_outcome_told(as_rollout(cancel_convo()), VERBS).passed


def test_a_paraphrased_report_tells_the_write():
    for said in (
        "Order #W1234567 is now cancelled.",  # the new status
        "The cancellation of #W1234567 went through.",  # object + action in another form
        "You'll get $54.90 back: #W1234567 has been refunded.",  # a verb the domain backs
        "I went ahead with the cancellation as you asked.",  # the only cancel: no id needed
    ):
        assert told_by(said), said
    for summary in ("Everything has been taken care of.", "All set, your request is complete."):
        assert not told_by(summary), summary


def told_by(said: str) -> bool:
    return check_outcome_told(as_rollout(summary_closing(said)), VERBS).passed


def test_an_id_without_the_action_does_not_tell():
    assert not told_by("Order #W1234567 is on file. Anything else?")


def test_a_rewritten_closing_must_still_tell_each_write():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.reports import WriteOutcome
    from trajforge.generators.verbalise import acceptable

    cancel = WriteOutcome.of("cancel_pending_order", {"order_id": "#W1234567"}, ["cancelled"])
    draft = "I've cancelled order #W1234567. Is there anything else I can help you with?"
    closing = Utterance("assistant", draft, (), (draft,), (cancel,))
    summary = "Order #W1234567 is all set. Is there anything else I can help you with?"
    assert not acceptable(summary, closing)
    assert acceptable(summary, Utterance("assistant", draft, (), (draft,)))  # the old check
    assert acceptable("Order #W1234567 is cancelled now. Anything else I can help with?", closing)


# --- claim attribution (verifiers/claims.py, grounding.py) -------------------------------------

OTHER = {"order_id": "#W7654321", "status": "delivered", "total": 20.0, "user_id": "sara_doe_1234"}


def both_orders_cancel_one() -> Convo:
    """Reads #W7654321 too, then cancels #W1234567 (the canonical cancel)."""
    c = cancel_convo()
    c.messages.pop()  # the user's close; the closing is the last message now
    closing = c.messages.pop()
    c.call("get_order_details", order_id="#W7654321").result(OTHER)
    c.messages.append(closing)
    return c


def grounding(c: Convo) -> str | None:
    from trajforge.generators.domains.retail.rules import RETAIL_CLAIMS
    from trajforge.verifiers.grounding import check_grounded_claims

    return check_grounded_claims(c.build(make_task()), RETAIL_CLAIMS, VERBS).reason


def test_an_active_claim_is_bound_to_the_object_it_names():
    for said in (
        "I have also returned order #W7654321.",  # active, with "also"
        "I went ahead and cancelled #W7654321 as well.",  # after a conjunction
        "The order I cancelled is #W7654321.",  # the id attached to the action
        "Order #W7654321 was cancelled too.",  # passive
    ):
        assert grounding(both_orders_cancel_one().agent(said)) == "ungrounded_claim", said
    for said in (
        "I have cancelled order #W1234567 and checked #W7654321 for you.",
        "The order I cancelled is #W1234567.",
        "Order #W7654321 was delivered; I cancelled #W1234567.",
        "Shall I also cancel #W7654321?",  # a proposal, not a claim
        "I haven't returned #W7654321.",  # negated
        "Order #W7654321 was placed in May.",  # a generic verb in the passive describes it
    ):
        assert grounding(both_orders_cancel_one().agent(said)) is None, said


def test_claims_name_their_object_in_either_voice():
    from trajforge.verifiers.claims import action_claims

    pattern = r"#W\d{7}"
    found = action_claims("Your order #W1234567 has been cancelled.", VERBS, pattern)
    assert [(c.verb, c.objects) for c in found] == [("cancelled", ("#W1234567",))]
    found = action_claims("Order #W1 is pending, and I have cancelled #W7654321.", VERBS, pattern)
    assert [(c.verb, c.objects) for c in found] == [("cancelled", ("#W7654321",))]
    assert action_claims("You returned #W1234567 last week.", VERBS, pattern) == []
    assert action_claims("Once it is returned you get $5.", VERBS, pattern) == []


# --- values through one grammar (generators/value_grammar.py) ----------------------------------


def test_an_address_is_found_in_full_and_abbreviated_form():
    from trajforge.generators.value_grammar import address_keys, addresses_in, typed_values

    for full, short in (
        ("12 Orchard Lane", "12 Orchard Ln"),
        ("4410 Clearwater Bay Boulevard", "4410 Clearwater Bay Blvd."),
        ("7 Juniper Terrace", "7 Juniper Ter"),
        ("88 Falcon Court", "88 Falcon Ct"),
        ("3 Meadow Street", "3 Meadow St"),
        ("19 Copper Avenue", "19 Copper Ave"),
        ("5 Birch Place", "5 Birch Pl"),
        ("60 Lantern Drive", "60 Lantern Dr"),
        ("2 Quarry Road", "2 Quarry Rd"),
    ):
        assert address_keys(f"ship to {full}, please") == address_keys(f"ship to {short}"), full
        assert address_keys(f"ship to {full}") and address_keys(f"{short}, Fairhaven, WA 98225")
    assert addresses_in("moved to 77 Juniper Terrace, Apt 3")[0].unit == "3"
    assert address_keys("I have 2 items in the way") == frozenset()
    assert address_keys("order #W1234567 for $54.90") == frozenset()
    kinds = {v.kind for v in typed_values("#W1234567, $54.90, 2025-01-02, a@b.co, 5 Elm Ct")}
    assert kinds == {"id", "amount", "date", "email", "address"}


def test_a_spelled_out_address_without_zip_must_have_been_shown():
    shown = both_orders_cancel_one().user("Ship the next one to 12 Orchard Ln please.")
    assert grounding(shown.agent("Noted, 12 Orchard Lane it is.")) is None
    assert (
        grounding(both_orders_cancel_one().agent("I will ship it to 12 Orchard Lane."))
        == "ungrounded_claim"
    )


# --- user turns held to their scenario (user_fidelity.py) --------------------------------------

STATUS_WORDS = VOCABULARY.answer_words


def status_task(outputs: tuple[str, ...] = ("delivered",)):
    return make_task(
        task_types=("order_status",),
        known_info={"email": "sara@example.com", "order_id": "#W1234567"},
        expected_outputs=outputs,
        instructions="Ask what the status of order #W1234567 is.",
    )


def status_convo(opening: str, agent_says: str = "Order #W1234567 is delivered.") -> Convo:
    c = Convo().user(opening)
    c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
    c.call("get_order_details", order_id="#W1234567").result({**ORDER_D})
    return c.agent(agent_says).user("Thanks ###STOP###")


ORDER_D = {"order_id": "#W1234567", "status": "delivered", "user_id": "sara_doe_1234"}


def fidelity(c: Convo, task=None) -> str | None:
    from trajforge.verifiers.user_fidelity import check_user_fidelity

    return check_user_fidelity(c.build(task or status_task()), STATUS_WORDS).reason


def test_a_user_turn_that_states_the_looked_up_answer_in_words_is_refused():
    for opening in (
        "Hi, sara@example.com. My order #W1234567 is delivered, can you confirm?",
        "sara@example.com here; #W1234567 already shows as delivered.",
        "Order #W1234567 was cancelled last week, I'm sara@example.com.",  # an answer word
    ):
        assert fidelity(status_convo(opening)) == "user_states_answer", opening
    for opening in (
        "Hi, sara@example.com. Is order #W1234567 delivered yet?",  # asks
        "sara@example.com: what's the status of #W1234567?",
        "Hi, sara@example.com. It hasn't been delivered, what's going on with #W1234567?",
    ):
        assert fidelity(status_convo(opening)) is None, opening
    # told by the agent first: the user may repeat it
    c = status_convo("Hi, sara@example.com, status of #W1234567?")
    c.user("So it is delivered, great.")
    assert fidelity(c) is None


def test_facts_in_words_not_in_the_scenario_are_refused():
    for invented in (
        "I moved to 12 Orchard Lane last month.",  # an address without a zip, spelled out
        "I ordered it on March 3rd.",  # a date in words
        "I paid $812 for it.",  # money without cents
    ):
        opening = f"Hi, sara@example.com. {invented} Status of #W1234567?"
        assert fidelity(status_convo(opening)) == "user_hallucination", invented
    given = make_task(
        task_types=("order_status",),
        known_info={
            "email": "sara@example.com",
            "order_id": "#W1234567",
            "address": "12 Orchard Ln",
        },
        instructions="Ask about order #W1234567 (bought 2025-03-03 for $812).",
    )
    for said in ("I moved to 12 Orchard Lane.", "I ordered it on March 3rd.", "I paid $812."):
        opening = f"Hi, sara@example.com. {said} Status of #W1234567?"
        assert fidelity(status_convo(opening), given) is None, said


# --- role confusion by what the words do (generators/roles.py) ---------------------------------


def with_user_turn(text: str) -> Convo:
    c = cancel_convo()
    c.messages.insert(2, c.messages[1].model_copy(update={"content": text}))
    return c


def test_a_user_turn_speaking_as_the_agent_in_paraphrase_is_refused():
    from trajforge.verifiers.user_fidelity import check_user_fidelity

    for said in (
        "Let me pull up your account real quick.",
        "One moment while I check your order.",
        "I can see here that your order is on its way.",
        "Could you please confirm your email address?",
        "Sara Doe, the customer, wants to cancel her order.",  # narrator
        "The customer would like a refund for the order.",
        "Sara wants to cancel the order she placed.",  # narrated by name
        "Customer is upset and wants a refund.",
        "She wants to know where the package is.",
        "Happy to look into this for you!",
        "Sara Doe, customer,",  # the embedded model's narrator line, quickstart cache
        "I'm sorry for the confusion, I'm here to help you with your business.",
    ):
        result = check_user_fidelity(with_user_turn(said).build(make_task()))
        assert result.reason == "role_confusion", said
    for said in (
        "Let me check my email for the number.",
        "Can you check your records for my order?",
        "I'd like to cancel, I ordered it by mistake.",
        "Is there anything else I need to do?",
    ):
        assert check_user_fidelity(with_user_turn(said).build(make_task())).passed, said


# --- degenerate turns (generators/bare_turns.py, verifiers/degenerate.py) ----------------------


def test_a_turn_that_is_only_a_name_a_value_or_the_last_turn_again_is_refused():
    from trajforge.verifiers.degenerate import check_degenerate_turns

    def verdict(c: Convo) -> str | None:
        return check_degenerate_turns(c.build(make_task())).reason

    def answered(reply: str) -> Convo:
        return (
            Convo()
            .user("Hi, I want to cancel an order.")
            .agent("May I have your name?")
            .user(reply)
        )

    for bad in ("Sara Doe,", "Sara", "sara@example.com", "#W1234567.", "12 Orchard Lane"):
        assert verdict(answered(bad)) == "degenerate_turn", bad
    for good in ("I'm Sara Doe.", "Sure, it's Sara Doe.", "yes", "My email is sara@example.com."):
        assert verdict(answered(good)) is None, good
    echo = (
        answered("Sara Doe here.")
        .agent("Could you share the order id?")
        .user("Could you share the order id?")
    )
    assert verdict(echo) == "degenerate_turn"
    assert verdict(cancel_convo()) is None
    bare_agent = cancel_convo().agent("#W1234567")
    assert verdict(bare_agent) == "degenerate_turn"


def test_the_verbaliser_keeps_the_draft_over_a_bare_rewrite():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.verbalise import acceptable

    draft = "Right, I'm Dario Marlowe."
    said = Utterance("user", draft, (), (draft,))
    assert not acceptable("Dario Marlowe,", said, names=("Dario Marlowe",))
    assert acceptable("Sure, I'm Dario Marlowe.", said, names=("Dario Marlowe",))


def test_the_readability_measure_counts_name_only_turns_as_one_shape():
    from trajforge.verifiers.readability import measure

    names = ("Dario Marlowe", "Ilya Belmonte", "Sara Doe", "Ann Lee")
    replies = ("Hello.", "Good day.", "Hey!", "Greetings.")
    rows = [
        [{"role": "user", "content": f"{n},"}, {"role": "assistant", "content": r}]
        for n, r in zip(names, replies, strict=True)
    ]
    report = measure(rows)
    assert report.top_sentence == "<name>," and report.top_sentence_rows == 1.0


@pytest.mark.slow
def test_role_by_meaning_refuses_agent_speak_the_patterns_do_not_name():
    from trajforge.generators.domains import get_domain
    from trajforge.verifiers.filters import FilterSpec
    from trajforge.verifiers.protocol import FilterContext

    flt = FilterSpec(name="role_by_meaning").build()
    context = FilterContext(domain=get_domain("retail"))
    bad = with_user_turn("Let me pull up your account real quick.").build(make_task())
    assert flt.check(bad, context).reason == "role_confusion"
    assert flt.check(cancel_convo().build(make_task()), context).passed


def test_a_claim_about_a_described_object_is_bound_to_the_order_it_describes():
    from trajectory_builders import ORDER

    def convo(said: str) -> Convo:
        c = Convo().user("Hi, sara@example.com. Cancel #W1234567 please; also #W7654321?")
        c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
        mine = {**ORDER, "items": [{"name": "Coffee Maker", "price": 54.9}]}
        c.call("get_order_details", order_id="#W1234567").result(mine)
        c.call("get_order_details", order_id="#W7654321").result(
            {**OTHER, "items": [{"name": "Desk Lamp", "price": 20.0}]}
        )
        c.agent("Shall I cancel order #W1234567 (the Coffee Maker)?").user("yes")
        c.call("cancel_pending_order", order_id="#W1234567", reason="ordered by mistake").result(
            {**mine, "status": "cancelled"},
            diff=(("orders.#W1234567.status", "pending", "cancelled"),),
        )
        return c.agent(said)

    assert grounding(convo("I have cancelled the Coffee Maker order.")) is None
    assert grounding(convo("I have also cancelled the Desk Lamp order.")) == "ungrounded_claim"


def test_the_verbaliser_keeps_the_draft_over_a_narrated_rewrite():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.verbalise import acceptable

    draft = "Hi, I want to cancel an order I placed by mistake."
    said = Utterance("user", draft, (), (draft,))
    names = ("Dario Marlowe",)
    assert not acceptable("Dario wants to cancel an order placed by mistake.", said, names=names)
    assert acceptable("Hello, I want to cancel an order I placed by mistake.", said, names=names)
