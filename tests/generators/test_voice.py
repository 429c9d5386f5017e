"""The user's voice (traits shape the text) and the agent's grounded phrasings (issue 10 item 6)."""

import json

import pytest

from trajforge.generators.agent_voice import (
    answer,
    ask_for,
    closing,
    confirm_prompt,
    write_report,
)
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import apply_patches
from trajforge.generators.user import asks_confirmation, looks_like_agent
from trajforge.generators.voice import UserVoice, label_parts, speaking_rules
from trajforge.verifiers.dialogue import is_affirmation, is_refusal
from trajforge.verifiers.readability import _JSON

BASE = sample_persona(3)
REASON = "You want to cancel an order, then check on an order."


def voice(seed: int | str = "t", **traits: str) -> UserVoice:
    return UserVoice(BASE.traits.model_copy(update=traits), BASE.background, seed)


def test_verbosity_and_formality_shape_the_opening():
    terse = voice(verbosity="very_low", formality="very_low", patience="high", time_pressure="low")
    chatty = voice(verbosity="very_high", formality="very_high")
    short, long = terse.opening(REASON), chatty.opening(REASON)
    assert "cancel an order, then check on an order" in short
    assert len(long) > len(short) + 30 and "I'm a" in long  # a word about themselves
    casual = {voice(s, formality="very_low").opening(REASON).split(",")[0] for s in range(40)}
    formal = {voice(s, formality="very_high").opening(REASON).split(",")[0] for s in range(40)}
    assert casual.isdisjoint(formal - {"Hello", "Hi there", "Good morning"})


def test_hesitant_and_distrustful_users_confirm_their_way_and_still_say_yes():
    hesitant = [voice(s, decisiveness="very_low").affirm(5) for s in range(30)]
    decisive = [
        voice(s, decisiveness="very_high", trust_in_agent="high").affirm(5) for s in range(30)
    ]
    assert all(len(h.split(",")) >= 3 for h in hesitant)  # a pause before the yes
    assert sum(len(h) for h in hesitant) > sum(len(d) for d in decisive)
    wary = voice(trust_in_agent="very_low").affirm(1)
    assert "exactly" in wary
    for text in hesitant + decisive + [wary]:
        assert is_affirmation(text) and not is_refusal(text) and not looks_like_agent(text)


def test_low_recall_hedges_values_but_keeps_them_verbatim():
    vague = voice(recall_accuracy="very_low").give("zip code", "12345", 2)
    sure = voice(recall_accuracy="very_high", verbosity="low").give("zip code", "12345", 2)
    assert "12345" in vague and "12345" in sure and len(vague) > len(sure)
    name = voice(recall_accuracy="very_low").give("name", "Ann Lee", 2)
    assert "Ann Lee" in name and "think" not in name and "remember" not in name
    described = voice().give(
        "order to cancel (the one with the Desk Lamp)", "the one with the Desk Lamp", 3
    )
    assert "the order i want to cancel is the one with the desk lamp" in described.lower()


@pytest.mark.parametrize("intent", ["opening", "affirm", "close", "give"])
def test_several_phrasings_per_intent_chosen_by_seed(intent):
    said = {
        {
            "opening": lambda v: v.opening(REASON),
            "affirm": lambda v: v.affirm(1),
            "close": lambda v: v.close(REASON),
            "give": lambda v: v.give("email", "a@b.com", 1),
        }[intent](voice(seed))
        for seed in range(60)
    }
    assert len(said) >= 4
    assert voice(7).affirm(1) == voice(7).affirm(1)  # deterministic per seed


def test_speaking_rules_follow_the_traits():
    slow = speaking_rules(BASE.traits.model_copy(update={"decisiveness": "very_low"}))
    sure = speaking_rules(BASE.traits.model_copy(update={"decisiveness": "very_high"}))
    assert "hesitate" in slow and "hesitate" not in sure
    vague = speaking_rules(BASE.traits.model_copy(update={"recall_accuracy": "low"}))
    assert "vaguely" in vague


def test_labels_read_as_questions_and_statements():
    assert label_parts("order to cancel (#W1)") == ("order", "cancel")
    assert label_parts("items to return from #W1") == ("items", "return from #W1")
    assert label_parts("reason for cancelling #W1") == ("reason for cancelling #W1", None)
    asks = {ask_for("order to cancel (#W1)", s) for s in range(30)}
    assert all("order" in a and "cancel" in a and a.endswith("?") for a in asks) and len(asks) > 4


def test_confirmation_states_the_action_and_its_details_in_words():
    args = {"order_id": "#W1", "address1": "12 Elm St", "address2": "", "city": "Riverton",
            "state_code": "CA", "zip": "12345", "country": "USA"}  # fmt: skip
    for seed in range(20):
        prompt = confirm_prompt("modify_pending_order_address", args, seed)
        assert asks_confirmation(prompt) and "?" in prompt
        assert "#W1" in prompt and "12 Elm St, Riverton, CA 12345, USA" in prompt
        assert not _JSON.search(prompt) and "address2" not in prompt


def test_reports_and_answers_are_sentences_built_from_tool_results():
    order = {"order_id": "#W1", "status": "cancelled", "refund_amount": 54.9,
             "payment_history": [{"amount": 54.9, "transaction_type": "payment"}]}  # fmt: skip
    report = write_report("cancel_pending_order", {"order_id": "#W1"}, json.dumps(order), 1)
    assert "cancelled" in report and "#W1" in report and not _JSON.search(report)
    said = answer("54.90", [({"order_id": "#W1"}, json.dumps(order))], 1)
    assert "refund amount" in said and "order #W1" in said and "54.90" in said
    product = {"name": "Tea Kettle", "variants": {"1": {"available": True, "price": 20.5,
               "options": {"capacity": "1L"}}}}  # fmt: skip
    priced = answer("20.50", [({"product_id": "9"}, json.dumps(product))], 2)
    assert "Tea Kettle (capacity 1L)" in priced and "price" in priced and "stock" in priced
    assert "42" in answer("42", [], 3)  # nothing to cite: still a sentence with the value
    final = closing([report, said], 4, name="Ann Lee")
    assert final.startswith(report) and "Ann" in final and "anything else" in final


@pytest.mark.parametrize("domain_name", ["retail", "toy"])
def test_the_user_in_the_world_is_the_persona(domain_name):
    domain = get_domain(domain_name)
    for seed in range(6):
        persona = sample_persona(seed)
        task = domain.synthesize_task(persona, seed)
        assert task.scenario.known_info["name"] == persona.name
        assert task.initial_state.patches  # the world user renamed, not the persona
        assert verify_task(domain, task).verification.passed
        fresh = domain.initial_state(task.initial_state.model_copy(update={"patches": ()}))
        assert apply_patches(fresh, task.initial_state.patches) == domain.initial_state(
            task.initial_state
        )


def test_a_rewrite_that_gives_another_name_is_refused():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.verbalise import acceptable

    said = Utterance("user", "My name is Ann Lee.", ("Ann Lee",), ("You are Ann Lee.", "Ann Lee"))
    assert acceptable("Hello, my name is Ann Lee.", said)
    assert not acceptable("Hi, I'm John Smith, my name is Ann Lee.", said)


def test_every_yes_says_yes():
    """The blueprint requires "yes" in a confirmation's rewrite, so every draft must say it."""
    from trajforge.generators.values import mentions_value

    for seed in range(40):
        for formality in ("very_low", "medium", "very_high"):
            for decisiveness in ("very_low", "very_high"):
                said = voice(seed, formality=formality, decisiveness=decisiveness).affirm(seed)
                assert mentions_value(said, "yes"), said


def test_a_rewrite_of_a_confirmation_must_still_ask():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.verbalise import acceptable

    ask = Utterance(
        "assistant", "Should I cancel the pending order (order #W1)?", ("#W1",), ("#W1",)
    )
    assert acceptable("Shall I go ahead and cancel the pending order #W1?", ask)
    assert not acceptable("I will cancel the pending order #W1 now.", ask)
